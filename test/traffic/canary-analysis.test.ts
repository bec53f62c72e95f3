// Canary analysis on seeded synthetic traffic: a healthy canary promotes, too little data waits
// (naming the scope), and a regression confined to one slice (errors on that slice's inputs;
// separately, outputs whose distribution shifts on that slice only) rolls back with that slice
// named while the overall figures stay within bounds. Bad input comes back as reasons.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createRandom, type Random } from '../../src/core/random.ts';
import {
  analyzeCanaryStep,
  type CanaryWindow,
  type VersionObservations,
} from '../../src/traffic/canary-analysis.ts';
import type { CanaryReason, CanaryVerdict } from '../../src/traffic/canary-reason.ts';
import {
  resolveCanaryThresholds,
  type CanaryThresholds,
} from '../../src/traffic/canary-thresholds.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import { assertClose, reference } from './statistics-reference.ts';

// Traffic shares of the slice key `country`; de is the small slice a regression hides in.
const countries = [
  ['de', 0.1],
  ['fr', 0.2],
  ['us', 0.5],
  ['br', 0.2],
] as const;
type Country = (typeof countries)[number][0];

interface Behaviour {
  readonly errorRate: (country: Country) => number;
  /** Median latency in ms; latencies are lognormal with sigma 0.35 (p99 about 2.26 x median). */
  readonly medianLatencyMs: (country: Country) => number;
  /** Mean of the logit of the output score; the score is sigmoid(N(mean, 1)). */
  readonly logitMean: (country: Country) => number;
}

const healthy: Behaviour = {
  errorRate: () => 0.003,
  medianLatencyMs: () => 12,
  logitMean: (country) => ({ de: -1, fr: -0.5, us: 0, br: 0.5 })[country],
};

const thresholds: CanaryThresholds = {
  maxErrorRate: 0.02,
  maxP99Ms: 50,
  minRequests: 1000,
  minSliceRequests: 300,
};

function standardNormal(random: Random): number {
  // Box-Muller; 1 - next() lies in (0, 1] so the logarithm is finite.
  return Math.sqrt(-2 * Math.log(1 - random.next())) * Math.cos(2 * Math.PI * random.next());
}

function emptyWindow(accuracy = 0.01): {
  requests: number;
  errors: number;
  latencyMs: HistogramSketch;
  outputs: HistogramSketch;
} {
  return {
    requests: 0,
    errors: 0,
    latencyMs: new HistogramSketch(accuracy),
    outputs: new HistogramSketch(accuracy),
  };
}

/** `numRequests` requests of one version through `behaviour`, summarised as a gateway would. */
function observe(seed: number, numRequests: number, behaviour: Behaviour): VersionObservations {
  const random = createRandom(seed);
  const overall = emptyWindow();
  const slices: Record<string, ReturnType<typeof emptyWindow>> = {};
  for (let i = 0; i < numRequests; i++) {
    let pick = random.next();
    let country: Country = 'br';
    for (const [name, share] of countries) {
      if (pick < share) {
        country = name;
        break;
      }
      pick -= share;
    }
    const slice = (slices[country] ??= emptyWindow());
    const latencyMs = behaviour.medianLatencyMs(country) * Math.exp(0.35 * standardNormal(random));
    const failed = random.next() < behaviour.errorRate(country);
    for (const window of [overall, slice]) {
      window.requests += 1;
      window.latencyMs.add(latencyMs);
      if (failed) window.errors += 1;
    }
    if (!failed) {
      const score = 1 / (1 + Math.exp(-(behaviour.logitMean(country) + standardNormal(random))));
      overall.outputs.add(score);
      slice.outputs.add(score);
    }
  }
  return { overall, slices };
}

function find(verdict: CanaryVerdict, check: CanaryReason['check'], scope: string): CanaryReason {
  const found = verdict.checks.find((reason) => reason.check === check && reason.scope === scope);
  assert.ok(found, `no ${check} check for ${scope} in ${JSON.stringify(verdict.checks)}`);
  return found;
}

const summary = (reasons: readonly CanaryReason[]): string[] =>
  reasons.map((reason) => `${reason.check} ${reason.scope} ${reason.outcome}`);

const baselineTraffic = observe(1, 20_000, healthy);

