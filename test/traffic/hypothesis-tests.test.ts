// The two-proportion z-test and Welch's t-test against examples worked by hand (arithmetic
// in the comments), a published R example, and scipy.stats
// (fixtures/traffic/statistics-reference.json). Bad input comes back as a reason, never NaN.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { twoProportionTest } from '../../src/traffic/two-proportion-test.ts';
import { welchTest, welchTestOfSamples } from '../../src/traffic/welch-test.ts';
import { assertClose, reference } from './statistics-reference.ts';

test('two proportions, 200/1000 vs 250/1000, worked by hand', () => {
  // pooled p = 450/2000 = 0.225; SE_0 = sqrt(0.225 * 0.775 * (1/1000 + 1/1000))
  //   = sqrt(0.00034875) = 0.0186748494; z = 0.05 / 0.0186748494 = 2.67739776
  // p = 2 (1 - Phi(2.67739776)) = 0.0074196 (scipy: 0.007419649261025687)
  // unpooled SE = sqrt(0.2*0.8/1000 + 0.25*0.75/1000) = sqrt(0.0003475) = 0.0186413519
  // 95% CI = 0.05 +- 1.959963985 * 0.0186413519 = [0.0134636217, 0.0865363783]
  const result = twoProportionTest(
    { successes: 200, trials: 1000 },
    { successes: 250, trials: 1000 },
  );
  assert.ok(result.ok);
  assertClose(result.controlRate, 0.2, 1e-15);
  assertClose(result.treatmentRate, 0.25, 1e-15);
  assertClose(result.difference, 0.05, 1e-14);
  assertClose(result.relativeLift ?? Number.NaN, 0.25, 1e-14);
  assertClose(result.z, 2.6773977630083294, 1e-12);
  assertClose(result.z, reference.twoProportion.z, 1e-12);
  assertClose(result.pValue, reference.twoProportion.pValue, 1e-10);
  assertClose(result.interval[0], 0.013463621687539853, 1e-10);
  assertClose(result.interval[1], 0.08653637831246015, 1e-10);
});

test('two proportions: no difference gives z = 0 and p = 1; a lift on a zero control rate is null', () => {
  const same = twoProportionTest({ successes: 30, trials: 300 }, { successes: 10, trials: 100 });
  assert.ok(same.ok);
  assert.equal(same.z, 0);
  assert.equal(same.pValue, 1);
  const fromZero = twoProportionTest({ successes: 0, trials: 100 }, { successes: 5, trials: 100 });
  assert.ok(fromZero.ok);
  assert.equal(fromZero.relativeLift, null);
});

test('two proportions: bad input comes back as a reason', () => {
  const cases = [
    [{ successes: 0, trials: 0 }, { successes: 1, trials: 10 }, 'empty-group'],
    [{ successes: 11, trials: 10 }, { successes: 1, trials: 10 }, 'count-out-of-range'],
    [{ successes: -1, trials: 10 }, { successes: 1, trials: 10 }, 'count-out-of-range'],
    [{ successes: 1.5, trials: 10 }, { successes: 1, trials: 10 }, 'count-out-of-range'],
    [{ successes: Number.NaN, trials: 10 }, { successes: 1, trials: 10 }, 'not-finite'],
    [{ successes: 0, trials: 10 }, { successes: 0, trials: 20 }, 'zero-variance'],
    [{ successes: 10, trials: 10 }, { successes: 20, trials: 20 }, 'zero-variance'],
  ] as const;
  for (const [control, treatment, reason] of cases) {
    const result = twoProportionTest(control, treatment);
    assert.equal(result.ok, false);
    assert.equal(result.ok ? null : result.reason, reason, JSON.stringify([control, treatment]));
  }
  const badConfidence = twoProportionTest(
    { successes: 1, trials: 10 },
    { successes: 2, trials: 10 },
    1,
  );
  assert.equal(badConfidence.ok ? null : badConfidence.reason, 'invalid-parameter');
});

