// The experiment report (pure): per-variant traffic from observations, and per outcome
// metric the comparison with the control, checked against two textbook examples computed by
// hand (textbook-examples.ts), plus the cases the data cannot answer yet.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  buildExperimentReport,
  defaultReportOptions,
  type ComparisonResult,
} from '../../../src/control/traffic/experiment-report.ts';
import { reportOptions } from '../../../src/control/api/routes-experiments.ts';
import type { ExperimentRecord, OutcomeAggregate } from '../../../src/store/traffic-records.ts';
import type { VersionObservations } from '../../../src/traffic/canary-analysis.ts';
import { HistogramSketch } from '../../../src/traffic/histogram-sketch.ts';
import { RunningMoments } from '../../../src/traffic/running-moments.ts';
import { assertClose } from '../../traffic/statistics-reference.ts';
import { aspirin, binaryOutcomes, sleep } from './textbook-examples.ts';

const experiment: ExperimentRecord = {
  id: 'exp-1',
  endpoint: 'heart',
  name: 'aspirin',
  variants: [
    { model: 'm', version: 1, weight: 50 },
    { model: 'm', version: 2, weight: 50 },
  ],
  salt: 'exp-1',
  keyPath: null,
  state: 'running',
  createdBy: 'test',
  createdAt: '2026-01-01T00:00:00.000Z',
  stoppedAt: null,
};

function aggregate(
  variant: string,
  metric: string,
  kind: 'rate' | 'mean',
  values: number[],
): OutcomeAggregate {
  return {
    experimentId: 'exp-1',
    variant,
    metric,
    kind,
    moments: RunningMoments.of(values).snapshot(),
    updatedAt: '2026-01-01T00:00:00.000Z',
  };
}

const textbookOutcomes = [
  aggregate('m:1', 'infarction', 'rate', binaryOutcomes(189, 11034)),
  aggregate('m:2', 'infarction', 'rate', binaryOutcomes(104, 11037)),
  aggregate('m:1', 'sleep', 'mean', sleep.group1),
  aggregate('m:2', 'sleep', 'mean', sleep.group2),
];

function comparisonOf(
  report: ReturnType<typeof buildExperimentReport>,
  metric: string,
): ComparisonResult {
  const found = report.metrics.find((m) => m.metric === metric);
  assert.ok(found, `metric ${metric} in the report`);
  const comparison = found.comparisons[0];
  assert.ok(comparison?.ok === true, JSON.stringify(comparison));
  return comparison;
}

void test('a rate metric matches the Physicians’ Health Study worked by hand', () => {
  const report = buildExperimentReport({
    experiment,
    observations: new Map(),
    outcomes: textbookOutcomes,
    options: defaultReportOptions,
  });
  assert.equal(report.control, 'm:1');
  const c = comparisonOf(report, 'infarction');
  assert.equal(c.test, 'two-proportion-z');
  assert.deepEqual([c.control, c.variant], ['m:1', 'm:2']);
  assertClose(c.controlValue, 189 / 11034, 1e-12, 'control rate');
  assertClose(c.variantValue, 104 / 11037, 1e-12, 'variant rate');
  assertClose(c.effect, aspirin.effect, 1e-6, 'effect');
  assertClose(c.statistic, aspirin.z, 1e-5, 'z');
  assertClose(c.standardizedEffect, aspirin.cohenH, 1e-5, "Cohen's h");
  assertClose(c.pValue, aspirin.pValue, 2e-3, 'p-value');
  assertClose(c.interval[0], aspirin.interval[0], 1e-5, 'interval low');
  assertClose(c.interval[1], aspirin.interval[1], 1e-5, 'interval high');
  assert.equal(c.degreesOfFreedom, null);
  assert.equal(c.significant, true);
  assert.deepEqual(c.sampleSize, {
    ok: true,
    effect: c.effect,
    basis: 'observed',
    perGroup: aspirin.perGroup,
    remainingPerGroup: aspirin.remainingPerGroup,
  });
  const summary = report.metrics.find((m) => m.metric === 'infarction')?.variants;
  assert.deepEqual(
    summary?.map((s) => [s.variant, s.count]),
    [
      ['m:1', 11034],
      ['m:2', 11037],
    ],
  );
});

void test('a mean metric matches R’s t.test on the sleep data, worked by hand', () => {
  const report = buildExperimentReport({
    experiment,
    observations: new Map(),
    outcomes: textbookOutcomes,
    options: defaultReportOptions,
  });
  const c = comparisonOf(report, 'sleep');
  assert.equal(c.test, 'welch-t');
  assertClose(c.controlValue, sleep.means[0], 1e-12, 'control mean');
  assertClose(c.variantValue, sleep.means[1], 1e-12, 'variant mean');
  assertClose(c.effect, sleep.effect, 1e-12, 'effect');
  assertClose(c.statistic, sleep.t, 5e-5, 't');
  assertClose(c.standardizedEffect, sleep.cohenD, 1e-5, "Cohen's d");
  assertClose(c.degreesOfFreedom ?? NaN, sleep.degreesOfFreedom, 5e-5, 'df');
  assertClose(c.pValue, sleep.pValue, 1e-4, 'p-value');
  assertClose(c.interval[0], sleep.interval[0], 1e-6, 'interval low');
  assertClose(c.interval[1], sleep.interval[1], 1e-6, 'interval high');
  assert.equal(c.significant, false);
  assert.deepEqual(c.sampleSize, {
    ok: true,
    effect: c.effect,
    basis: 'observed',
    perGroup: sleep.perGroup,
    remainingPerGroup: sleep.remainingPerGroup,
  });
  assert.deepEqual(
    report.metrics.map((m) => m.metric),
    ['infarction', 'sleep'],
  );
});