test('a healthy canary promotes: every check of every scope passes', () => {
  const verdict = analyzeCanaryStep({
    thresholds,
    sliceKey: 'country',
    baseline: baselineTraffic,
    canary: observe(2, 5_000, healthy),
  });
  assert.equal(verdict.decision, 'promote-step', JSON.stringify(verdict.reasons, null, 1));
  const scopes = [
    'overall',
    'slice country=br',
    'slice country=de',
    'slice country=fr',
    'slice country=us',
  ];
  assert.deepEqual(
    summary(verdict.checks),
    scopes.flatMap((scope) =>
      ['error-rate', 'p99-latency', 'output-psi'].map((check) => `${check} ${scope} pass`),
    ),
  );
  const psi = find(verdict, 'output-psi', 'slice country=de');
  assert.ok(psi.check === 'output-psi' && psi.psi !== null && psi.psi < 0.1);
  const p99 = find(verdict, 'p99-latency', 'overall');
  // Lognormal p99 = 12 exp(0.35 * 2.326) = 27.1 ms; the sketch is within 1%, the sample close.
  assert.ok(p99.check === 'p99-latency' && p99.canaryP99Ms !== null);
  assert.ok(Math.abs(p99.canaryP99Ms - 27.1) < 2, `p99 ${p99.canaryP99Ms}`);
});

test('errors on one slice only roll back, naming that slice, while the overall rate is within bounds', () => {
  const canary = observe(3, 5_000, {
    ...healthy,
    errorRate: (country) => (country === 'de' ? 0.1 : 0.003),
  });
  const verdict = analyzeCanaryStep({
    thresholds,
    sliceKey: 'country',
    baseline: baselineTraffic,
    canary,
  });
  assert.equal(verdict.decision, 'rollback');
  assert.deepEqual(summary(verdict.reasons), ['error-rate slice country=de breach']);
  const [reason] = verdict.reasons;
  assert.ok(reason?.check === 'error-rate' && reason.pValue !== null);
  assert.ok(reason.canaryErrorRate > 0.05 && reason.baselineErrorRate < 0.01);
  assert.ok(reason.pValue < 1e-6, `p ${reason.pValue}`);
  assert.equal(reason.maxErrorRate, 0.02);
  assert.match(reason.message, /^slice country=de: canary error rate 0\.\d+ \(\d+\/\d+\)/);
  // The whole-traffic figure alone would have let it through ...
  const overall = find(verdict, 'error-rate', 'overall');
  assert.ok(overall.check === 'error-rate' && overall.outcome === 'pass');
  assert.ok(overall.canaryErrorRate < 0.02, `overall ${overall.canaryErrorRate}`);
  // ... and does: the same traffic judged without slices promotes.
  const unsliced = analyzeCanaryStep({
    thresholds,
    baseline: { overall: baselineTraffic.overall },
    canary: { overall: canary.overall },
  });
  assert.equal(unsliced.decision, 'promote-step');
});

test('outputs shifted on one slice only roll back, naming that slice, while overall PSI stays within bounds', () => {
  const canary = observe(4, 5_000, {
    ...healthy,
    logitMean: (country) => (country === 'de' ? 0 : healthy.logitMean(country)),
  });
  const verdict = analyzeCanaryStep({
    thresholds,
    sliceKey: 'country',
    baseline: baselineTraffic,
    canary,
  });
  assert.equal(verdict.decision, 'rollback');
  assert.deepEqual(summary(verdict.reasons), ['output-psi slice country=de breach']);
  const [reason] = verdict.reasons;
  assert.ok(reason?.check === 'output-psi' && reason.psi !== null && reason.psi > 0.2);
  assert.equal(reason.maxPsi, 0.2);
  const overall = find(verdict, 'output-psi', 'overall');
  assert.ok(overall.check === 'output-psi' && overall.psi !== null);
  assert.ok(overall.outcome === 'pass' && overall.psi < 0.2, `overall PSI ${overall.psi}`);
  const unsliced = analyzeCanaryStep({
    thresholds,
    baseline: { overall: baselineTraffic.overall },
    canary: { overall: canary.overall },
  });
  assert.equal(unsliced.decision, 'promote-step');
});

test('a slow slice breaches p99 and rolls back', () => {
  const verdict = analyzeCanaryStep({
    thresholds,
    sliceKey: 'country',
    baseline: baselineTraffic,
    canary: observe(5, 5_000, {
      ...healthy,
      medianLatencyMs: (country) => (country === 'br' ? 30 : 12),
    }),
  });
  assert.equal(verdict.decision, 'rollback');
  const reason = find(verdict, 'p99-latency', 'slice country=br');
  assert.ok(reason.check === 'p99-latency' && reason.outcome === 'breach');
  assert.ok(reason.canaryP99Ms !== null && reason.canaryP99Ms > 50);
  assert.equal(find(verdict, 'p99-latency', 'slice country=de').outcome, 'pass');
});

