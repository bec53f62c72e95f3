// `npm run bench -- llm-serving [--seed 12] [--scale 1] [--parts abcd] [--rate-a 120]
// [--rate-b 20] [--rate-d 110] [--rounds 2]`: the serving engine (src/llm/serving) on fixtures/llm/tiny-llama under seeded open-loop workloads — Poisson
// arrivals, mixed prompt and output lengths — measured client-side, peers side by side:
//
//   (a) continuous vs static batching: the same engine and options, EngineOptions.batching
//       'continuous' (requests join the running batch at the next step) vs 'static' (a batch
//       is formed from the waiting queue only when nothing runs, and runs to completion);
//   (b) one shared 200-token system prompt, prefix caching on vs off;
//   (c) KV memory waste of the paged cache, sampled over (a)'s workload, vs a contiguous
//       reservation of prompt + max_tokens (and of the context length) per sequence;
//   (d) two replicas behind the gateway under a skewed mix of long and short prompts,
//       OpenAI streaming completions: the gateway's load- and prefix-aware routing vs
//       round-robin (the same gateway, KILN_LLM_ROUTING=round-robin).
//
// TTFT: from the request's send to its first token, in the client. Throughput: output tokens
// over the run (first send to last token). Requests ask for exactly max_tokens (no stop
// tokens) in (a)–(c); in (d) the worker stops at EOS as for any client (greedy, so the same
// tokens under both policies). --scale multiplies every request count; --parts runs some
// parts only (the others' goals print value=NaN).

import { cpus, loadavg } from 'node:os';

import { loadTokenizer } from '../src/llm/tokenizer/load-tokenizer.ts';
import { llmServingDefaults } from '../src/llm/serving/llm-serving-config.ts';
import type { EngineOptions, LlmEngine } from '../src/llm/serving/engine-api.ts';
import { startEngine } from '../src/llm/serving/start-engine.ts';
import { goal, table, formatNumber } from './_report.ts';
import {
  engineSender,
  runOpenLoop,
  summarize,
  summaryCells,
  summaryHeaders,
  type LatencySummary,
  type RunResult,
} from './_llm-drive.ts';
import {
  loadCorpus,
  meanOf,
  mixedWorkload,
  sharedPrefixWorkload,
  skewedWorkload,
  type Corpus,
  type WorkloadRequest,
} from './_llm-workload.ts';
import { measureKvWaste } from './_llm-kv-sampling.ts';
import { runRoutingComparison } from './_llm-routing.ts';

const root = new URL('../', import.meta.url).pathname;
const modelDir = `${root}fixtures/llm/tiny-llama`;