void test('a minimum detectable effect replaces the observed one in the sample size', () => {
  const report = buildExperimentReport({
    experiment,
    observations: new Map(),
    outcomes: textbookOutcomes,
    options: { ...defaultReportOptions, mde: { sleep: 0.5 }, defaultMde: 0.002 },
  });
  // Sleep: (1.959964 + 0.841621)² × 7.2095556 / 0.5² = 226.3 → 227, 217 still needed.
  assert.deepEqual(comparisonOf(report, 'sleep').sampleSize, {
    ok: true,
    effect: 0.5,
    basis: 'mde',
    perGroup: 227,
    remainingPerGroup: 217,
  });
  // Infarction from 0.0171289 to 0.0191289 (+0.002): far more than collected.
  const rate = comparisonOf(report, 'infarction').sampleSize;
  assert.ok(rate.ok && rate.basis === 'mde' && rate.effect === 0.002);
  assert.ok(rate.ok && rate.perGroup > 11034 && rate.remainingPerGroup === rate.perGroup - 11034);
});

void test('what the data cannot answer yet is a message, never a NaN', () => {
  const report = buildExperimentReport({
    experiment,
    observations: new Map(),
    outcomes: [
      aggregate('m:1', 'revenue', 'mean', [3]),
      aggregate('m:2', 'revenue', 'mean', [1, 2, 3]),
      aggregate('m:1', 'clicked', 'rate', [0, 0, 0]),
      aggregate('m:2', 'clicked', 'rate', [0, 0]),
      aggregate('m:2', 'only-variant', 'rate', [1, 0]),
    ],
    options: defaultReportOptions,
  });
  const problems = Object.fromEntries(
    report.metrics.map((m) => [m.metric, m.comparisons.map((c) => (c.ok ? 'ok' : c.problem))]),
  );
  assert.deepEqual(problems, {
    clicked: ['both groups have rate 0: with no variation the z statistic is undefined'],
    'only-variant': ['control has no trials'],
    revenue: ['control needs at least 2 observations, has 1'],
  });
  assert.ok(!JSON.stringify(report).includes('NaN'));
  assert.deepEqual(report.metrics.find((m) => m.metric === 'revenue')?.variants[0], {
    variant: 'm:1',
    count: 1,
    mean: 3,
    sd: null,
  });
});

void test('variants report their observed requests, share, errors and latency', () => {
  const window = (requests: number, errors: number, latency: number) => {
    const latencyMs = new HistogramSketch(0.01);
    for (let i = 0; i < requests; i++) latencyMs.add(latency);
    return { requests, errors, latencyMs, outputs: new HistogramSketch(0.01) };
  };
  const observations = new Map<string, VersionObservations>([
    ['m:1', { overall: window(300, 3, 10) }],
    ['m:2', { overall: window(100, 0, 40) }],
    ['m:9', { overall: window(50, 0, 5) }], // not a variant (the stable version afterwards)
  ]);
  const report = buildExperimentReport({
    experiment,
    observations,
    outcomes: [],
    options: defaultReportOptions,
  });
  assert.deepEqual(
    report.variants.map((v) => [v.variant, v.weight, v.requests, v.share, v.errors, v.errorRate]),
    [
      ['m:1', 50, 300, 0.75, 3, 0.01],
      ['m:2', 50, 100, 0.25, 0, 0],
    ],
  );
  assertClose(report.variants[0]?.latencyMs?.p50 ?? NaN, 10, 0.01, 'p50');
  assertClose(report.variants[1]?.latencyMs?.p99 ?? NaN, 40, 0.01, 'p99');
  assert.deepEqual(report.metrics, []);

  const empty = buildExperimentReport({
    experiment,
    observations: new Map(),
    outcomes: [],
    options: defaultReportOptions,
  });
  assert.deepEqual(
    empty.variants.map((v) => [v.requests, v.share, v.errorRate, v.latencyMs]),
    [
      [0, null, null, null],
      [0, null, null, null],
    ],
  );
});

void test('report options read alpha, power and the MDE for all metrics or per metric', () => {
  assert.deepEqual(reportOptions({}), defaultReportOptions);
  assert.deepEqual(reportOptions({ alpha: 0.01, power: 0.9, mde: '0.02' }), {
    alpha: 0.01,
    power: 0.9,
    mde: {},
    defaultMde: 0.02,
  });
  assert.deepEqual(reportOptions({ mde: 'converted=0.02, revenue=-1.5,0.1' }).mde, {
    converted: 0.02,
    revenue: -1.5,
  });
  for (const bad of ['0', 'x', 'converted=', '=1', 'a=b']) {
    assert.throws(() => reportOptions({ mde: bad }), /mde: expected a non-zero number/, bad);
  }
});
