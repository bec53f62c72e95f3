// Multi-window multi-burn-rate alerts (SRE workbook pairs: page 1 h & 5 min above 14.4,
// ticket 6 h & 30 min above 6) fire and resolve on a synthetic error series, evaluated on an
// injected clock: each minute's counts are known, so every burn rate is a hand computation.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SliMinute } from '../../../src/observability/slo/burn-rate.ts';
import { burnRate, windowCounts } from '../../../src/observability/slo/burn-rate.ts';
import { evaluateSlo, type AlertCondition } from '../../../src/observability/slo/slo-evaluation.ts';
import { alertTransitions } from '../../../src/observability/slo/alert-transitions.ts';
import { driftReadingsOf } from '../../../src/observability/slo/drift-readings.ts';
import type { SloAlertRecord } from '../../../src/store/slo-records.ts';
import type { SloConfig } from '../../../src/store/observability-config.ts';

const minute = 60_000;
const t0 = Date.parse('2026-12-01T00:00:00.000Z');
const slo: SloConfig = {
  availability: 0.999,
  latencyMs: null,
  latencyTarget: null,
  driftPsiCeiling: null,
  webhooks: [],
};

/** 1000 requests a minute; `errorsAt(i)` of them fail in minute i. */
function series(minutes: number, errorsAt: (i: number) => number): SliMinute[] {
  return Array.from({ length: minutes }, (_, i) => ({
    minuteMs: t0 + i * minute,
    requests: 1000,
    serverErrors: errorsAt(i),
    latencyTotal: 1000,
    latencyGood: 1000,
  }));
}

function active(conditions: readonly AlertCondition[]): string[] {
  return conditions.filter((c) => c.active).map((c) => c.alert);
}

test('burn rate of a window is its error ratio over the error budget', () => {
  const minutes = series(10, (i) => (i >= 5 ? 20 : 0));
  // Window [t0+5m, t0+10m): 5 × 20 bad of 5 × 1000 → 2 % errors / 0.1 % budget = 20.
  const counts = windowCounts(minutes, 'availability', t0 + 10 * minute, 5 * minute);
  assert.deepEqual(counts, { total: 5000, bad: 100 });
  assert.ok(Math.abs(burnRate(counts, 0.999) - 20) < 1e-9);
  assert.equal(burnRate({ total: 0, bad: 0 }, 0.999), 0);
});

test('a 30-minute outage at burn 50 tickets, then pages, and each resolves with its short window', () => {
  // 5 % errors (burn 50 over a 0.1 % budget) in minutes [120, 150), clean before and after.
  const minutes = series(300, (i) => (i >= 120 && i < 150 ? 50 : 0));
  let states: SloAlertRecord[] = [];
  const timeline: string[] = [];
  for (let m = 60; m <= 300; m += 1) {
    const nowMs = t0 + m * minute;
    const evaluation = evaluateSlo(slo, minutes, nowMs);
    const at = new Date(nowMs).toISOString();
    const { upserts, events } = alertTransitions('iris', states, evaluation.conditions, at);
    for (const event of events) timeline.push(`${m} ${event.alert} ${event.state}`);
    const next = new Map(states.map((s) => [s.alert, s]));
    for (const upsert of upserts) next.set(upsert.alert, { ...upsert, updatedAt: at });
    states = [...next.values()];
  }
  // By hand, with k bad minutes in a window of n minutes, burn = 50 k / n:
  // ticket fires when the 6 h window (all m minutes so far) has 50 (m - 120) / m > 6 → m = 137
  //   (its 30 min window: 50 × 17 / 30 = 28.3);
  // page fires when the 1 h window has 50 k / 60 > 14.4 → k = 18 → m = 138 (5 min: 50);
  // page resolves when its 5 min window burns <= 14.4: one bad minute of five burns 10 → m = 154
  //   (the 1 h burn is still 25);
  // ticket resolves when its 30 min window holds 50 k / 30 <= 6 → k = 3 → m = 177.
  assert.deepEqual(timeline, [
    '137 availability-ticket firing',
    '138 availability-page firing',
    '154 availability-page resolved',
    '177 availability-ticket resolved',
  ]);
});

test('a hard outage (50 % errors) pages within minutes and resolves within minutes of the fix', () => {
  const minutes = series(200, (i) => (i >= 100 && i < 120 ? 500 : 0));
  const fired = (m: number): string[] =>
    active(evaluateSlo(slo, minutes, t0 + m * minute).conditions);
  assert.deepEqual(fired(100), []);
  // Minute 100 counted (now = 101): 1 h window 500 / 60 000 → burn 8.3; 5 min: 500 / 5000 → 100.
  assert.deepEqual(fired(101), []);
  // Two bad minutes: 1 h burn 16.7 > 14.4 and 5 min burn 200 → page; 6 h (clean since t0, 101
  // minutes in it… [t0-? ] window holds 102 minutes): 1000 / 102 000 → 9.8 > 6; 30 min: 1000 /
  // 30 000 → 33 → ticket too.
  assert.deepEqual(fired(102), ['availability-page', 'availability-ticket']);
  assert.deepEqual(fired(119), ['availability-page', 'availability-ticket']);
  // Fixed at 120: the 5 min window still holds bad minutes until 125.
  assert.deepEqual(fired(124), ['availability-page', 'availability-ticket']);
  // At 125 the 5 min window [120, 125) is clean: the page resolves though the 1 h burn is high.
  assert.deepEqual(fired(125), ['availability-ticket']);
  // The ticket's 30 min window [120, 150) is clean at 150.
  assert.deepEqual(fired(149), ['availability-ticket']);
  assert.deepEqual(fired(150), []);
});

