// Outcomes joined to the gateways' predictions over the API (issue 15, D): per-item results,
// the quality report against figures computed by hand, slices, bad input, and the gauges.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, testPlatform } from '../../helpers/platform.ts';
import { FakeClock } from '../../helpers/temp-dir.ts';
import { placeholderVersion } from '../../helpers/stored-version.ts';
import type { QualityReport } from '../../../src/control/observability/quality-service.ts';

const windowMs = 60_000;

async function platformWith(clock: FakeClock) {
  const platform = await testPlatform({ clock });
  const store = platform.registry.store;
  await store.createModel({ name: 'fraud-model', team: 'default', description: '' });
  await store.createVersion('fraud-model', placeholderVersion());
  await store.createVersion('fraud-model', placeholderVersion());
  const endpoint = (name: string, observability: object) =>
    store.putEndpoint({
      name,
      team: 'default',
      model: 'fraud-model',
      version: 1,
      ref: '1',
      replicas: 0,
      config: { observability },
    });
  await endpoint('fraud', {
    quality: {
      task: 'classification',
      threshold: 0.5,
      joinWindowMs: windowMs,
      sliceKey: 'country',
      slicePath: null,
      output: null,
    },
  });
  await endpoint('price', {
    quality: {
      task: 'regression',
      threshold: 0,
      joinWindowMs: windowMs,
      sliceKey: null,
      slicePath: null,
      output: null,
    },
  });
  await endpoint('plain', {});
  return platform;
}

test('outcomes join to predictions; the report equals accuracy, AUC and log-loss by hand', async () => {
  const clock = new FakeClock();
  const platform = await platformWith(clock);
  const url = platform.url;
  const now = clock.now();
  // [id, version, score, slice, outcome]
  const rows: [string, number, number, string, number][] = [
    ['r1', 1, 0.9, 'de', 1],
    ['r2', 1, 0.2, 'de', 0],
    ['r3', 1, 0.6, 'fr', 0],
    ['r4', 1, 0.4, 'fr', 1],
    ['r5', 2, 0.8, 'de', 1],
    ['r6', 2, 0.1, 'fr', 0],
  ];
  const predictions = rows.map(([requestId, version, prediction, slice]) => ({
    endpoint: 'fraud',
    requestId,
    model: 'fraud-model',
    version,
    prediction,
    slice,
    atMs: now - 1_000,
  }));
  predictions.push({ ...predictions[0]!, requestId: 'stale', atMs: now - windowMs - 1 });
  const ingest = await call(url, 'POST', '/api/v1/quality/predictions', {
    gateway: 'test',
    predictions,
  });
  assert.equal(ingest.status, 202, JSON.stringify(ingest.body));
  assert.deepEqual(ingest.body, { added: 7 });

  const outcomes = [
    ...rows.map(([requestId, , , , value]) => ({ requestId, value })),
    { requestId: 'nobody', value: 1 },
    { requestId: 'stale', value: true },
    { requestId: 'r1', value: 1 },
  ];
  const joined = await call(url, 'POST', '/api/v1/endpoints/fraud/outcomes', { outcomes });
  assert.equal(joined.status, 200, JSON.stringify(joined.body));
  const body = joined.body as {
    counts: Record<string, number>;
    results: { requestId: string; status: string }[];
  };
  assert.deepEqual(body.counts, { joined: 6, unknown: 1, expired: 1, duplicate: 1 });
  assert.deepEqual(body.results.slice(6), [
    { requestId: 'nobody', status: 'unknown' },
    { requestId: 'stale', status: 'expired' },
    { requestId: 'r1', status: 'duplicate' },
  ]);
  const again = await call(url, 'POST', '/api/v1/endpoints/fraud/outcomes', {
    outcomes: [{ requestId: 'r2', value: 1 }],
  });
  assert.deepEqual((again.body as typeof body).counts, {
    joined: 0,
    unknown: 0,
    expired: 0,
    duplicate: 1,
  });

  const report = await call(url, 'GET', '/api/v1/endpoints/fraud/quality?since=1h');
  assert.equal(report.status, 200, JSON.stringify(report.body));
  const q = report.body as QualityReport;
  assert.equal(q.task, 'classification');
  // By hand (threshold 0.5): labels 1,0,1,0,1,0 vs outcomes 1,0,0,1,1,0 → 4/6; AUC: of the 9
  // positive/negative pairs the positive scores higher in 8; log-loss as below.
  assert.ok(q.overall.task === 'classification');
  assert.equal(q.overall.count, 6);
  assert.equal(q.overall.accuracy, 4 / 6);
  assert.ok(Math.abs(q.overall.auc! - 8 / 9) < 1e-12);
  const logLoss =
    -(
      Math.log(0.9) +
      Math.log(0.8) +
      Math.log(0.4) +
      Math.log(1 - 0.2) +
      Math.log(1 - 0.6) +
      Math.log(1 - 0.1)
    ) / 6;
  assert.ok(Math.abs(q.overall.logLoss! - logLoss) < 1e-12);
  // Version 1: r1..r4 → labels 1,0,1,0 vs 1,0,0,1: 2/4; version 2: r5, r6 both right.
  assert.deepEqual(
    q.versions.map((v) => [v.version, v.count, v.task === 'classification' ? v.accuracy : null]),
    [
      [1, 4, 0.5],
      [2, 2, 1],
    ],
  );
  assert.equal(q.slices, undefined);

  const sliced = await call(url, 'GET', '/api/v1/endpoints/fraud/quality?slice=country');
  const s = sliced.body as QualityReport;
  assert.equal(s.sliceKey, 'country');
  // de: r1 (0.9,1) r2 (0.2,0) r5 (0.8,1): all right; fr: r3 (0.6,0) r4 (0.4,1) r6 (0.1,0): 1/3.
  assert.deepEqual(
    s.slices?.map((slice) => [
      slice.slice,
      slice.overall.count,
      slice.overall.task === 'classification' ? slice.overall.accuracy : null,
    ]),
    [
      ['de', 3, 1],
      ['fr', 3, 1 / 3],
    ],
  );
  const badSlice = await call(url, 'GET', '/api/v1/endpoints/fraud/quality?slice=region');
  assert.equal(badSlice.status, 400);
  assert.match(JSON.stringify(badSlice.body), /unknown slice key region.*country/);

  const metrics = await (await fetch(`${url}/metrics`)).text();
  assert.match(
    metrics,
    /kiln_quality_accuracy\{endpoint="fraud",version="1",slice="_all"\} 0\.5\b/,
  );
  assert.match(metrics, /kiln_quality_accuracy\{endpoint="fraud",version="2",slice="de"\} 1\b/);
  assert.match(metrics, /kiln_quality_joined\{endpoint="fraud",version="1",slice="_all"\} 4\b/);
  assert.match(metrics, /kiln_outcomes_total\{endpoint="fraud",status="expired"\} 1\b/);
});

