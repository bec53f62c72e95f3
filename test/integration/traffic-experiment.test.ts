// An A/B experiment through the real gateway and workers (issue 13): v1 (control) against v3,
// 50/50, users keyed by `kiln-user`. Starting and stopping it under a steady keyed load
// fails no request; while it runs every user is answered by the variant the sticky hash
// (salted with the experiment's id) gives; outcomes posted by user land on that same variant,
// and the report's rate per variant and its two-proportion z statistic equal what this test
// computes by hand from the outcomes it posted (pooled z: Fleiss, Levin & Paik, Statistical
// Methods for Rates and Proportions, 3rd ed., 2003, §2.7). Stopping hands the endpoint back
// to its stable version.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileTrafficSplit } from '../../src/traffic/traffic-split.ts';
import { probeVersion } from '../helpers/model-version.ts';
import { call, testPlatform } from '../helpers/platform.ts';
import {
  checkSliceAnswer,
  otherRows,
  registerSliceModels,
  sliceBody,
} from '../helpers/slice-models.ts';
import { SteadyLoad } from '../helpers/steady-load.ts';
import { TrafficApi, waitForGatewayReady } from '../helpers/traffic-api.ts';

const platform = await testPlatform({ gateway: true });
const api = new TrafficApi(platform.url);
const MODEL = 'tm';
const ENDPOINT = 'ab';
const USERS = 300;
await registerSliceModels(platform.url, MODEL);

const variants = [
  { model: MODEL, version: 1, weight: 50 },
  { model: MODEL, version: 3, weight: 50 },
];
const user = (i: number): string => `shopper-${i}`;
/** A non-de row for user i (v1 and v3 answer the same there). */
const rowOf = (i: number): number => otherRows[i % otherRows.length] ?? 1;

interface ReportBody {
  variants: { variant: string; requests: number }[];
  metrics: {
    metric: string;
    variants: { variant: string; count: number; mean: number | null }[];
    comparisons: { ok: boolean; test?: string; statistic?: number; effect?: number }[];
  }[];
}

test('an experiment: sticky users, outcomes on their variant, a report that matches by hand, no request lost', async () => {
  await api.deploy(ENDPOINT, MODEL, 1);
  await waitForGatewayReady(platform.gatewayUrl, ENDPOINT);
  const load = new SteadyLoad({
    url: `${platform.gatewayUrl}/v2/models/${ENDPOINT}/infer`,
    clients: 4,
    maxRatePerSecond: 300,
    next: (i) => ({
      body: sliceBody(rowOf(i % USERS)),
      headers: { 'kiln-user': user(i % USERS) },
      tag: rowOf(i % USERS),
    }),
    check: checkSliceAnswer,
  }).start();
  try {
    await load.waitForOnly(1);
    const created = await call(platform.url, 'POST', '/api/v1/experiments', {
      endpoint: ENDPOINT,
      name: 'e2e-ab',
      variants,
      reason: 'e2e: v3 against v1',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const experiment = created.body as { id: string; salt: string };
    const compiled = compileTrafficSplit({
      endpoint: ENDPOINT,
      salt: experiment.salt,
      versions: variants,
    });
    assert.ok(compiled.ok);
    const split = compiled.split;
    await load.waitForAnswers(3);

    // Every user, asked in turn, is on its sticky variant.
    const variantOf = new Map<number, number>();
    for (let i = 0; i < USERS; i++) {
      const answer = await probeVersion(platform.gatewayUrl, ENDPOINT, sliceBody(rowOf(i)), {
        'kiln-user': user(i),
      });
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      const expected = split.pick(user(i)).version;
      assert.equal(answer.version, expected, `${user(i)} is on v${expected}`);
      variantOf.set(i, expected);
    }

    // Outcomes by user: v1's users convert 2 in 10, v3's 4 in 10 (by user index).
    const converted = (i: number): number => (i % 10 < (variantOf.get(i) === 1 ? 2 : 4) ? 1 : 0);
    const outcomes = Array.from({ length: USERS }, (_, i) => ({
      user: user(i),
      metric: 'converted',
      kind: 'rate',
      value: converted(i),
    }));
    const posted = await call(
      platform.url,
      'POST',
      `/api/v1/experiments/${experiment.id}/outcomes`,
      {
        outcomes,
      },
    );
    assert.ok(posted.status === 200 || posted.status === 202, JSON.stringify(posted.body));

    const tally = (version: number): { n: number; x: number } => {
      const users = [...variantOf].filter(([, v]) => v === version).map(([i]) => i);
      return { n: users.length, x: users.reduce((sum, i) => sum + converted(i), 0) };
    };
    const control = tally(1);
    const treated = tally(3);
    const pooled = (control.x + treated.x) / (control.n + treated.n);
    const z =
      (treated.x / treated.n - control.x / control.n) /
      Math.sqrt(pooled * (1 - pooled) * (1 / control.n + 1 / treated.n));

    const reported = await call(platform.url, 'GET', `/api/v1/experiments/${experiment.id}/report`);
    assert.equal(reported.status, 200, JSON.stringify(reported.body));
    const report = reported.body as ReportBody;
    console.log(`experiment report: ${JSON.stringify(report.metrics)}`);
    const metric = report.metrics.find((m) => m.metric === 'converted');
    assert.ok(metric !== undefined);
    const summary = (variant: string) => metric.variants.find((v) => v.variant === variant);
    assert.equal(summary(`${MODEL}:1`)?.count, control.n);
    assert.equal(summary(`${MODEL}:3`)?.count, treated.n);
    assert.ok(Math.abs((summary(`${MODEL}:1`)?.mean ?? -1) - control.x / control.n) < 1e-12);
    assert.ok(Math.abs((summary(`${MODEL}:3`)?.mean ?? -1) - treated.x / treated.n) < 1e-12);
    const comparison = metric.comparisons[0];
    assert.ok(comparison?.ok === true, JSON.stringify(metric.comparisons));
    assert.equal(comparison.test, 'two-proportion-z');
    assert.ok(
      Math.abs((comparison.statistic ?? 0) - z) < 1e-9,
      `z ${comparison.statistic} vs ${z}`,
    );
    // The gateways' counts arrive in their reports (every second): wait for both variants'.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const again = await call(platform.url, 'GET', `/api/v1/experiments/${experiment.id}/report`);
      const traffic = (again.body as ReportBody).variants;
      if (traffic.length === 2 && traffic.every((v) => v.requests > 0)) break;
      assert.ok(
        Date.now() < deadline,
        `variant requests never counted: ${JSON.stringify(traffic)}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 250));
    }

    const stopped = await call(platform.url, 'POST', `/api/v1/experiments/${experiment.id}/stop`, {
      reason: 'e2e: done',
    });
    assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
    await load.waitForOnly(1);
  } finally {
    const summary = await load.stop();
    assert.deepEqual(
      summary.failures.slice(0, 20),
      [],
      `${summary.failures.length} of ${summary.sent} requests failed`,
    );
  }
});