test('latency SLI: 200s over latencyMs burn the latency budget; no traffic burns nothing', () => {
  const latencySlo: SloConfig = { ...slo, availability: null, latencyMs: 200, latencyTarget: 0.99 };
  const minutes: SliMinute[] = Array.from({ length: 70 }, (_, i) => ({
    minuteMs: t0 + i * minute,
    requests: 100,
    serverErrors: 0,
    latencyTotal: 100,
    // Every answer slow from minute 60: burn 100 over a 1 % budget in the 5 min window.
    latencyGood: i >= 60 ? 0 : 100,
  }));
  const evaluation = evaluateSlo(latencySlo, minutes, t0 + 70 * minute);
  assert.deepEqual(active(evaluation.conditions), ['latency-page', 'latency-ticket']);
  const sli = evaluation.slis.find((s) => s.sli === 'latency');
  assert.deepEqual(
    sli?.windows.map((w) => [w.window, w.total, w.bad]),
    [
      ['5m', 500, 500],
      ['30m', 3000, 1000],
      ['1h', 6000, 1000],
      ['6h', 7000, 1000],
    ],
  );
  assert.deepEqual(active(evaluateSlo(latencySlo, [], t0).conditions), []);
});

test('drift ceiling: fires while a PSI is above it, lists the worst first, resolves below it', () => {
  const driftSlo: SloConfig = { ...slo, availability: null, driftPsiCeiling: 0.25 };
  const high = evaluateSlo(driftSlo, [], t0, [
    { version: 2, name: 'feature petal_length', psi: 0.4 },
    { version: 2, name: 'feature sepal_width', psi: 0.02 },
    { version: 2, name: 'output probabilities', psi: 0.9 },
  ]);
  const drift = high.conditions.find((c) => c.alert === 'drift');
  assert.equal(drift?.active, true);
  assert.deepEqual(
    drift?.detail.overCeiling?.map((r) => r.name),
    ['output probabilities', 'feature petal_length'],
  );
  const low = evaluateSlo(driftSlo, [], t0, [
    { version: 2, name: 'feature petal_length', psi: 0.1 },
  ]);
  assert.equal(low.conditions.find((c) => c.alert === 'drift')?.active, false);
});

test('an alert whose objective was removed resolves; a firing one keeps its start time', () => {
  const firing: SloAlertRecord = {
    endpoint: 'iris',
    alert: 'latency-page',
    severity: 'page',
    state: 'firing',
    since: '2026-12-01T00:00:00.000Z',
    summary: 'x',
    detail: {},
    updatedAt: '2026-12-01T00:00:00.000Z',
  };
  const gone = alertTransitions('iris', [firing], [], '2026-12-01T01:00:00.000Z');
  assert.deepEqual(
    gone.events.map((e) => [e.alert, e.state]),
    [['latency-page', 'resolved']],
  );
  const still = alertTransitions(
    'iris',
    [firing],
    [{ alert: 'latency-page', severity: 'page', active: true, summary: 'y', detail: {} }],
    '2026-12-01T01:00:00.000Z',
  );
  assert.deepEqual(still.events, []);
  assert.equal(still.upserts[0]?.since, '2026-12-01T00:00:00.000Z');
});

test("drift readings are read from the drift part's latest round: worst of skew and drift, insufficient skipped", () => {
  const latest = [
    {
      model: 'iris',
      version: 3,
      hasReference: true,
      groups: [
        {
          slice: null,
          items: [
            {
              name: 'petal_length',
              kind: 'feature',
              vsReference: { psi: 0.4, status: 'drift' },
              vsPrevious: { psi: 0.05, status: 'ok' },
            },
            {
              name: 'sepal_width',
              kind: 'feature',
              vsReference: { psi: 3, status: 'insufficient' },
              vsPrevious: null,
            },
            {
              name: 'probabilities',
              kind: 'output',
              vsReference: null,
              vsPrevious: { psi: 0.02, status: 'ok' },
            },
          ],
        },
        {
          slice: 'de',
          items: [
            {
              name: 'petal_length',
              kind: 'feature',
              vsReference: { psi: 0.3, status: 'drift' },
              vsPrevious: null,
            },
          ],
        },
      ],
    },
    'not a version',
  ];
  assert.deepEqual(driftReadingsOf(latest), [
    { version: 3, name: 'feature petal_length', psi: 0.4 },
    { version: 3, name: 'output probabilities', psi: 0.02 },
    { version: 3, name: 'feature petal_length (slice de)', psi: 0.3 },
  ]);
  assert.deepEqual(driftReadingsOf(undefined), []);
});
