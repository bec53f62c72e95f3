// `npm run bench -- llm-engine [--new-tokens N] [--streams N] [--repeats N]
//   [--large-new-tokens N] [--large-repeats N] [--sizes tiny,100m] [--no-llamacpp-build]`
//
// Decode speed of Kiln's LLM engine (src/llm) next to its peers, measured side by side in the
// same run, on two models:
//   tiny  the committed fixture (fixtures/llm/tiny-llama: hidden 128, 4 layers, GQA 8/2,
//         vocab 1024, ~1 M parameters), where per-token overhead decides;
//   100m  a Llama-shaped model of ~100 M parameters with random weights (bench/_llm-random-
//         model.ts), generated on the first run into the bench cache, where memory bandwidth
//         and SIMD width decide.
// Peers:
//   llama.cpp  its own native tools, llama-bench (one stream) and llama-batched-bench (N
//              streams), built on this machine from node-llama-cpp 3.21.1's llama.cpp source
//              into ~/.cache/kiln-bench/llama.cpp (bench/peers/llamacpp-build.sh; the first run
//              installs the package there and compiles, ~10+ minutes on 2 cores), run on our
//              own GGUF F32 conversion of each model (src/llm/gguf). Before any timing, its
//              greedy tokens (and its tokenization of the prompt) are checked equal to ours.
//   PyTorch    an eager greedy loop with a KV cache (bench/peers/torch_llama_decode.py;
//              Debian's python3-torch), one thread.
//
// Only decode steps are timed: from each side's first generated token to its last, greedy,
// no stop. Our engine decodes one stream on one thread (a stream cannot be split across
// threads), and N streams on one thread and on two (a model replica each:
// parallel-engine.ts). llama.cpp runs on one thread and on as many as the machine has cores.
//
// Goals (the smaller of the two models' ratios is each goal's value; each side at its best
// thread count, because on a shared machine either side's 2-thread figure can collapse):
//   llm-engine.single_stream_vs_llamacpp  ≥ 1.0   our 1 stream ÷ llama-bench's
//   llm-engine.batch16_vs_llamacpp        ≥ 1.5   our 16 streams ÷ llama-batched-bench's
//   llm-engine.single_stream_vs_pytorch   ≥ 1.0   on the fixture, as before
// batch16_vs_own_single is printed as a figure (a retired goal: bounded by 128-bit wasm SIMD).
// When llama.cpp cannot be built or run, its goal lines read met=no, valued from the model
// sizes that have a figure (NaN when none), and a line above them says why.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

import { createModel } from '../src/llm/engine/create-model.ts';
import { generate, type GenerationEvent } from '../src/llm/engine/generation.ts';
import { ParallelEngine } from '../src/llm/engine/parallel-engine.ts';
import { convertLlamaFolderToGguf } from '../src/llm/gguf/llama-gguf.ts';
import { loadLlamaFolder } from '../src/llm/loader/load-llama-folder.ts';
import type { LlamaModel } from '../src/llm/model/llama-model.ts';
import { goal, table } from './_report.ts';
import {
  randomModelConfig,
  randomModelParameterCount,
  writeRandomLlamaFolder,
} from './_llm-random-model.ts';
import {
  ensureLlamaCpp,
  llamaBatchedBench,
  llamaBenchSingle,
  llamaCppCache,
  llamaCppGreedy,
  type Figure,
} from './peers/llamacpp.ts';

const root = new URL('../', import.meta.url).pathname;
const fixtureDir = `${root}fixtures/llm/tiny-llama`;
const python = '/usr/bin/python3';
const benchCache = process.env['KILN_BENCH_CACHE'] ?? join(homedir(), '.cache', 'kiln-bench');
/** Bumped when _llm-random-model.ts changes the model it writes. */
const randomModelVersion = 1;

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