test('too little data waits and names each scope that lacks it', () => {
  const early = analyzeCanaryStep({
    thresholds,
    sliceKey: 'country',
    baseline: baselineTraffic,
    canary: observe(6, 400, healthy),
  });
  assert.equal(early.decision, 'wait');
  assert.deepEqual(
    summary(early.reasons),
    ['overall', 'slice country=br', 'slice country=de', 'slice country=fr', 'slice country=us'].map(
      (scope) => `request-count ${scope} insufficient-data`,
    ),
  );
  const [overall] = early.reasons;
  assert.ok(overall?.check === 'request-count');
  assert.deepEqual(
    [overall.baselineRequests, overall.canaryRequests, overall.minRequests],
    [20_000, 400, 1000],
  );
  assert.match(overall.message, /overall: too few requests to judge \(baseline 20000, canary 400/);

  // Enough overall, but the 10% slice de (about 500 canary requests) is below 800.
  const sliceShort = analyzeCanaryStep({
    thresholds: { ...thresholds, minSliceRequests: 800 },
    sliceKey: 'country',
    baseline: baselineTraffic,
    canary: observe(2, 5_000, healthy),
  });
  assert.equal(sliceShort.decision, 'wait');
  assert.deepEqual(summary(sliceShort.reasons), [
    'request-count slice country=de insufficient-data',
  ]);
});

test('error rate: the one-sided two-proportion z-test on 200/1000 vs 250/1000 (p = 0.0037098)', () => {
  const window = (errors: number): CanaryWindow => ({ ...emptyWindow(), requests: 1000, errors });
  const judge = (extra: Partial<CanaryThresholds>, baseline: number, canary: number) =>
    analyzeCanaryStep({
      thresholds: { ...thresholds, maxErrorRate: 0.2, minRequests: 1000, ...extra },
      baseline: { overall: window(baseline) },
      canary: { overall: window(canary) },
    });
  const verdict = judge({}, 200, 250);
  // Rollback on the error rate alone; p99 and PSI have no data (empty sketches) and would wait.
  assert.equal(verdict.decision, 'rollback');
  const reason = find(verdict, 'error-rate', 'overall');
  assert.ok(reason.check === 'error-rate' && reason.pValue !== null);
  // Half the two-sided p of the textbook case in docs/traffic-statistics.md.
  assertClose(reason.pValue, reference.twoProportion.pValue / 2, 1e-9);
  assertClose(reason.pValue, 0.0037098, 1e-4);
  // Above maxErrorRate but not significant at alpha 0.001: not the canary's fault (yet).
  const strict = find(judge({ alpha: 0.001 }, 200, 250), 'error-rate', 'overall');
  assert.equal(strict.outcome, 'pass');
  assert.match(strict.message, /above maxErrorRate 0\.2 but not significantly above baseline/);
  // Baseline worse than the canary: both above the limit, the canary is not to blame.
  const better = find(judge({}, 300, 250), 'error-rate', 'overall');
  assert.ok(better.check === 'error-rate' && better.outcome === 'pass');
  assert.ok(better.pValue !== null && better.pValue > 0.99);
  // No errors anywhere: no variation, p is null, and the check passes.
  const clean = find(judge({}, 0, 0), 'error-rate', 'overall');
  assert.ok(clean.check === 'error-rate' && clean.outcome === 'pass' && clean.pValue === null);
  const waits = judge({}, 0, 0);
  assert.equal(waits.decision, 'wait');
  assert.deepEqual(summary(waits.reasons), [
    'p99-latency overall insufficient-data',
    'output-psi overall insufficient-data',
  ]);
});

test('bad input: a slice on one side only, sketches of different accuracy, counts out of range, bad thresholds', () => {
  const canary = observe(2, 5_000, healthy);
  const extraSlice = analyzeCanaryStep({
    thresholds,
    sliceKey: 'country',
    baseline: baselineTraffic,
    canary: { ...canary, slices: { ...canary.slices, jp: { ...emptyWindow(), requests: 40 } } },
  });
  assert.equal(extraSlice.decision, 'wait');
  assert.deepEqual(summary(extraSlice.reasons), ['input slice country=jp invalid-input']);
  const [oneSided] = extraSlice.reasons;
  assert.ok(oneSided?.check === 'input' && oneSided.problem === 'slice-on-one-side');
  assert.match(oneSided.message, /reported by the canary only \(40 requests\)/);

  // Outputs sketched at 2% on the canary, 1% on the baseline: PSI bins do not line up.
  const coarse = emptyWindow(0.02);
  coarse.requests = 2000;
  for (let i = 0; i < 2000; i++) {
    coarse.latencyMs.add(10 + (i % 7));
    coarse.outputs.add((i % 100) / 100);
  }
  const mismatch = analyzeCanaryStep({
    thresholds,
    baseline: { overall: baselineTraffic.overall },
    canary: { overall: coarse },
  });
  assert.equal(mismatch.decision, 'wait');
  assert.deepEqual(summary(mismatch.reasons), ['output-psi overall invalid-input']);
  const [psi] = mismatch.reasons;
  assert.ok(
    psi?.check === 'output-psi' && psi.invalidReason === 'bins-mismatch' && psi.psi === null,
  );

  const badCounts = analyzeCanaryStep({
    thresholds,
    baseline: { overall: baselineTraffic.overall },
    canary: { overall: { ...emptyWindow(), requests: 10, errors: 11 } },
  });
  assert.equal(badCounts.decision, 'wait');
  assert.deepEqual(summary(badCounts.reasons), ['input overall invalid-input']);
  assert.match(
    badCounts.reasons[0]?.message ?? '',
    /canary: successes 11 is outside \[0, trials = 10\]/,
  );

  const badThresholds = analyzeCanaryStep({
    thresholds: { maxErrorRate: 1.5, maxP99Ms: -1, minRequests: 0.5, alpha: 0, maxPsi: Number.NaN },
    baseline: baselineTraffic,
    canary,
  });
  assert.equal(badThresholds.decision, 'wait');
  const resolved = resolveCanaryThresholds({
    maxErrorRate: 1.5,
    maxP99Ms: -1,
    minRequests: 0.5,
    alpha: 0,
    maxPsi: Number.NaN,
  });
  assert.ok(!resolved.ok);
  assert.deepEqual(
    resolved.problems.map((problem) => problem.field),
    ['maxErrorRate', 'maxP99Ms', 'maxPsi', 'minRequests', 'minSliceRequests', 'alpha'],
  );
  assert.equal(badThresholds.reasons.length, 6);
  assert.match(
    badThresholds.reasons[0]?.message ?? '',
    /thresholds: maxErrorRate 1.5 must lie in \[0, 1\)/,
  );
});

test('a breach rolls back even while another slice lacks data or is reported on one side only', () => {
  const canary = observe(3, 5_000, {
    ...healthy,
    errorRate: (country) => (country === 'de' ? 0.1 : 0.003),
  });
  const verdict = analyzeCanaryStep({
    thresholds,
    sliceKey: 'country',
    baseline: baselineTraffic,
    canary: { ...canary, slices: { ...canary.slices, jp: { ...emptyWindow(), requests: 40 } } },
  });
  assert.equal(verdict.decision, 'rollback');
  assert.deepEqual(summary(verdict.reasons), ['error-rate slice country=de breach']);
  assert.equal(find(verdict, 'input', 'slice country=jp').outcome, 'invalid-input');
});

test('the verdict is deterministic: the same observations give the same JSON', () => {
  const input = {
    thresholds,
    sliceKey: 'country',
    baseline: baselineTraffic,
    canary: observe(4, 5_000, healthy),
  };
  assert.equal(JSON.stringify(analyzeCanaryStep(input)), JSON.stringify(analyzeCanaryStep(input)));
});

test('psiBins is bounded: a million bins (a quantile lookup each, every tick) is refused up front', () => {
  const base = { maxErrorRate: 0.01, maxP99Ms: 50, minRequests: 100 };
  for (const psiBins of [1e6, 101, 1]) {
    const resolved = resolveCanaryThresholds({ ...base, psiBins });
    assert.ok(!resolved.ok, `psiBins ${psiBins}`);
    assert.deepEqual(
      resolved.problems.map((problem) => problem.field),
      ['psiBins'],
    );
  }
  assert.ok(resolveCanaryThresholds({ ...base, psiBins: 100 }).ok);
});
