// A worker's own load, for the autoscaler (issue 14): what `GET /kiln/v1/load` answers
// (protocol/scaling/worker-load-report.ts). Counts (in flight, queued) are read at the
// moment of the request; rates (CPU, an LLM's tokens/s) over about the last second, from
// cumulative counters sampled on a timer:
//
//   samples (every intervalMs, the newest `keep`):  s0  s1  s2  s3 … sN      now
//   rate over [base, end]: base = the newest sample at least windowMs before `end`
//   (else the oldest), end = now for counters read on the spot (CPU), else sN.
//
// So the window is windowMs to windowMs + intervalMs long, never more stale than that.

import { availableParallelism } from 'node:os';
import type { WorkerLoadReport } from '../protocol/scaling/worker-load-report.ts';
import type { EngineLoad } from '../llm/serving/engine-api.ts';
import type { WorkerSpec } from './worker-spec.ts';

/** What the report reads of the worker's state (worker-server.ts: WorkerState). */
export interface WorkerLoadState {
  readonly phase: string;
  readonly inflight: number;
  readonly batcher: { readonly depth: number } | null;
  readonly llm?: { readonly engine: { load(): EngineLoad } } | null;
}

interface Sample {
  readonly atMs: number;
  /** Cumulative process CPU time, user + system, µs. */
  readonly cpuMicros: number;
  /** Other cumulative counters by name (an LLM's generated tokens). */
  readonly counters: Readonly<Record<string, number>>;
}

export interface WorkerLoadMeterOptions {
  /** Monotonic ms. */
  readonly nowMs?: () => number;
  /** Cumulative CPU time of this process, µs. */
  readonly cpuMicros?: () => number;
  /** Default 1000. */
  readonly windowMs?: number;
  /** How often `run` samples. Default 250. */
  readonly intervalMs?: number;
}

/** Shortest window a CPU figure is given for; a younger meter reports 0. */
const minWindowMs = 100;

const processCpuMicros = (): number => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};

export class WorkerLoadMeter {
  private readonly samples: Sample[] = [];
  private readonly nowMs: () => number;
  private readonly cpuMicros: () => number;
  private readonly windowMs: number;
  readonly intervalMs: number;
  /** Samples kept: enough to reach one window back, plus one. */
  private readonly keep: number;

  constructor(options: WorkerLoadMeterOptions = {}) {
    this.nowMs = options.nowMs ?? (() => performance.now());
    this.cpuMicros = options.cpuMicros ?? processCpuMicros;
    this.windowMs = options.windowMs ?? 1000;
    this.intervalMs = options.intervalMs ?? 250;
    this.keep = Math.ceil(this.windowMs / this.intervalMs) + 2;
  }

  /** Records the counters now (CPU read here; others given, cumulative). */
  sample(counters: Readonly<Record<string, number>> = {}): void {
    this.samples.push({ atMs: this.nowMs(), cpuMicros: this.cpuMicros(), counters });
    if (this.samples.length > this.keep) this.samples.shift();
  }

  /** Forgets every sample: the next window starts at the next sample. */
  reset(): void {
    this.samples.length = 0;
  }

  /** CPU used over about the last second, in cores (1 = one core busy throughout). */
  cpuCores(): number {
    const endMs = this.nowMs();
    const base = this.baseFor(endMs);
    // A window of a few ms (a worker just ready) would be a ratio of two jitters: not yet.
    if (base === null || endMs - base.atMs < minWindowMs) return 0;
    const cores = (this.cpuMicros() - base.cpuMicros) / 1000 / (endMs - base.atMs);
    return Math.max(0, cores);
  }

  /** Per second, a sampled counter over about the last second; 0 before two samples. */
  rate(name: string): number {
    const end = this.samples.at(-1);
    if (end === undefined) return 0;
    const base = this.baseFor(end.atMs);
    const last = end.counters[name];
    const first = base?.counters[name];
    if (base === null || last === undefined || first === undefined || end.atMs <= base.atMs)
      return 0;
    return Math.max(0, ((last - first) * 1000) / (end.atMs - base.atMs));
  }