test('regression outcomes give MAE and RMSE by hand', async () => {
  const clock = new FakeClock();
  const platform = await platformWith(clock);
  const url = platform.url;
  const predictions = [
    ['a', 3, 1],
    ['b', 1, 2],
    ['c', 5, 5],
    ['d', 0, 4],
  ] as const;
  await call(url, 'POST', '/api/v1/quality/predictions', {
    gateway: 'test',
    predictions: predictions.map(([requestId, prediction]) => ({
      endpoint: 'price',
      requestId,
      model: 'fraud-model',
      version: 1,
      prediction,
      slice: null,
      atMs: clock.now(),
    })),
  });
  clock.advance(10_000);
  const joined = await call(url, 'POST', '/api/v1/endpoints/price/outcomes', {
    outcomes: predictions.map(([requestId, , value]) => ({ requestId, value })),
  });
  assert.equal(joined.status, 200);
  const q = (await call(url, 'GET', '/api/v1/endpoints/price/quality')).body as QualityReport;
  assert.ok(q.overall.task === 'regression');
  assert.equal(q.overall.mae, 7 / 4);
  assert.equal(q.overall.rmse, Math.sqrt(21 / 4));
});

test('bad outcomes: unknown endpoint 404, malformed 400 naming the item, no quality settings 400', async () => {
  const clock = new FakeClock();
  const platform = await platformWith(clock);
  const url = platform.url;
  const missing = await call(url, 'POST', '/api/v1/endpoints/nope/outcomes', {
    outcomes: [{ requestId: 'a', value: 1 }],
  });
  assert.equal(missing.status, 404);
  assert.match(JSON.stringify(missing.body), /KILN_ENDPOINT_NOT_FOUND/);
  const cases: [unknown, RegExp][] = [
    [[], /must be an object/],
    [{ outcomes: [] }, /outcomes is empty/],
    [{ outcomes: [{ requestId: 'a', value: 2 }] }, /outcomes\[0\]\.value must be 0 or 1/],
    [{ outcomes: [{ requestId: 'a', value: 1 }, { value: 1 }] }, /outcomes\[1\]\.requestId/],
    [
      { outcomes: [{ requestId: 'a', value: 1, extra: 1 }] },
      /outcomes\[0\] has unknown field extra/,
    ],
    [{ outcomes: [], more: 1 }, /unknown field more/],
  ];
  for (const [body, pattern] of cases) {
    const reply = await call(url, 'POST', '/api/v1/endpoints/fraud/outcomes', body);
    assert.equal(reply.status, 400, JSON.stringify(body));
    const text = JSON.stringify(reply.body);
    assert.match(text, /KILN_OUTCOME_INVALID/);
    assert.match(text, pattern);
  }
  const regression = await call(url, 'POST', '/api/v1/endpoints/price/outcomes', {
    outcomes: [{ requestId: 'a', value: 'high' }],
  });
  assert.match(JSON.stringify(regression.body), /finite number for a regression endpoint/);
  const off = await call(url, 'POST', '/api/v1/endpoints/plain/outcomes', {
    outcomes: [{ requestId: 'a', value: 1 }],
  });
  assert.equal(off.status, 400);
  assert.match(JSON.stringify(off.body), /no quality settings; turn them on/);
  const offReport = await call(url, 'GET', '/api/v1/endpoints/plain/quality');
  assert.equal(offReport.status, 400);
  const badSince = await call(url, 'GET', '/api/v1/endpoints/fraud/quality?since=yesterday');
  assert.equal(badSince.status, 400);
});
