// Shadow copies (issue 13): sent after the primary's answer, compared with it and counted;
// a shadow that hangs, crashes, errors or answers otherwise never changes a primary answer,
// and under overload copies are dropped (counted), not queued without end.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ShadowCounts } from '../../src/protocol/traffic/traffic-report.ts';
import { fakeWorker, infer, snapshot, testGateway, type Reply } from './gateway-harness.ts';
import {
  answerOf,
  policyEndpoint,
  shadowOf,
  stubControlPlane,
  variant,
  type StubControlPlane,
} from './traffic-harness.ts';

interface ShadowTotals {
  offered: number;
  sent: number;
  dropped: number;
  errors: number;
  compared: number;
  agreed: number;
  diffs: number;
  diffSum: number;
  latencies: number;
  primaryLatencies: number;
}

function shadowTotals(control: StubControlPlane, version: number): ShadowTotals {
  const t: ShadowTotals = {
    offered: 0,
    sent: 0,
    dropped: 0,
    errors: 0,
    compared: 0,
    agreed: 0,
    diffs: 0,
    diffSum: 0,
    latencies: 0,
    primaryLatencies: 0,
  };
  for (const report of control.reports) {
    for (const endpoint of report.endpoints) {
      for (const shadow of endpoint.shadows) {
        if (shadow.version !== version) continue;
        const c: ShadowCounts = shadow.counts;
        t.offered += c.offered;
        t.sent += c.sent;
        t.dropped += c.dropped;
        t.errors += c.errors;
        t.compared += c.compared;
        t.agreed += c.agreed;
        t.diffs += c.absDiff.count;
        t.diffSum += c.absDiff.mean * c.absDiff.count;
        t.latencies += c.latencyMs.positive.reduce((s, [, n]) => s + n, c.latencyMs.zeroCount);
        t.primaryLatencies += c.primaryLatencyMs.positive.reduce(
          (s, [, n]) => s + n,
          c.primaryLatencyMs.zeroCount,
        );
      }
    }
  }
  return t;
}

test('shadows that hang, crash, fail or answer otherwise never change the primary answers; each copy is compared and counted', async () => {
  const control = await stubControlPlane();
  const primary = await fakeWorker('ok', answerOf(0.25));
  const hangs = await fakeWorker('hang');
  const crashes = await fakeWorker('destroy');
  const fails = await fakeWorker('ok', { error: 'shadow broke' }, 500);
  const differs = await fakeWorker('ok', answerOf(0.5));
  const agrees = await fakeWorker('ok', answerOf(0.25 + 1e-7));
  const gateway = await testGateway(
    snapshot(1, [
      policyEndpoint([variant(primary, 3, 100)], {
        shadows: [
          shadowOf(hangs, 5, 1),
          shadowOf(crashes, 6, 1),
          shadowOf(fails, 7, 1),
          shadowOf(differs, 8, 1),
          shadowOf(agrees, 9, 1),
        ],
      }),
    ]),
    {
      more: {
        controlUrl: control.url,
        reportTraffic: true,
        trafficReportIntervalMs: 50,
        shadowTimeoutMs: 300,
      },
    },
  );
  const n = 10;
  const replies: Reply[] = [];
  for (let i = 0; i < n; i++) replies.push(await infer(gateway.url));
  for (const reply of replies) {
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.json, answerOf(0.25), 'the primary answer, untouched');
    assert.equal(reply.headers.get('kiln-model-version'), '3');
  }
  await control.waitFor(
    () =>
      [5, 6, 7].every((v) => shadowTotals(control, v).errors === n) &&
      [8, 9].every((v) => shadowTotals(control, v).compared === n),
  );
  for (const version of [5, 6, 7, 8, 9]) {
    const t = shadowTotals(control, version);
    assert.equal(t.offered, n, `shadow v${version} offered`);
    assert.equal(t.sent, n, `shadow v${version} sent`);
    assert.equal(t.dropped, 0);
  }
  assert.equal(shadowTotals(control, 8).agreed, 0);
  assert.ok(
    Math.abs(shadowTotals(control, 8).diffSum / shadowTotals(control, 8).diffs - 0.25) < 1e-9,
  );
  assert.equal(shadowTotals(control, 9).agreed, n, 'within 1e-6 + 1e-4 relative agrees');
  assert.equal(shadowTotals(control, 9).latencies, n);
  assert.equal(shadowTotals(control, 9).primaryLatencies, n);
  assert.equal(shadowTotals(control, 7).compared, 0, 'a 500 is an error, not compared');
  // The primary's own counts: every request a 200, none an error.
  const versions = control.reports.flatMap((r) => r.endpoints).flatMap((e) => e.versions);
  assert.equal(
    versions.reduce((sum, v) => sum + v.overall.requests, 0),
    n,
  );
  assert.equal(
    versions.reduce((sum, v) => sum + v.overall.errors, 0),
    0,
  );
  // Copies went to the shadows as v2 requests on the endpoint's infer path.
  assert.equal(differs.received.length, n);
  assert.equal(differs.received[0]!.url, '/v2/models/fraud/infer');
  assert.equal(differs.received[0]!.headers['kiln-shadow'], '1');
});