test('Welch from summaries, worked by hand: n 10 / 12, means 20 / 23, variances 16 / 25', () => {
  // s_c^2/n_c = 1.6, s_t^2/n_t = 25/12 = 2.0833333; SE^2 = 3.6833333, SE = 1.91920122
  // t = 3 / 1.91920122 = 1.56315032
  // df = 3.6833333^2 / (1.6^2/9 + 2.0833333^2/11) = 13.5669444 / 0.6790152 = 19.9803265
  // p (scipy ttest_ind_from_stats, equal_var=False) = 0.1337179482158294
  // 95% CI = 3 +- t_{19.9803, 0.975} * SE = 3 +- 2.0860951268 * 1.91920122 (scipy t.ppf)
  //        = [-1.003636318102374, 7.003636318102374]
  const result = welchTest(
    { count: 10, mean: 20, variance: 16 },
    { count: 12, mean: 23, variance: 25 },
  );
  assert.ok(result.ok);
  assertClose(result.standardError, 1.9192012227313042, 1e-14);
  assertClose(result.t, 1.5631503171567185, 1e-13);
  assertClose(result.degreesOfFreedom, 19.98032652757633, 1e-12);
  assertClose(result.pValue, reference.welchSummary.pValue, 1e-10);
  assertClose(result.interval[0], -1.003636318102374, 1e-9);
  assertClose(result.interval[1], 7.003636318102374, 1e-9);
});

test("Welch on Student's sleep data (Cushny & Peebles 1905; R: t.test(extra ~ group, data = sleep))", () => {
  // R's documented output: t = -1.8608, df = 17.776, p-value = 0.07939,
  // 95% CI -3.3654832 0.2054832, means 0.75 and 2.33 (R subtracts group 2 from group 1;
  // here treatment = group 2 minus control = group 1, so the signs flip).
  const group1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
  const group2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];
  const result = welchTestOfSamples(group1, group2);
  assert.ok(result.ok);
  assertClose(result.controlMean, 0.75, 1e-14);
  assertClose(result.treatmentMean, 2.33, 1e-14);
  assert.equal(result.t.toFixed(4), '1.8608');
  assert.equal(result.degreesOfFreedom.toFixed(3), '17.776');
  assert.equal(result.pValue.toFixed(5), '0.07939');
  assert.equal(result.interval[0].toFixed(7), '-0.2054832');
  assert.equal(result.interval[1].toFixed(7), '3.3654832');
  assertClose(result.t, reference.welchSleep.t, 1e-12);
  assertClose(result.pValue, reference.welchSleep.pValue, 1e-10);
});

test('Welch: bad input comes back as a reason', () => {
  const ok = { count: 5, mean: 1, variance: 2 };
  const cases = [
    [{ count: 0, mean: 0, variance: 0 }, ok, 'empty-group'],
    [{ count: 1, mean: 3, variance: 0 }, ok, 'too-few-observations'],
    [{ count: 4, mean: 3, variance: 0 }, { count: 6, mean: 5, variance: 0 }, 'zero-variance'],
    [{ count: 4, mean: Number.NaN, variance: 1 }, ok, 'not-finite'],
    [{ count: 4, mean: 1, variance: -1 }, ok, 'invalid-parameter'],
    [{ count: 2.5, mean: 1, variance: 1 }, ok, 'count-out-of-range'],
  ] as const;
  for (const [control, treatment, reason] of cases) {
    const result = welchTest(control, treatment);
    assert.equal(result.ok ? null : result.reason, reason, JSON.stringify(control));
  }
  const samples = welchTestOfSamples([1, 2, Number.POSITIVE_INFINITY], [1, 2, 3]);
  assert.equal(samples.ok ? null : samples.reason, 'not-finite');
  assert.equal(welchTestOfSamples([], [1, 2]).ok ? null : 'refused', 'refused');
});
