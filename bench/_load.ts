// A small HTTP load generator with microsecond latency (autocannon's histogram rounds to
// whole milliseconds, too coarse for sub-millisecond overheads). Closed loop: N clients
// back to back. Open loop: a fixed arrival rate, latency measured from each request's
// scheduled time, so a stall shows up in the percentiles instead of hiding (no coordinated
// omission). Throughput (`rps`) counts 2xx answers only; the rest are `errors`.

import { Pool } from 'undici';

export interface LoadResult {
  /** Requests answered or failed. */
  readonly requests: number;
  /** 2xx answers. */
  readonly successes: number;
  /** Non-2xx answers and transport errors. */
  readonly errors: number;
  readonly statuses: Readonly<Record<string, number>>;
  readonly seconds: number;
  /** Successful (2xx) answers per second: a server does not get faster by failing. */
  readonly rps: number;
  /** Latencies of successful requests, ms, ascending. */
  readonly latenciesMs: Float64Array;
}

export interface LoadTarget {
  readonly origin: string;
  readonly path: string;
  readonly body: string;
  readonly headers?: Record<string, string>;
}

function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

async function once(pool: Pool, target: LoadTarget): Promise<number> {
  const response = await pool.request({
    method: 'POST',
    path: target.path,
    body: target.body,
    headers: { 'content-type': 'application/json', ...target.headers },
  });
  await response.body.arrayBuffer();
  return response.statusCode;
}

function finish(
  latencies: number[],
  errors: number,
  statuses: Record<string, number>,
  seconds: number,
): LoadResult {
  const sorted = Float64Array.from(latencies).sort();
  return {
    requests: latencies.length + errors,
    successes: latencies.length,
    errors,
    statuses,
    seconds,
    rps: latencies.length / seconds,
    latenciesMs: sorted,
  };
}

export async function closedLoop(
  target: LoadTarget,
  concurrency: number,
  durationMs: number,
): Promise<LoadResult> {
  const pool = new Pool(target.origin, { connections: concurrency, pipelining: 1 });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        try {
          const status = await once(pool, target);
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (isSuccess(status)) latencies.push(performance.now() - t0);
          else errors++;
        } catch {
          errors++;
        }
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  await pool.close();
  return finish(latencies, errors, statuses, seconds);
}

export async function openLoop(
  target: LoadTarget,
  ratePerSecond: number,
  durationMs: number,
  connections = 64,
): Promise<LoadResult> {
  const pool = new Pool(target.origin, { connections, pipelining: 1 });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  const intervalMs = 1000 / ratePerSecond;
  const total = Math.floor((durationMs / 1000) * ratePerSecond);
  const start = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const scheduled = start + i * intervalMs;
    const wait = scheduled - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    else if (i % 64 === 0) await new Promise((r) => setImmediate(r));
    pending.push(
      once(pool, target).then(
        (status) => {
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (isSuccess(status)) latencies.push(performance.now() - scheduled);
          else errors++;
        },
        () => {
          errors++;
        },
      ),
    );
  }
  await Promise.all(pending);
  const seconds = (performance.now() - start) / 1000;
  await pool.close();
  return finish(latencies, errors, statuses, seconds);
}