test('under overload a hung shadow costs a bounded queue: further copies are dropped and counted, primaries keep being served', async () => {
  const primary = await fakeWorker('ok', answerOf(0.25));
  const hangs = await fakeWorker('hang');
  const gateway = await testGateway(
    snapshot(1, [policyEndpoint([variant(primary, 3, 100)], { shadows: [shadowOf(hangs, 5, 1)] })]),
    {
      more: {
        shadowQueueCapacity: 3,
        shadowConcurrency: 1,
        // Far longer than the test: the one copy in flight stays there.
        shadowTimeoutMs: 600_000,
      },
    },
  );
  const n = 30;
  for (let i = 0; i < n; i++) {
    const reply = await infer(gateway.url);
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.json, answerOf(0.25));
  }
  await hangs.waitForRequests(1);
  const text = await gateway.metricsText();
  const metric = (outcome: string): number =>
    Number(
      new RegExp(
        `kiln_gateway_shadow_copies_total\\{endpoint="fraud",outcome="${outcome}"\\} (\\d+)`,
      ).exec(text)?.[1] ?? 0,
    );
  assert.equal(metric('sent'), 1, 'one copy in flight (concurrency 1)');
  assert.equal(metric('dropped'), n - 1 - 3, 'the rest beyond the queue of 3');
  assert.match(text, /kiln_gateway_shadow_queue_depth 3/);
  assert.equal(hangs.received.length, 1);
});

test('a shadow sampled at 0.3 gets about 30 % of the copies; no shadow ready: copies dropped', async () => {
  const control = await stubControlPlane();
  const primary = await fakeWorker('ok', answerOf(0.25));
  const sampled = await fakeWorker('ok', answerOf(0.25));
  const gateway = await testGateway(
    snapshot(1, [
      policyEndpoint([variant(primary, 3, 100)], {
        shadows: [shadowOf(sampled, 5, 0.3), { ...shadowOf(sampled, 6, 1), replicas: [] }],
      }),
    ]),
    { more: { controlUrl: control.url, reportTraffic: true, trafficReportIntervalMs: 50 } },
  );
  const n = 400;
  for (let i = 0; i < n; i++) assert.equal((await infer(gateway.url)).status, 200);
  // Every copy dispatched (the queue empty) and each one counted once it is done.
  for (;;) {
    const text = await gateway.metricsText();
    const sent = Number(
      /kiln_gateway_shadow_copies_total\{endpoint="fraud",outcome="sent"\} (\d+)/.exec(text)?.[1] ??
        0,
    );
    const queued = /kiln_gateway_shadow_queue_depth 0/.test(text);
    if (queued && sent > 0 && shadowTotals(control, 5).offered === sent) {
      if (shadowTotals(control, 6).dropped === n) break;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const offered = shadowTotals(control, 5).offered;
  // Binomial(400, 0.3): mean 120, sd 9.2.
  assert.ok(Math.abs(offered - 120) < 45, `${offered} copies of ${n}`);
  assert.equal(shadowTotals(control, 5).agreed, offered);
  assert.equal(sampled.received.length, offered);
});
