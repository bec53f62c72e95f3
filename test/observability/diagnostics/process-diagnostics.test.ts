// The opt-in process diagnostics (issue 16, bench tail): with KILN_DIAGNOSTICS_DIR, one
// header line and then one line per second with the event-loop delay, GC pauses by kind, CPU
// and the young generation's size. And the /proc sampler the bench reads beside it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  startProcessDiagnostics,
  type DiagnosticsHeader,
  type DiagnosticsSecond,
} from '../../../src/observability/process-diagnostics.ts';
import { procDelta, sampleProc } from '../../../bench/_proc-stats.ts';

async function waitFor(check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('with KILN_DIAGNOSTICS_DIR: a header, then a line per second with GC pauses by kind', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-diag-test-'));
  const stop = startProcessDiagnostics('worker', { KILN_DIAGNOSTICS_DIR: dir });
  try {
    const file = join(dir, `worker-${process.pid}.jsonl`);
    assert.ok(existsSync(file));
    // Garbage enough for minor GCs, and a forced-looking pause of the loop.
    let keep: object[] = [];
    const churn = setInterval(() => {
      for (let i = 0; i < 20_000; i++) keep.push({ i, text: `row ${i}` });
      keep = keep.slice(-1000);
    }, 5);
    await waitFor(() => {
      const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
      return lines
        .slice(1)
        .some((l) => Object.keys((JSON.parse(l) as DiagnosticsSecond).gc).length > 0);
    });
    clearInterval(churn);
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    const header = JSON.parse(lines[0] ?? '') as DiagnosticsHeader;
    assert.equal(header.role, 'worker');
    assert.equal(header.pid, process.pid);
    const seconds = lines.slice(1).map((l) => JSON.parse(l) as DiagnosticsSecond);
    for (const second of seconds) {
      assert.ok(second.loopDelay.maxMs >= second.loopDelay.p99Ms);
      assert.ok(second.loopDelay.p99Ms >= second.loopDelay.p50Ms);
      assert.ok(second.cpuUserMs >= 0 && second.cpuSystemMs >= 0);
      assert.ok(second.newSpaceBytes > 0);
      for (const [kind, gc] of Object.entries(second.gc)) {
        assert.ok(['minor', 'major', 'incremental', 'weakcb', 'other'].includes(kind));
        assert.ok(gc.count > 0 && gc.maxMs <= gc.totalMs + 1e-9);
      }
    }
    assert.ok(
      seconds.some((s) => (s.gc.minor?.count ?? 0) > 0),
      'minor GCs were seen',
    );
  } finally {
    stop();
    rmSync(dir, { recursive: true, force: true });
  }
  assert.equal(existsSync(dir), false);
});

test(
  'the /proc sampler: CPU, run-queue wait and switches of this process',
  { skip: process.platform !== 'linux' },
  async () => {
    const before = sampleProc(process.pid);
    assert.ok(before !== null && before.threads >= 1);
    let x = 0;
    const until = Date.now() + 200;
    while (Date.now() < until) x += Math.sqrt(x + 1);
    await new Promise((r) => setTimeout(r, 20));
    const rates = procDelta(before, sampleProc(process.pid));
    assert.ok(rates !== null);
    assert.ok(rates.cpuCores >= 0 && rates.runQueueMsPerS >= 0 && rates.helperCores >= 0);
    assert.ok(rates.voluntaryPerS + rates.involuntaryPerS >= 0);
    assert.equal(sampleProc(2 ** 22 + 1), null, 'a pid that does not exist reads as null');
  },
);
