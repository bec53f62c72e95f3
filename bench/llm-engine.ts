// `npm run bench -- llm-engine [--new-tokens N] [--streams N] [--repeats N]`: decode speed of
// Kiln's LLM engine (src/llm) on the committed tiny Llama (fixtures/llm/tiny-llama: hidden 128,
// 4 layers, GQA 8/2, vocab 1024, ~1 M parameters), one stream and N streams (default 16)
// decoded together, next to a PyTorch eager greedy loop with a KV cache on the same model,
// prompt and thread count (bench/peers/torch_llama_decode.py; Debian's python3-torch), and
// against llama.cpp's figures for a model of this shape on this machine, from the issue.
//
// Only decode steps are timed: from each side's first generated token to its last, greedy,
// no stop. Our engine runs on one thread, and for N streams also on two threads (a model
// replica each: parallel-engine.ts); PyTorch is given one thread.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

import { createModel } from '../src/llm/engine/create-model.ts';
import { generate, type GenerationEvent } from '../src/llm/engine/generation.ts';
import { ParallelEngine } from '../src/llm/engine/parallel-engine.ts';
import { loadLlamaFolder } from '../src/llm/loader/load-llama-folder.ts';
import type { LlamaModel } from '../src/llm/model/llama-model.ts';
import { goal, table } from './_report.ts';

const root = new URL('../', import.meta.url).pathname;
const modelDir = `${root}fixtures/llm/tiny-llama`;
const python = '/usr/bin/python3';
/** llama.cpp on this machine, a 1 M-parameter Llama of this shape (issue 5). */
const llamaCpp = { singleTokensPerS: 7400, batch16TokensPerS: 9500 };