  /**
   * Samples every intervalMs until the returned stop is called; `counters` (optional, may be
   * async: an LLM engine's statistics live on its threads) adds named cumulative counters.
   * The timer keeps no process alive.
   */
  run(
    counters?: () => Promise<Readonly<Record<string, number>>> | Readonly<Record<string, number>>,
  ): () => void {
    let busy = false;
    this.sample();
    const timer = setInterval(() => {
      if (counters === undefined) return this.sample();
      if (busy) return; // a slow read: skip a beat rather than pile up
      busy = true;
      Promise.resolve()
        .then(counters)
        .then(
          (values) => this.sample(values),
          () => this.sample(),
        )
        .finally(() => (busy = false));
    }, this.intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  private baseFor(endMs: number): Sample | null {
    let base: Sample | null = null;
    for (const sample of this.samples) {
      if (sample.atMs > endMs - this.windowMs) break;
      base = sample;
    }
    return base ?? this.samples[0] ?? null;
  }
}

/**
 * Cores a worker computes on: an LLM's engine threads, ONNX's intra-op threads (its default,
 * 0, is one per core), and one for the tree kernels, which run on the worker's own thread.
 */
export function workerThreads(spec: WorkerSpec): number {
  if (spec.format === 'hf-llm') return Math.max(1, spec.llm?.threads ?? 1);
  if (spec.format === 'onnx') {
    const threads = spec.config.intraOpThreads ?? 0;
    return threads > 0 ? threads : availableParallelism();
  }
  return 1;
}

/** The report `GET /kiln/v1/load` answers, from the worker's state now. */
export function workerLoadReport(
  state: WorkerLoadState,
  meter: WorkerLoadMeter,
  threads: number,
): WorkerLoadReport {
  const llm = state.llm ?? null;
  if (llm !== null) {
    const load = llm.engine.load();
    return {
      inFlight: state.inflight,
      queueDepth: load.waiting,
      cpu: meter.cpuCores(),
      threads,
      accelerator: null,
      custom: {
        tokens_per_second: meter.rate(generatedTokens),
        kv_blocks_used: load.kvBlocksUsed,
        kv_utilization: load.kvUtilization,
        running: load.running,
      },
    };
  }
  // Without a batcher a request runs as soon as the worker's threads are free: those beyond
  // them wait (for the event loop, for ONNX's threads).
  const queueDepth =
    state.batcher === null ? Math.max(0, state.inflight - threads) : state.batcher.depth;
  return {
    inFlight: state.inflight,
    queueDepth,
    cpu: meter.cpuCores(),
    threads,
    accelerator: null,
    custom: {},
  };
}

/** The counter name the LLM worker samples its generated tokens under. */
export const generatedTokens = 'generated_tokens';

/** A worker's load: what `GET /kiln/v1/load` answers, and the sampling behind it. */
export interface WorkerLoadSampler {
  readonly report: () => WorkerLoadReport;
  /** Samples until stop() (the worker's server listens from start to close). */
  readonly start: () => void;
  readonly stop: () => void;
}

/**
 * The worker's load meter (an LLM's generated tokens sampled too). Copying, loading and
 * warming up the model are no load of serving (a fresh replica would report a busy core):
 * the window starts when the worker is ready — at the first sample or report after, so no
 * report carries the loading.
 */
export function workerLoadSampler(
  spec: WorkerSpec,
  state: WorkerLoadState & {
    readonly llm?: {
      readonly engine: { stats(): Promise<{ readonly generationTokensTotal: number }> };
    } | null;
  },
): WorkerLoadSampler {
  const meter = new WorkerLoadMeter();
  const threads = workerThreads(spec);
  let readySeen = false;
  const startWindowAtReady = (): void => {
    if (readySeen || state.phase !== 'ready') return;
    readySeen = true;
    meter.reset();
    meter.sample();
  };
  let stopSampling: (() => void) | null = null;
  return {
    report: () => {
      startWindowAtReady();
      return workerLoadReport(state, meter, threads);
    },
    start: () => {
      stopSampling ??= meter.run(async () => {
        startWindowAtReady();
        const engine = state.llm?.engine;
        if (engine === undefined) return {};
        return { [generatedTokens]: (await engine.stats()).generationTokensTotal };
      });
    },
    stop: () => stopSampling?.(),
  };
}
