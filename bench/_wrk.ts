// wrk (C, Debian's `wrk` package) as the load generator where it is installed: it costs the
// machine far less CPU per request than a JavaScript client, so on 2 cores the serving path
// is measured rather than the client. Closed loop at a fixed number of connections; its
// --latency report has microsecond resolution.
//
// wrk's own Requests/sec counts every answer, 5xx included; `rps` here counts successful ones
// only: completed requests less its "Non-2xx or 3xx responses", over the same time. Its
// latency percentiles still cover every answer (wrk does not split them by status).

import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface WrkResult {
  /** Successful (2xx) answers per second. */
  readonly rps: number;
  /** Requests answered or failed. */
  readonly requests: number;
  /** 2xx answers. */
  readonly successes: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  /** Non-2xx answers and socket errors (connect, read, write, timeout). */
  readonly errors: number;
}

export function wrkAvailable(): boolean {
  return spawnSync('wrk', ['--version'], { encoding: 'utf8' }).error === undefined;
}

function toMs(value: string, unit: string): number {
  const n = Number(value);
  switch (unit) {
    case 'us':
      return n / 1000;
    case 'ms':
      return n;
    case 's':
      return n * 1000;
    default:
      return Number.NaN;
  }
}

/** Writes `body` and a wrk Lua script that POSTs it as JSON into `dir`; returns the script's path. */
export function wrkScript(dir: string, body: string): string {
  const bodyPath = join(dir, 'body.json');
  writeFileSync(bodyPath, body);
  const script = join(dir, 'post.lua');
  writeFileSync(
    script,
    [
      'wrk.method = "POST"',
      `local f = io.open("${bodyPath}", "rb")`,
      'wrk.body = f:read("*a")',
      'f:close()',
      'wrk.headers["Content-Type"] = "application/json"',
    ].join('\n'),
  );
  return script;
}

/** POSTs `body` to `url` with `connections` connections on one thread for `seconds`. */
export function runWrk(url: string, body: string, connections: number, seconds: number): WrkResult {
  const script = wrkScript(mkdtempSync(join(tmpdir(), 'kiln-wrk-')), body);
  const out = spawnSync(
    'wrk',
    ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url],
    { encoding: 'utf8' },
  ).stdout;
  return parseWrkOutput(out);
}

/** Reads wrk's report (with --latency); success-only throughput, errors of every kind. */
export function parseWrkOutput(out: string): WrkResult {
  const percentile = (p: string): number => {
    const match = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(out);
    return match === null ? Number.NaN : toMs(match[1] ?? '', match[2] ?? '');
  };
  const allRps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN);
  const completed = Number(/(\d+) requests in [\d.]+\w+/.exec(out)?.[1] ?? Number.NaN);
  // wrk counts answers with status > 399 as "Non-2xx or 3xx"; a "timeout" is an answer slower
  // than its 2 s limit (completed, left out of the percentiles); connect/read/write errors
  // are requests that never completed.
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/
    .exec(out)
    ?.slice(1)
    .map(Number) ?? [0, 0, 0, 0];
  const [connect = 0, read = 0, write = 0, timeout = 0] = socket;
  const successes = Math.max(0, completed - non2xx - timeout);
  // Requests/sec is completed / wrk's run time: scale it to the successful share.
  const rps = completed > 0 ? (allRps * successes) / completed : completed === 0 ? 0 : Number.NaN;
  return {
    rps,
    requests: completed + connect + read + write,
    successes,
    p50Ms: percentile('50'),
    p90Ms: percentile('90'),
    p99Ms: percentile('99'),
    errors: non2xx + timeout + connect + read + write,
  };
}
