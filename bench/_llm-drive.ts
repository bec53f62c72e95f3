// Open-loop drivers for bench/llm-serving.ts: each request of a workload is sent at its
// arrival time whatever the server is doing (a Poisson client does not wait for answers), and
// timed client-side: TTFT from the send to the first token, the run from the first send to
// the last token. One driver over the `LlmEngine` interface (in this process, the engine on
// its own thread), one over HTTP (OpenAI streaming completions, SSE), with the same results.

import type { LlmEngine } from '../src/llm/serving/engine-api.ts';
import { percentile } from './_report.ts';
import type { WorkloadRequest } from './_llm-workload.ts';

export interface RequestTiming {
  readonly request: WorkloadRequest;
  /** performance.now() at send. */
  readonly sentMs: number;
  /** ms from send to the first token; NaN when none came. */
  ttftMs: number;
  /** ms from send to the last token or the end. */
  doneMs: number;
  outputTokens: number;
  /** Why it failed (refused, error); null when it finished. */
  error: string | null;
}

export interface RunResult {
  readonly timings: readonly RequestTiming[];
  /** From the first send to the last request's end, ms. */
  readonly durationMs: number;
  readonly outputTokens: number;
  readonly failed: number;
}

/** What a driver does with one request; `start` is called at its arrival time. */
export interface Sender {
  start(request: WorkloadRequest, timing: RequestTiming, done: () => void): void;
}

/** Called every `intervalMs` while the run is on (for sampling the engine's memory). */
export interface Sampler {
  readonly intervalMs: number;
  sample(live: ReadonlySet<RequestTiming>): void;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Sends every request at its arrival time; resolves once all have ended. */
export async function runOpenLoop(
  workload: readonly WorkloadRequest[],
  sender: Sender,
  sampler?: Sampler,
): Promise<RunResult> {
  const timings: RequestTiming[] = [];
  const live = new Set<RequestTiming>();
  let remaining = workload.length;
  let allDone: () => void = () => {};
  const finished = new Promise<void>((resolve) => (allDone = resolve));
  const timer =
    sampler === undefined ? undefined : setInterval(() => sampler.sample(live), sampler.intervalMs);
  const start = performance.now();
  for (const request of workload) {
    const wait = start + request.arrivalMs - performance.now();
    if (wait > 1) await sleep(wait);
    const timing: RequestTiming = {
      request,
      sentMs: performance.now(),
      ttftMs: Number.NaN,
      doneMs: Number.NaN,
      outputTokens: 0,
      error: null,
    };
    timings.push(timing);
    live.add(timing);
    sender.start(request, timing, () => {
      timing.doneMs = performance.now() - timing.sentMs;
      live.delete(timing);
      remaining -= 1;
      if (remaining === 0) allDone();
    });
  }
  if (remaining > 0) await finished;
  if (timer !== undefined) clearInterval(timer);
  const end = Math.max(...timings.map((t) => t.sentMs + t.doneMs));
  return {
    timings,
    durationMs: end - start,
    outputTokens: timings.reduce((sum, t) => sum + t.outputTokens, 0),
    failed: timings.filter((t) => t.error !== null).length,
  };
}

/** Several runs of a peer as one: timings pooled, durations and tokens added. */
export function mergeRuns(runs: readonly RunResult[]): RunResult {
  return {
    timings: runs.flatMap((r) => r.timings),
    durationMs: runs.reduce((sum, r) => sum + r.durationMs, 0),
    outputTokens: runs.reduce((sum, r) => sum + r.outputTokens, 0),
    failed: runs.reduce((sum, r) => sum + r.failed, 0),
  };
}

/** A driver over `LlmEngine.submit`: greedy, no stop tokens, exactly maxTokens each. */
export function engineSender(engine: LlmEngine, runName: string): Sender {
  return {
    start(request, timing, done) {
      const result = engine.submit(
        {
          requestId: `${runName}-${request.index}`,
          promptTokens: request.promptTokens,
          maxTokens: request.maxTokens,
          sampling: { temperature: 0 },
          stopTokenIds: [],
          stopStrings: [],
        },
        (events) => {
          const now = performance.now();
          for (const event of events) {
            if (event.kind === 'token') {
              if (timing.outputTokens === 0) timing.ttftMs = now - timing.sentMs;
              timing.outputTokens += 1;
            } else {
              if (event.kind === 'error') timing.error = event.message;
              done();
              return;
            }
          }
        },
      );
      if (!result.ok) {
        timing.error = `${result.reason}: ${result.message}`;
        done();
      }
    },
  };
}

export interface LatencySummary {
  readonly requests: number;
  readonly failed: number;
  readonly outputTokensPerS: number;
  readonly requestsPerS: number;
  readonly ttftP50Ms: number;
  readonly ttftP95Ms: number;
  readonly ttftP99Ms: number;
  /** Mean ms between a request's tokens after the first (inter-token latency), p50 over requests. */
  readonly itlP50Ms: number;
  readonly durationS: number;
}

/** Percentiles over the requests that got a first token (failures are counted apart). */
export function summarize(run: RunResult, only?: (t: RequestTiming) => boolean): LatencySummary {
  const timings = only === undefined ? run.timings : run.timings.filter(only);
  const ok = timings.filter((t) => t.error === null && Number.isFinite(t.ttftMs));
  const ttft = ok.map((t) => t.ttftMs).sort((a, b) => a - b);
  const itl = ok
    .filter((t) => t.outputTokens > 1)
    .map((t) => (t.doneMs - t.ttftMs) / (t.outputTokens - 1))
    .sort((a, b) => a - b);
  const tokens = timings.reduce((sum, t) => sum + t.outputTokens, 0);
  return {
    requests: timings.length,
    failed: timings.length - ok.length,
    outputTokensPerS: tokens / (run.durationMs / 1000),
    requestsPerS: ok.length / (run.durationMs / 1000),
    ttftP50Ms: percentile(ttft, 50),
    ttftP95Ms: percentile(ttft, 95),
    ttftP99Ms: percentile(ttft, 99),
    itlP50Ms: percentile(itl, 50),
    durationS: run.durationMs / 1000,
  };
}

/** The table columns of a summary, after the row's own label cells. */
export const summaryHeaders = [
  'req',
  'failed',
  'out tok/s',
  'req/s',
  'ttft p50',
  'p95',
  'p99 ms',
  'itl p50 ms',
  'run s',
] as const;

export function summaryCells(s: LatencySummary): (string | number)[] {
  return [
    String(s.requests),
    String(s.failed),
    s.outputTokensPerS,
    s.requestsPerS,
    s.ttftP50Ms,
    s.ttftP95Ms,
    s.ttftP99Ms,
    s.itlP50Ms,
    s.durationS,
  ];
}