function greedyIds(model: LlamaModel, prompt: readonly number[], newTokens: number): number[] {
  const ids: number[] = [];
  for (const event of generate(model, model.pool!, greedyRequests(prompt, 1, newTokens)))
    if (event.kind === 'token') ids.push(event.token);
  return ids;
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

interface TorchFigures {
  readonly single_tokens_per_s: number;
  readonly batch_tokens_per_s: number;
  readonly torch: string;
}

/** The PyTorch peer's figures, or null (and why, printed) when it cannot run. */
function runTorchPeer(
  modelDir: string,
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

interface SizeSpec {
  readonly key: 'tiny' | '100m';
  readonly label: string;
  readonly dir: string;
  readonly newTokens: number;
  readonly repeats: number;
  readonly kvCacheBytes: number;
}

interface SizeFigures {
  readonly spec: SizeSpec;
  readonly single: number;
  readonly batch: number;
  readonly parallel: number;
  readonly torch: TorchFigures | null;
  /** llama-bench one stream, and llama-batched-bench, at 1 thread and at `threads`. */
  readonly cppSingleOne: Figure;
  readonly cppSingle: Figure;
  readonly cppBatchOne: Figure;
  readonly cppBatch: Figure;
}

const missing = (why: string): Figure => ({ ok: false, why });
const value = (figure: Figure): number => (figure.ok ? figure.tokensPerS : Number.NaN);

/** The random 100 M model's folder in the bench cache, written on the first run. */
async function randomModelDir(): Promise<string> {
  const dir = join(benchCache, 'models', `random-llama-100m-v${randomModelVersion}`);
  const stamp = join(dir, '.complete');
  if (!existsSync(stamp)) {
    console.log(`writing the random ~100 M-parameter model to ${dir} (first run) ...`);
    await writeRandomLlamaFolder(dir, fixtureDir);
    await writeFile(stamp, JSON.stringify(randomModelConfig));
  }
  return dir;
}

async function measureSize(
  spec: SizeSpec,
  prompt: { text: string; ids: readonly number[] },
  streams: number,
  llamaCppBin: string | null,
  llamaCppWhy: string,
  threads: number,
  scratch: string,
): Promise<SizeFigures> {
  const { newTokens, repeats } = spec;
  console.log(`\n== ${spec.label}: ${newTokens} new tokens a stream, ${repeats} repeat(s)`);
  const loaded = await loadLlamaFolder(spec.dir);
  if (!loaded.ok) throw new Error(loaded.message);
  const created = createModel(loaded.config, loaded.weights, { kvCacheBytes: spec.kvCacheBytes });
  if (!created.ok) throw new Error(created.message);
  const model = created.model;

  // llama.cpp: our GGUF conversion, and its greedy tokens checked against ours first.
  let cppSingleOne = missing(llamaCppWhy);
  let cppSingle = missing(llamaCppWhy);
  let cppBatch = missing(llamaCppWhy);
  let cppBatchOne = missing(llamaCppWhy);
  if (llamaCppBin !== null) {
    const gguf = join(scratch, `${spec.key}.gguf`);
    const converted = await convertLlamaFolderToGguf(spec.dir, gguf);
    if (!converted.ok) throw new Error(converted.message);
    const checkTokens = Math.min(newTokens, 32);
    const ours = greedyIds(model, prompt.ids, checkTokens);
    const theirs = llamaCppGreedy(llamaCppBin, gguf, prompt.text, prompt.ids, checkTokens);
    let why: string | null = null;
    if (!theirs.ok) why = theirs.why;
    else {
      const tokenized = theirs.promptIds.join(',') === prompt.ids.join(',');
      const same = ours.filter((id, i) => id === theirs.greedyIds[i]).length;
      console.log(
        `greedy check (llama.cpp on our GGUF vs our engine): prompt tokenization ${tokenized ? 'equal' : `differs: ${theirs.promptIds.join(',')}`}; ` +
          `${same}/${checkTokens} greedy tokens equal`,
      );
      if (same !== checkTokens) {
        const at = ours.findIndex((id, i) => id !== theirs.greedyIds[i]);
        why = `greedy tokens differ from token ${at} (ours ${ours.slice(at, at + 4).join(',')}…, llama.cpp ${theirs.greedyIds.slice(at, at + 4).join(',')}…)`;
      }
      // The tiny model's prompt text is the fixture's; its tokenization must agree too.
      if (!tokenized && spec.key === 'tiny') why ??= 'llama.cpp tokenizes the prompt differently';
    }
    if (why !== null) {
      console.log(`llama.cpp not timed on ${spec.label}: ${why}`);
      cppSingleOne = cppSingle = cppBatch = cppBatchOne = missing(why);
    } else {
      const r = Math.max(repeats, 2);
      cppSingleOne = llamaBenchSingle(llamaCppBin, gguf, 1, newTokens, r);
      cppSingle =
        threads === 1 ? cppSingleOne : llamaBenchSingle(llamaCppBin, gguf, threads, newTokens, r);
      const batched = (t: number): Figure =>
        llamaBatchedBench(llamaCppBin, gguf, t, streams, prompt.ids.length, newTokens);
      cppBatchOne = batched(1);
      cppBatch = threads === 1 ? cppBatchOne : batched(threads);
      for (const [name, f] of [
        ['llama-bench', cppSingle],
        ['llama-batched-bench', cppBatch],
      ] as const)
        if (!f.ok) console.log(`${name} failed on ${spec.label}: ${f.why}`);
    }
    await rm(gguf, { force: true });
  }

  decodeRate(model, prompt.ids, 1, Math.min(32, newTokens)); // warm-up: compile the kernels' callers
  decodeRate(model, prompt.ids, streams, Math.min(16, newTokens));
  const single = median(
    Array.from({ length: repeats }, () => decodeRate(model, prompt.ids, 1, newTokens)),
  );
  const batch = median(
    Array.from({ length: repeats }, () => decodeRate(model, prompt.ids, streams, newTokens)),
  );

  // The same streams on two threads, a model replica each.
  const started = await ParallelEngine.start(spec.dir, 2, { kvCacheBytes: spec.kvCacheBytes });
  if (!started.ok) throw new Error(started.message);
  let parallel: number;
  try {
    await parallelDecodeRate(started.engine, prompt.ids, streams, Math.min(16, newTokens));
    const rates: number[] = [];
    for (let i = 0; i < repeats; i++)
      rates.push(await parallelDecodeRate(started.engine, prompt.ids, streams, newTokens));
    parallel = median(rates);
  } finally {
    await started.engine.close();
  }

  const torch = runTorchPeer(spec.dir, prompt.ids, newTokens, streams);
  return { spec, single, batch, parallel, torch, cppSingleOne, cppSingle, cppBatchOne, cppBatch };
}

/** A GOAL line valued at the smaller ratio; met=no whenever a model size has no ratio. */
function goalOfSmaller(metric: string, ratios: number[], target: number): void {
  const finite = ratios.filter(Number.isFinite);
  const smallest = finite.length === 0 ? Number.NaN : Math.min(...finite);
  if (finite.length === ratios.length) {
    goal('llm-engine', metric, smallest, '>=', target);
    return;
  }
  const shown = Number.isFinite(smallest) ? Number(smallest.toPrecision(4)) : smallest;
  console.log(`GOAL llm-engine.${metric} value=${shown} target=>=${target} met=no`);
}

export async function run(args: readonly string[]): Promise<void> {
  const streams = option(args, 'streams', 16);
  const sizesArg = args.includes('--sizes')
    ? (args[args.indexOf('--sizes') + 1] ?? '')
    : 'tiny,100m';
  const sizes = new Set(sizesArg.split(','));
  const threads = availableParallelism();
  const reference = JSON.parse(await readFile(`${fixtureDir}/reference.json`, 'utf8')) as {
    prompts: { name: string; text: string; ids: number[] }[];
    parameterCount: number;
  };
  const prompt = reference.prompts.find((p) => p.name === 'license-sentence') ?? {
    text: '',
    ids: [1019],
  };
  console.log(
    `CPU: ${cpus()[0]?.model ?? 'unknown'}, ${threads} cores; prompt ${prompt.ids.length} tokens, greedy, ` +
      `${streams} streams for the batch figures; llama.cpp on ${threads} thread(s)`,
  );

  console.log(
    `llama.cpp: native tools from node-llama-cpp 3.21.1's source, cached in ${llamaCppCache}`,
  );
  const built = ensureLlamaCpp(!args.includes('--no-llamacpp-build'));
  const llamaCppWhy = built.ok ? '' : `llama.cpp unavailable: ${built.why}`;
  if (!built.ok) console.log(`${llamaCppWhy}; its goal lines below read met=no`);

  const specs: SizeSpec[] = [];
  if (sizes.has('tiny'))
    specs.push({
      key: 'tiny',
      label: `tiny-llama (${reference.parameterCount.toLocaleString('en-US')} parameters)`,
      dir: fixtureDir,
      newTokens: option(args, 'new-tokens', 128),
      repeats: option(args, 'repeats', 3),
      kvCacheBytes: 64 << 20,
    });
  if (sizes.has('100m'))
    specs.push({
      key: '100m',
      label: `random Llama (${randomModelParameterCount().toLocaleString('en-US')} parameters)`,
      dir: await randomModelDir(),
      newTokens: option(args, 'large-new-tokens', 64),
      repeats: option(args, 'large-repeats', 3),
      kvCacheBytes: 256 << 20,
    });

  const scratch = await mkdtemp(join(tmpdir(), 'kiln-bench-gguf-'));
  const results: SizeFigures[] = [];
  try {
    for (const spec of specs)
      results.push(
        await measureSize(
          spec,
          prompt,
          streams,
          built.ok ? built.bin : null,
          llamaCppWhy,
          threads,
          scratch,
        ),
      );
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }

  const rows: (string | number)[][] = [];
  for (const r of results) {
    const name = r.spec.key;
    rows.push(
      [`${name}: kiln (src/llm), one thread`, r.single, r.batch, r.batch / r.single],
      [
        `${name}: kiln, two threads (a replica each)`,
        Number.NaN,
        r.parallel,
        r.parallel / r.single,
      ],
      [
        `${name}: pytorch ${r.torch?.torch ?? '(missing)'} eager, one thread`,
        r.torch?.single_tokens_per_s ?? Number.NaN,
        r.torch?.batch_tokens_per_s ?? Number.NaN,
        r.torch === null ? Number.NaN : r.torch.batch_tokens_per_s / r.torch.single_tokens_per_s,
      ],
      [
        `${name}: llama.cpp llama-bench / batched-bench, one thread`,
        value(r.cppSingleOne),
        value(r.cppBatchOne),
        value(r.cppBatchOne) / value(r.cppSingleOne),
      ],
      [
        `${name}: llama.cpp llama-bench / batched-bench, ${threads} threads`,
        value(r.cppSingle),
        value(r.cppBatch),
        value(r.cppBatch) / value(r.cppSingle),
      ],
    );
  }
  console.log(
    `\n${table(['engine', '1 stream tok/s', `${streams} streams tok/s`, 'batch ÷ single'], rows)}`,
  );
  // Each side at its best thread count: on a shared machine ggml's spinning thread barrier
  // collapses when another process takes a core (a 2-thread run can fall below the 1-thread
  // one), and our two replicas compete for memory bandwidth on a large model.
  const best = (...figures: number[]): number => {
    const finite = figures.filter(Number.isFinite);
    return finite.length === 0 ? Number.NaN : Math.max(...finite);
  };
  const ratios = results.map((r) => ({
    key: r.spec.key,
    single: r.single / best(value(r.cppSingleOne), value(r.cppSingle)),
    batch: best(r.batch, r.parallel) / best(value(r.cppBatchOne), value(r.cppBatch)),
    torchSingle: r.torch === null ? Number.NaN : r.single / r.torch.single_tokens_per_s,
    torchBatch: r.torch === null ? Number.NaN : r.batch / r.torch.batch_tokens_per_s,
  }));
  for (const q of ratios) {
    console.log(
      `${q.key}: kiln ÷ llama.cpp (each at its best thread count): 1 stream ${q.single.toFixed(2)}×, ` +
        `${streams} streams ${q.batch.toFixed(2)}×; kiln ÷ pytorch (one thread): 1 stream ` +
        `${q.torchSingle.toFixed(2)}×, ${streams} streams ${q.torchBatch.toFixed(2)}×`,
    );
  }
  const tiny = results.find((r) => r.spec.key === 'tiny');
  for (const r of results) {
    console.log(
      `figure llm-engine.batch16_vs_own_single (${r.spec.key}) value=${(r.parallel / r.single).toFixed(2)} ` +
        '(two threads ÷ one stream; retired goal, issue 16: bounded by 128-bit wasm SIMD)',
    );
  }
  console.log(
    `goals: the smaller of the model sizes' ratios (both sizes needed); each side at its best of 1 and ${threads} threads ` +
      '(ours: one stream always on one thread)',
  );
  const expected = 2; // both model sizes, or the goal is not met
  const pad = (values: number[]): number[] => [
    ...values,
    ...Array<number>(Math.max(0, expected - values.length)).fill(Number.NaN),
  ];
  goalOfSmaller('single_stream_vs_llamacpp', pad(ratios.map((q) => q.single)), 1);
  goalOfSmaller('batch16_vs_llamacpp', pad(ratios.map((q) => q.batch)), 1.5);
  goal(
    'llm-engine',
    'single_stream_vs_pytorch',
    tiny?.torch ? tiny.single / tiny.torch.single_tokens_per_s : Number.NaN,
    '>=',
    1,
  );
}
