// Shadows through the real gateway and workers (issue 13): the fixtures' v1 serves, v2 (fails
// on every de row) and v3 (adds 10 on de rows) get a copy of every request (`kiln shadow set`). Under a steady
// load over all fixture rows (one in ten is de), every primary answer is v1's, correct, and
// none fails — a shadow's errors and differences never reach the client — while the shadow
// report (`GET /api/v1/endpoints/{e}/shadows/report`, and `kiln shadow report`)
// shows what each shadow did: v2 agrees wherever it answers and fails about one copy in ten,
// v3 never fails and disagrees on about one in ten, by 10. Once the shadows are cleared,
// the gateway's shadow queue drains to empty and its sent + dropped copies equal the report's:
// dropped, not queued forever.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Cli } from '../cli/cli-harness.ts';
import { call, testPlatform } from '../helpers/platform.ts';
import {
  checkSliceAnswer,
  cyclingRequests,
  registerSliceModels,
  sliceRows,
} from '../helpers/slice-models.ts';
import { SteadyLoad, type LoadAnswer } from '../helpers/steady-load.ts';
import { TrafficApi, waitForGatewayReady } from '../helpers/traffic-api.ts';

const platform = await testPlatform({ gateway: true });
const api = new TrafficApi(platform.url);
const cli = new Cli(platform.url, platform.home);
const MODEL = 'tm';
const ENDPOINT = 'shadowed';
await registerSliceModels(platform.url, MODEL);

interface ShadowEntry {
  model: string;
  version: number;
  offered: number;
  sent: number;
  dropped: number;
  errors: number;
  compared: number;
  agreed: number;
  absDiff: { count: number; mean: number | null; max: number | null };
}

async function report(): Promise<ShadowEntry[]> {
  const response = await call(platform.url, 'GET', `/api/v1/endpoints/${ENDPOINT}/shadows/report`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return (response.body as { shadows: ShadowEntry[] }).shadows;
}

/** The gateway's shadow queue depth and copies sent and dropped for the endpoint. */
async function shadowMetrics(): Promise<{ depth: number; sent: number; dropped: number }> {
  const response = await fetch(`${platform.gatewayUrl}/metrics`);
  const text = await response.text();
  const sum = (pattern: RegExp): number =>
    [...text.matchAll(pattern)].reduce((total, match) => total + Number(match[1]), 0);
  return {
    depth: sum(/^kiln_gateway_shadow_queue_depth(?:\{[^}]*\})? (\S+)$/gm),
    sent: sum(
      /^kiln_gateway_shadow_copies_total\{(?=[^}]*endpoint="shadowed")(?=[^}]*outcome="sent")[^}]*\} (\S+)$/gm,
    ),
    dropped: sum(
      /^kiln_gateway_shadow_copies_total\{(?=[^}]*endpoint="shadowed")(?=[^}]*outcome="dropped")[^}]*\} (\S+)$/gm,
    ),
  };
}

function onlyV1(answer: LoadAnswer): string | null {
  if (answer.version !== 1) return `answered by version ${answer.version}, not the primary v1`;
  return checkSliceAnswer(answer);
}

test('shadows that fail or disagree never change the primary answer; the report counts them', async () => {
  await api.deploy(ENDPOINT, MODEL, 1);
  await waitForGatewayReady(platform.gatewayUrl, ENDPOINT);
  const load = new SteadyLoad({
    url: `${platform.gatewayUrl}/v2/models/${ENDPOINT}/infer`,
    clients: 4,
    maxRatePerSecond: 300,
    next: cyclingRequests(sliceRows.map((_, i) => i)),
    check: onlyV1,
  }).start();
  try {
    await load.waitForAnswers(1);
    // With the real CLI: `kiln shadow set ENDPOINT tm:2 tm:3` (every request copied to each).
    await cli.ok(['shadow', 'set', ENDPOINT, `${MODEL}:2`, `${MODEL}:3`, '--reason', 'e2e']);
    let entries: ShadowEntry[] = [];
    const deadline = Date.now() + 180_000;
    const enough = (e: ShadowEntry | undefined): boolean =>
      e !== undefined && e.compared + e.errors >= 400;
    for (;;) {
      entries = await report();
      if (
        enough(entries.find((e) => e.version === 2)) &&
        enough(entries.find((e) => e.version === 3))
      )
        break;
      assert.ok(Date.now() < deadline, `shadow counts never grew: ${JSON.stringify(entries)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    console.log(`shadow report: ${JSON.stringify(entries)}`);
    const v2 = entries.find((e) => e.version === 2);
    const v3 = entries.find((e) => e.version === 3);
    assert.ok(v2 !== undefined && v3 !== undefined);

    // v2 answers exactly as v1 where it answers, and fails the de copies (~1 in 10).
    assert.equal(v2.agreed, v2.compared, 'v2 agrees wherever it answers');
    const v2FailShare = v2.errors / (v2.errors + v2.compared);
    assert.ok(v2FailShare > 0.05 && v2FailShare < 0.15, `v2 failed ${v2FailShare} of its copies`);
    // v3 never fails, and disagrees on the de copies (~1 in 10) by 10.
    assert.equal(v3.errors, 0);
    const v3Disagree = (v3.compared - v3.agreed) / v3.compared;
    assert.ok(v3Disagree > 0.05 && v3Disagree < 0.15, `v3 disagreed on ${v3Disagree}`);
    assert.ok(Math.abs((v3.absDiff.max ?? 0) - 10) < 1e-3, `max |diff| ${v3.absDiff.max}`);
    for (const entry of [v2, v3]) assert.ok(entry.sent + entry.dropped <= entry.offered);
    const printed = await cli.ok(['shadow', 'report', ENDPOINT]);
    console.log(printed);
    assert.match(printed, new RegExp(`${MODEL}:2`));
    assert.match(printed, new RegExp(`${MODEL}:3`));

    const cleared = await call(platform.url, 'DELETE', `/api/v1/endpoints/${ENDPOINT}/shadows`);
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body));
    await load.waitForAnswers(1);

    // Nothing is queued forever: once the copies stop, the gateway's shadow queue drains to
    // empty and every copy it took has a fate, sent or dropped (the drops are the bounded
    // queue's answer to more copies than the shadows take), the report agreeing.
    const settleBy = Date.now() + 60_000;
    let metrics = { depth: Number.NaN, sent: 0, dropped: 0 };
    for (;;) {
      metrics = await shadowMetrics();
      entries = await report();
      const reported = entries.reduce((sum, e) => sum + e.sent + e.dropped, 0);
      if (metrics.depth === 0 && metrics.sent + metrics.dropped === reported) break;
      assert.ok(
        Date.now() < settleBy,
        `shadow queue not drained or not accounted for: ${JSON.stringify({ metrics, entries })}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.equal(entries[0]?.offered, entries[1]?.offered, 'both shadows were offered every copy');
    console.log(
      `shadow copies: ${entries.map((e) => `v${e.version} offered ${e.offered}, sent ${e.sent}, dropped ${e.dropped}`).join('; ')}`,
    );
  } finally {
    const summary = await load.stop();
    assert.deepEqual(
      summary.failures.slice(0, 20),
      [],
      `${summary.failures.length} of ${summary.sent} primary answers failed or were not v1's`,
    );
  }
});
