// The llama.cpp peer of `npm run bench -- llm-engine`: llama.cpp's own native tools, built on
// this machine (llamacpp-build.sh: node-llama-cpp 3.21.1's llama.cpp source, CPU only, cached
// outside the repository), run on our GGUF conversion of the same model:
//
//   llama-bench          one stream: `-p 0 -n N` (text generation only), tokens/s
//   llama-batched-bench  S streams decoding together: `-npl S -npp P -ntg N`, aggregate S_TG
//   llamacpp-greedy      greedy token ids (bench/peers/llamacpp_greedy.cpp), for the check
//                        that llama.cpp and our engine produce the same tokens
//
// The native tools, not the node-llama-cpp binding: the binding adds per-token overhead that a
// 1 M-parameter model makes dominant (issue 16: 757 tok/s through it, 1,340 from llama-bench).

import { spawnSync } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';

const here = new URL('./', import.meta.url).pathname;

export const llamaCppCache = join(
  process.env['KILN_BENCH_CACHE'] ?? join(homedir(), '.cache', 'kiln-bench'),
  'llama.cpp',
);

export type LlamaCppBuild =
  { readonly ok: true; readonly bin: string } | { readonly ok: false; readonly why: string };

/**
 * The folder of llama.cpp's binaries, building them on the first run (npm install of
 * node-llama-cpp into the cache, then ~10+ minutes of compiling on 2 cores; progress on
 * stderr). `build: false` only looks for a finished build.
 */
export function ensureLlamaCpp(build: boolean): LlamaCppBuild {
  const script = join(here, 'llamacpp-build.sh');
  if (!build) {
    const probe = spawnSync('sh', [
      '-c',
      `test -f "${llamaCppCache}/.built-3.21.1" && test -x "${llamaCppCache}/build/bin/llamacpp-greedy"`,
    ]);
    return probe.status === 0
      ? { ok: true, bin: join(llamaCppCache, 'build', 'bin') }
      : {
          ok: false,
          why: `no finished build in ${llamaCppCache} (run without --no-llamacpp-build)`,
        };
  }
  const out = spawnSync('sh', [script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (out.status !== 0) {
    return {
      ok: false,
      why: `${script} failed (exit ${out.status ?? out.signal}); see its output above`,
    };
  }
  return { ok: true, bin: out.stdout.trim().split('\n').at(-1)! };
}

function run(
  bin: string,
  tool: string,
  args: string[],
): { ok: true; stdout: string } | { ok: false; why: string } {
  const out = spawnSync(join(bin, tool), args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (out.status !== 0) {
    const tail = (out.stderr || out.stdout || String(out.error ?? ''))
      .trim()
      .split('\n')
      .slice(-3)
      .join(' | ');
    return { ok: false, why: `${tool} exit ${out.status ?? out.signal}: ${tail}` };
  }
  return { ok: true, stdout: out.stdout + out.stderr };
}

export type Figure =
  { readonly ok: true; readonly tokensPerS: number } | { readonly ok: false; readonly why: string };

/** llama-bench text generation, one stream: mean tokens/s over `repeats` runs of `newTokens`. */
export function llamaBenchSingle(
  bin: string,
  gguf: string,
  threads: number,
  newTokens: number,
  repeats: number,
): Figure {
  const out = run(bin, 'llama-bench', [
    '-m',
    gguf,
    '-p',
    '0',
    '-n',
    String(newTokens),
    '-t',
    String(threads),
    '-r',
    String(repeats),
    '-o',
    'json',
  ]);
  if (!out.ok) return out;
  const start = out.stdout.indexOf('[');
  try {
    const rows = JSON.parse(out.stdout.slice(start, out.stdout.lastIndexOf(']') + 1)) as {
      avg_ts: number;
      n_gen: number;
    }[];
    const row = rows.find((r) => r.n_gen === newTokens);
    return row === undefined
      ? { ok: false, why: 'llama-bench printed no tg row' }
      : { ok: true, tokensPerS: row.avg_ts };
  } catch (error) {
    return { ok: false, why: `llama-bench output unreadable: ${(error as Error).message}` };
  }
}

/** llama-batched-bench: `streams` sequences of `promptTokens` + `newTokens`; aggregate decode tokens/s. */
export function llamaBatchedBench(
  bin: string,
  gguf: string,
  threads: number,
  streams: number,
  promptTokens: number,
  newTokens: number,
): Figure {
  const context = streams * (promptTokens + newTokens) + 64;
  const out = run(bin, 'llama-batched-bench', [
    '-m',
    gguf,
    '-c',
    String(context),
    '-b',
    '2048',
    '-ub',
    '512',
    '-npp',
    String(promptTokens),
    '-ntg',
    String(newTokens),
    '-npl',
    String(streams),
    '-t',
    String(threads),
    '-tb',
    String(threads),
    '--output-format',
    'jsonl',
  ]);
  if (!out.ok) return out;
  const line = out.stdout.split('\n').find((l) => l.startsWith('{') && l.includes('"speed_tg"'));
  if (line === undefined) return { ok: false, why: 'llama-batched-bench printed no jsonl row' };
  return { ok: true, tokensPerS: (JSON.parse(line) as { speed_tg: number }).speed_tg };
}

export type Greedy =
  | { readonly ok: true; readonly promptIds: number[]; readonly greedyIds: number[] }
  | { readonly ok: false; readonly why: string };

/** llama.cpp's tokenization of `text` and its greedy ids after `promptIds`. */
export function llamaCppGreedy(
  bin: string,
  gguf: string,
  text: string,
  promptIds: readonly number[],
  newTokens: number,
): Greedy {
  const out = run(bin, 'llamacpp-greedy', [gguf, String(newTokens), text, promptIds.join(',')]);
  if (!out.ok) return out;
  const line = out.stdout.split('\n').find((l) => l.startsWith('{"prompt_ids"'));
  if (line === undefined) return { ok: false, why: 'llamacpp-greedy printed no result' };
  const parsed = JSON.parse(line) as { prompt_ids: number[]; greedy_ids: number[] };
  return { ok: true, promptIds: parsed.prompt_ids, greedyIds: parsed.greedy_ids };
}