function option(args: readonly string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  const value = i >= 0 ? Number(args[i + 1]) : fallback;
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

/** Decode tokens per second from a run's events: from the last stream's first token on. */
class DecodeClock {
  private readonly firstToken = new Map<number, number>();
  private lastMs = 0;
  private decoded = 0;

  see(event: GenerationEvent): void {
    if (event.kind !== 'token') return;
    const now = performance.now();
    if (!this.firstToken.has(event.request)) this.firstToken.set(event.request, now);
    else this.decoded += 1;
    this.lastMs = now;
  }

  /** Decoding starts once every stream has its first token (prefills are not timed). */
  tokensPerSecond(): number {
    const start = Math.max(...this.firstToken.values());
    return this.decoded / ((this.lastMs - start) / 1000);
  }
}

function greedyRequests(prompt: readonly number[], streams: number, newTokens: number) {
  return Array.from({ length: streams }, () => ({
    promptTokens: prompt,
    maxTokens: newTokens,
    sampling: { temperature: 0 },
  }));
}

/** Decode tokens per second of `streams` copies of `prompt`, greedy, `newTokens` each. */
function decodeRate(
  model: LlamaModel,
  prompt: readonly number[],
  streams: number,
  newTokens: number,
): number {
  const clock = new DecodeClock();
  for (const event of generate(model, model.pool!, greedyRequests(prompt, streams, newTokens)))
    clock.see(event);
  return clock.tokensPerSecond();
}

interface TorchFigures {
  readonly single_tokens_per_s: number;
  readonly batch_tokens_per_s: number;
  readonly torch: string;
}

/** The PyTorch peer's figures, or null (and why, printed) when it cannot run. */
function runTorchPeer(
  prompt: readonly number[],
  newTokens: number,
  streams: number,
): TorchFigures | null {
  const peer = `${root}bench/peers/torch_llama_decode.py`;
  if (!existsSync(python)) {
    console.log(`PyTorch peer skipped: ${python} not found (apt-get install python3-torch)`);
    return null;
  }
  const out = spawnSync(
    python,
    [
      peer,
      '--model',
      modelDir,
      '--prompt-ids',
      JSON.stringify(prompt),
      '--new-tokens',
      String(newTokens),
      '--streams',
      String(streams),
      '--threads',
      '1',
    ],
    { encoding: 'utf8' },
  );
  if (out.status !== 0) {
    console.log(`PyTorch peer failed: ${(out.stderr || out.stdout).trim().split('\n').at(-1)}`);
    return null;
  }
  return JSON.parse(out.stdout.trim().split('\n').at(-1)!) as TorchFigures;
}

/** As decodeRate, with the streams split over the engine's threads (a model replica each). */
async function parallelDecodeRate(
  engine: ParallelEngine,
  prompt: readonly number[],
  streams: number,
  newTokens: number,
): Promise<number> {
  const clock = new DecodeClock();
  for await (const event of engine.generate(greedyRequests(prompt, streams, newTokens)))
    clock.see(event);
  return clock.tokensPerSecond();
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export async function run(args: readonly string[]): Promise<void> {
  const newTokens = option(args, 'new-tokens', 256);
  const streams = option(args, 'streams', 16);
  const repeats = option(args, 'repeats', 5);
  const loaded = await loadLlamaFolder(modelDir);
  if (!loaded.ok) throw new Error(loaded.message);
  const created = createModel(loaded.config, loaded.weights, { kvCacheBytes: 64 << 20 });
  if (!created.ok) throw new Error(created.message);
  const model = created.model;
  const reference = JSON.parse(await readFile(`${modelDir}/reference.json`, 'utf8')) as {
    prompts: { name: string; ids: number[] }[];
    parameterCount: number;
  };
  const prompt = reference.prompts.find((p) => p.name === 'license-sentence')?.ids ?? [1];
  console.log(
    `model fixtures/llm/tiny-llama (${reference.parameterCount.toLocaleString('en-US')} parameters), ` +
      `prompt ${prompt.length} tokens, ${newTokens} new tokens a stream, greedy, one thread`,
  );

  decodeRate(model, prompt, 1, 32); // warm-up: compile the kernels' callers
  decodeRate(model, prompt, streams, 32);
  const single = median(
    Array.from({ length: repeats }, () => decodeRate(model, prompt, 1, newTokens)),
  );
  const batch = median(
    Array.from({ length: repeats }, () => decodeRate(model, prompt, streams, newTokens)),
  );

  // The same streams on two threads, a model replica each (llama.cpp's batch figure is on
  // two threads too).
  const started = await ParallelEngine.start(modelDir, 2, { kvCacheBytes: 64 << 20 });
  if (!started.ok) throw new Error(started.message);
  let parallel: number;
  try {
    await parallelDecodeRate(started.engine, prompt, streams, 32);
    const rates: number[] = [];
    for (let i = 0; i < repeats; i++)
      rates.push(await parallelDecodeRate(started.engine, prompt, streams, newTokens));
    parallel = median(rates);
  } finally {
    await started.engine.close();
  }

  const torch = runTorchPeer(prompt, newTokens, streams);

  const rows: (string | number)[][] = [
    ['kiln (src/llm), one thread', single, batch, batch / single],
    ['kiln, two threads (a model replica each)', Number.NaN, parallel, parallel / single],
    [
      `pytorch ${torch?.torch ?? '(missing)'} eager, KV cache`,
      torch?.single_tokens_per_s ?? Number.NaN,
      torch?.batch_tokens_per_s ?? Number.NaN,
      torch === null ? Number.NaN : torch.batch_tokens_per_s / torch.single_tokens_per_s,
    ],
    [
      'llama.cpp (issue 5, this machine; batch on 2 threads)',
      llamaCpp.singleTokensPerS,
      llamaCpp.batch16TokensPerS,
      llamaCpp.batch16TokensPerS / llamaCpp.singleTokensPerS,
    ],
  ];
  console.log(
    `\n${table(['engine', '1 stream tok/s', `${streams} streams tok/s`, 'batch ÷ single'], rows)}`,
  );
  const vsTorch = torch === null ? Number.NaN : single / torch.single_tokens_per_s;
  console.log(
    `\nkiln ÷ pytorch: 1 stream ${vsTorch.toFixed(2)}×, ${streams} streams ${
      torch === null ? 'NaN' : (batch / torch.batch_tokens_per_s).toFixed(2)
    }×; kiln ÷ llama.cpp: 1 stream ${(single / llamaCpp.singleTokensPerS).toFixed(2)}×, ${streams} streams ${(batch / llamaCpp.batch16TokensPerS).toFixed(2)}× on one thread, ${(parallel / llamaCpp.batch16TokensPerS).toFixed(2)}× on two\n`,
  );
  console.log(
    "goals: 1 stream on one thread (as llama.cpp's 7,400); 16 streams on two threads (as llama.cpp's 9,500)",
  );
  goal('llm-engine', 'single_stream_vs_pytorch', vsTorch, '>=', 1);
  goal('llm-engine', 'batch16_vs_own_single', parallel / single, '>=', 6);
  goal('llm-engine', 'single_stream_vs_llamacpp', single / llamaCpp.singleTokensPerS, '>=', 0.5);
  goal('llm-engine', 'batch16_vs_llamacpp', parallel / llamaCpp.batch16TokensPerS, '>=', 1);
}
