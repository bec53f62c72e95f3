// wrk (C, Debian's `wrk` package) as the load generator where it is installed: it costs the
// machine far less CPU per request than a JavaScript client, so on 2 cores the serving path
// is measured rather than the client. Closed loop at a fixed number of connections; its
// --latency report has microsecond resolution.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface WrkResult {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
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

/** POSTs `body` to `url` with `connections` connections on one thread for `seconds`. */
export function runWrk(url: string, body: string, connections: number, seconds: number): WrkResult {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-wrk-'));
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
  const out = spawnSync(
    'wrk',
    ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url],
    { encoding: 'utf8' },
  ).stdout;
  const percentile = (p: string): number => {
    const match = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(out);
    return match === null ? Number.NaN : toMs(match[1] ?? '', match[2] ?? '');
  };
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(
    out,
  );
  const errors =
    non2xx + (socketErrors === null ? 0 : socketErrors.slice(1).reduce((s, v) => s + Number(v), 0));
  return { rps, p50Ms: percentile('50'), p90Ms: percentile('90'), p99Ms: percentile('99'), errors };
}