function option(args: readonly string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  const value = i >= 0 ? Number(args[i + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

/** The engine every in-process part uses: the deploy defaults, one thread, a deep queue. */
function benchEngineOptions(): EngineOptions {
  return {
    kvCacheBytes: llmServingDefaults.kvCacheBytes,
    blockSize: llmServingDefaults.blockSize,
    maxNumSeqs: llmServingDefaults.maxNumSeqs,
    maxNumBatchedTokens: llmServingDefaults.maxNumBatchedTokens,
    // Deep enough that an open loop is never refused: the peers are compared on latency.
    maxWaiting: 100_000,
    prefixCaching: true,
    threads: 1,
    batching: 'continuous',
    maxPausedBlocks: llmServingDefaults.maxPausedBlocks,
  };
}

function describe(name: string, workload: readonly WorkloadRequest[], rate: number): string {
  const prompt = meanOf(workload, (r) => r.promptTokens.length);
  const output = meanOf(workload, (r) => r.maxTokens);
  return `${name}: ${workload.length} requests, Poisson arrivals at ${rate} req/s, prompt mean ${prompt.toFixed(0)} tokens, output mean ${output.toFixed(0)} tokens`;
}

async function withEngine<T>(
  options: EngineOptions,
  use: (engine: LlmEngine) => Promise<T>,
): Promise<T> {
  const started = await startEngine(modelDir, options);
  if (!started.ok) throw new Error(`starting the engine: ${started.message}`);
  try {
    return await use(started.engine);
  } finally {
    await started.engine.close();
  }
}

/** A few requests unlike the workload's, so compilation and first-touch costs are not measured. */
async function warmUp(engine: LlmEngine, corpus: Corpus): Promise<void> {
  const warm = mixedWorkload(corpus, {
    seed: 999,
    count: 8,
    ratePerS: 1000,
    promptTokens: { min: 16, max: 300 },
    outputTokens: { min: 8, max: 32 },
  });
  await runOpenLoop(warm, engineSender(engine, 'warm'));
}

interface EngineRun {
  readonly run: RunResult;
  readonly summary: LatencySummary;
  /** Prefix-cache hit tokens ÷ queried prompt tokens. */
  readonly hitRate: number;
  readonly preemptions: number;
  readonly steps: number;
  /** Token positions the model computed (≈: a request's last token is sampled, not run). */
  readonly computedTokens: number;
}

/** What the engine did in a run: steps, positions computed a step and a second. */
function engineWork(name: string, r: EngineRun): (string | number)[] {
  return [
    name,
    String(r.steps),
    r.computedTokens / r.steps,
    r.computedTokens / r.summary.durationS,
    String(r.preemptions),
  ];
}

const engineWorkHeaders = ['engine', 'steps', 'computed tok/step', 'computed tok/s', 'preemptions'];

async function runOnEngine(
  name: string,
  options: EngineOptions,
  corpus: Corpus,
  workload: readonly WorkloadRequest[],
): Promise<EngineRun> {
  return withEngine(options, async (engine) => {
    await warmUp(engine, corpus);
    const before = await engine.stats();
    const run = await runOpenLoop(workload, engineSender(engine, name));
    const after = await engine.stats();
    const queried = after.prefixQueriedTokensTotal - before.prefixQueriedTokensTotal;
    const hits = after.prefixHitTokensTotal - before.prefixHitTokensTotal;
    return {
      run,
      summary: summarize(run),
      hitRate: queried === 0 ? 0 : hits / queried,
      preemptions: after.preemptionsTotal - before.preemptionsTotal,
      steps: after.stepsTotal - before.stepsTotal,
      // Positions the model ran: prompts (and, with caching on, recomputations after a
      // preemption: what admissions looked up) less cache hits, plus decodes.
      computedTokens:
        (options.prefixCaching
          ? queried - hits
          : after.promptTokensTotal - before.promptTokensTotal) +
        after.generationTokensTotal -
        before.generationTokensTotal,
    };
  });
}

interface Setup {
  readonly args: readonly string[];
  readonly seed: number;
  readonly count: (n: number) => number;
  readonly corpus: Corpus;
  readonly options: EngineOptions;
}

/** (a)'s workload, also (c)'s: independent prompts, mixed lengths. */
function mixedFor(setup: Setup): { workload: WorkloadRequest[]; rate: number } {
  const rate = option(setup.args, 'rate-a', 120);
  const workload = mixedWorkload(setup.corpus, {
    seed: setup.seed,
    count: setup.count(400),
    ratePerS: rate,
    promptTokens: { min: 16, max: 320 },
    outputTokens: { min: 16, max: 160 },
  });
  return { workload, rate };
}

/**
 * (a) continuous vs static batching: the same workload, offered faster than either serves it,
 * so that the throughput is each one's capacity and the TTFT includes the queue each builds
 * (the goal is read here); then at a load both keep up with.
 */
async function partA(setup: Setup): Promise<{ throughputRatio: number; p99Ratio: number }> {
  const { workload, rate } = mixedFor(setup);
  console.log(`\n(a) ${describe('mixed', workload, rate)}`);
  const continuous = await runOnEngine('continuous', setup.options, setup.corpus, workload);
  const staticRun = await runOnEngine(
    'static',
    { ...setup.options, batching: 'static' },
    setup.corpus,
    workload,
  );
  console.log(
    table(
      ['batching', ...summaryHeaders],
      [
        ['continuous', ...summaryCells(continuous.summary)],
        ['static (batch formed once, run to completion)', ...summaryCells(staticRun.summary)],
      ],
    ),
  );
  console.log(
    table(engineWorkHeaders, [
      engineWork('continuous', continuous),
      engineWork('static', staticRun),
    ]),
  );
  const throughputRatio = continuous.summary.outputTokensPerS / staticRun.summary.outputTokensPerS;
  const p99Ratio = continuous.summary.ttftP99Ms / staticRun.summary.ttftP99Ms;
  console.log(
    `continuous ÷ static: throughput ${formatNumber(throughputRatio)}×; p99 TTFT ${formatNumber(p99Ratio)}× — ${p99Ratio <= 1 ? 'equal or better' : 'worse'} (${formatNumber(continuous.summary.ttftP99Ms)} vs ${formatNumber(staticRun.summary.ttftP99Ms)} ms)`,
  );

  // Not a goal: the same mix offered at half of what static served above, a load both keep
  // up with, where the difference is the wait for a running static batch to finish.
  const halfRate = Number((staticRun.summary.requestsPerS / 2).toPrecision(2));
  const moderate = mixedWorkload(setup.corpus, {
    seed: setup.seed + 10,
    count: setup.count(150),
    ratePerS: halfRate,
    promptTokens: { min: 16, max: 320 },
    outputTokens: { min: 16, max: 160 },
  });
  console.log(`at half of static's capacity: ${describe('mixed', moderate, halfRate)}`);
  const rows: (string | number)[][] = [];
  for (const batching of ['continuous', 'static'] as const) {
    const r = await runOnEngine(
      `${batching}-half`,
      { ...setup.options, batching },
      setup.corpus,
      moderate,
    );
    rows.push([batching, ...summaryCells(r.summary)]);
  }
  console.log(table(['batching', ...summaryHeaders], rows));
  return { throughputRatio, p99Ratio };
}

/** (b) one shared 200-token system prompt, prefix caching on vs off, at a rate both serve. */
async function partB(setup: Setup): Promise<number> {
  const rate = option(setup.args, 'rate-b', 20);
  const workload = sharedPrefixWorkload(setup.corpus, {
    seed: setup.seed + 1,
    count: setup.count(240),
    ratePerS: rate,
    systemPromptTokens: 200,
    promptTokens: { min: 16, max: 64 },
    outputTokens: { min: 16, max: 64 },
  });
  console.log(`\n(b) ${describe('200-token system prompt + user part', workload, rate)}`);
  const on = await runOnEngine('prefix-on', setup.options, setup.corpus, workload);
  const off = await runOnEngine(
    'prefix-off',
    { ...setup.options, prefixCaching: false },
    setup.corpus,
    workload,
  );
  console.log(
    table(
      ['prefix caching', ...summaryHeaders, 'hit rate'],
      [
        ['on', ...summaryCells(on.summary), on.hitRate],
        ['off', ...summaryCells(off.summary), off.hitRate],
      ],
    ),
  );
  console.log(
    table(engineWorkHeaders, [engineWork('caching on', on), engineWork('caching off', off)]),
  );
  const ratio = off.summary.ttftP50Ms / on.summary.ttftP50Ms;
  console.log(`TTFT p50 off ÷ on: ${formatNumber(ratio)}×`);
  return ratio;
}

/** (c) KV waste over (a)'s workload, continuous batching, sampled before every engine step. */
async function partC(setup: Setup): Promise<number> {
  const { workload } = mixedFor(setup);
  console.log(
    `\n(c) KV memory waste over (a)'s workload, continuous, in process, sampled before every step (weighted by its duration)`,
  );
  const waste = await measureKvWaste(modelDir, setup.options, workload);
  const cells = [String(waste.samples), waste.meanSequences];
  console.log(
    table(
      ['reservation', 'unused ÷ reserved %', 'samples', 'mean live seqs'],
      [
        [`paged, blocks of ${setup.options.blockSize} (ours)`, waste.pagedPct, ...cells],
        ['contiguous, prompt + max_tokens a sequence', waste.contiguousMaxTokensPct, ...cells],
        ['contiguous, context length a sequence', waste.contiguousContextPct, ...cells],
      ],
    ),
  );
  console.log(`paged: worst single sample ${formatNumber(waste.pagedWorstPct)} %`);
  return waste.pagedPct;
}

/** (d) two replicas behind the gateway, load-prefix vs round-robin. */
async function partD(setup: Setup): Promise<number> {
  // ~80 % of what the two replicas serve at saturation on the reference machine (~140 req/s
  // there): routing only matters under load, and past saturation both policies just queue.
  const rate = option(setup.args, 'rate-d', 110);
  const outcome = await runRoutingComparison({
    modelDir,
    corpus: setup.corpus,
    rate,
    rounds: option(setup.args, 'rounds', 2),
    workload: skewedWorkload(setup.corpus, {
      seed: setup.seed + 2,
      count: setup.count(300),
      ratePerS: rate,
      longFraction: 0.15,
      longPromptTokens: { min: 320, max: 440 },
      shortPromptTokens: { min: 40, max: 80 },
      outputTokens: { min: 16, max: 64 },
      systemPrompts: 4,
      systemPromptTokens: 32,
    }),
  });
  if (outcome.note !== '') console.log(outcome.note);
  return outcome.ratio;
}

export async function run(args: readonly string[]): Promise<void> {
  const partsAt = args.indexOf('--parts');
  const parts = partsAt >= 0 ? (args[partsAt + 1] ?? '') : 'abcd';
  const scale = option(args, 'scale', 1);
  const cpu = cpus();
  console.log(
    `cpu: ${cpu[0]?.model ?? 'unknown'} × ${cpu.length}; node ${process.version}; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const tokenizer = await loadTokenizer(modelDir);
  if (!tokenizer.ok) throw new Error(tokenizer.message);
  const setup: Setup = {
    args,
    seed: option(args, 'seed', 12),
    count: (n) => Math.max(8, Math.round(n * scale)),
    corpus: loadCorpus(tokenizer.tokenizer, [], tokenizer.tokenizer.bosTokenId ?? null),
    options: benchEngineOptions(),
  };
  const o = setup.options;
  console.log(
    `model fixtures/llm/tiny-llama; engine: one thread, ${o.maxNumSeqs} sequences and ${o.maxNumBatchedTokens} tokens a step, blocks of ${o.blockSize}, ${o.kvCacheBytes / 2 ** 20} MiB of KV; greedy; seed ${setup.seed}`,
  );

  const skipped = (part: string) => {
    console.log(`\n(${part}) skipped (--parts ${parts})`);
    return Number.NaN;
  };
  const a = parts.includes('a')
    ? await partA(setup)
    : { throughputRatio: skipped('a'), p99Ratio: Number.NaN };
  const b = parts.includes('b') ? await partB(setup) : skipped('b');
  const c = parts.includes('c') ? await partC(setup) : skipped('c');
  const d = parts.includes('d') ? await partD(setup) : skipped('d');

  console.log('');
  goal('llm-serving', 'continuous_vs_static_throughput', a.throughputRatio, '>=', 2);
  goal('llm-serving', 'continuous_vs_static_p99_ttft_ratio', a.p99Ratio, '<=', 1);
  goal('llm-serving', 'prefix_cache_ttft_p50_ratio', b, '>=', 3);
  goal('llm-serving', 'kv_waste_pct', c, '<=', 4);
  goal('llm-serving', 'routing_p99_ttft_ratio', d, '<=', 0.5);
}
