// The normal and Student's t distribution functions and quantiles against published tables
// and against 40-digit references (mpmath, written by fixtures/traffic/make_statistics_reference.py
// into statistics-reference.json). Tolerances are stated per assertion; the code aims at
// ~1e-14 relative and the tests allow 1e-12 (1e-11 for df = 1e6, where the incomplete beta's
// continued fraction runs to ~1000 terms).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { logBeta, logGamma } from '../../src/traffic/log-beta.ts';
import { normalCdf, normalPdf, normalSurvival } from '../../src/traffic/normal-cdf.ts';
import { normalQuantile } from '../../src/traffic/normal-quantile.ts';
import { regularizedIncompleteBeta } from '../../src/traffic/regularized-incomplete-beta.ts';
import { studentTCdf } from '../../src/traffic/student-t-cdf.ts';
import { studentTQuantile } from '../../src/traffic/student-t-quantile.ts';
import { assertClose, reference } from './statistics-reference.ts';

test('normal CDF at 1.96 is 0.9750021048517795 (standard tables; mpmath 40 digits), within 1e-15', () => {
  assertClose(normalCdf(1.96), 0.9750021048517795, 1e-15);
  assertClose(normalCdf(-1.96), 0.024997895148220435, 1e-12);
  assert.equal(normalCdf(0), 0.5);
});

test('normal tails keep relative accuracy: 1 - Phi(8) = 6.220960574271784e-16 (mpmath, 40 digits)', () => {
  assertClose(normalSurvival(8), 6.220960574271784e-16, 1e-12);
  assert.equal(normalSurvival(40), 0);
  assert.equal(normalCdf(-Infinity), 0);
  assert.equal(normalCdf(Infinity), 1);
});

test('normal CDF matches the 40-digit reference at every fixture point, within 1e-12 relative', () => {
  for (const [z, expected] of reference.normalCdf) assertClose(normalCdf(z), expected, 1e-12);
});

test('normal density at 0 is 1/sqrt(2 pi)', () => {
  assertClose(normalPdf(0), 0.3989422804014327, 1e-15);
});

test('normal quantile: 0.975 -> 1.959963984540054, 0.8 -> 0.8416212335729143 (standard tables)', () => {
  assertClose(normalQuantile(0.975), 1.959963984540054, 1e-14);
  assertClose(normalQuantile(0.8), 0.8416212335729143, 1e-14);
  assert.equal(normalQuantile(0.5), 0);
  assert.equal(normalQuantile(0), -Infinity);
  assert.equal(normalQuantile(1), Infinity);
  for (const [p, expected] of reference.normalQuantile) {
    if (expected === 0) assert.equal(normalQuantile(p), 0);
    else assertClose(normalQuantile(p), expected, 1e-12);
  }
});

test('normal quantile inverts the CDF across (0, 1)', () => {
  for (let p = 0.001; p < 1; p += 0.0137) assertClose(normalCdf(normalQuantile(p)), p, 1e-13);
});

test('distribution functions refuse arguments outside their domain instead of returning NaN', () => {
  assert.throws(() => normalQuantile(1.5), RangeError);
  assert.throws(() => normalQuantile(Number.NaN), RangeError);
  assert.throws(() => normalCdf(Number.NaN), RangeError);
  assert.throws(() => studentTCdf(1, 0), RangeError);
  assert.throws(() => studentTQuantile(-0.1, 5), RangeError);
  assert.throws(() => regularizedIncompleteBeta(1.2, 1, 1), RangeError);
});

test('log-gamma and log-beta: Gamma(1/2) = sqrt(pi), Gamma(10) = 9!, B(2, 3) = 1/12', () => {
  assertClose(logGamma(0.5), 0.5 * Math.log(Math.PI), 1e-14);
  assertClose(logGamma(10), Math.log(362880), 1e-14);
  assertClose(logGamma(4.5), Math.log(11.631728396567448), 1e-14);
  assertClose(logBeta(2, 3), Math.log(1 / 12), 1e-14);
  // B(a, 1/2) for large a ~ sqrt(pi / a) (1 + 1/(8a)) (next term 1/(128 a^2)): the cancellation-free branch.
  assertClose(logBeta(1e6, 0.5), 0.5 * Math.log(Math.PI / 1e6) + Math.log1p(1 / 8e6), 1e-12);
});

test('incomplete beta: I_x(1, 1) = x and I_x(2, 2) = x^2 (3 - 2x) (closed forms)', () => {
  for (const x of [0, 0.1, 0.5, 0.77, 1]) {
    assertClose(regularizedIncompleteBeta(x, 1, 1), x, 1e-14);
    assertClose(regularizedIncompleteBeta(x, 2, 2), x * x * (3 - 2 * x), 1e-14);
  }
});

test("Student's t quantile df = 10 at 0.975 is 2.228138851986 (t tables, e.g. NIST/SEMATECH 1.3.6.7.2)", () => {
  assertClose(studentTQuantile(0.975, 10), 2.228138851986274, 1e-13);
  assertClose(studentTQuantile(0.025, 10), -2.228138851986274, 1e-13);
  // More table entries: df = 1 at 0.975 is 12.706204736; df = 30 at 0.975 is 2.042272456.
  assertClose(studentTQuantile(0.975, 1), 12.706204736174707, 1e-13);
  assertClose(studentTQuantile(0.975, 30), 2.0422724563012373, 1e-12);
});

test("Student's t CDF and quantile match the 40-digit reference, within 1e-12 (1e-11 at df = 1e6)", () => {
  for (const [t, df, expected] of reference.studentTCdf)
    assertClose(studentTCdf(t, df), expected, 1e-12);
  for (const [p, df, expected] of reference.studentTQuantile) {
    assertClose(studentTQuantile(p, df), expected, df > 1e5 ? 1e-11 : 1e-12);
  }
});

test("Student's t with many degrees of freedom approaches the normal", () => {
  assertClose(studentTCdf(1.96, 1e7), normalCdf(1.96), 1e-7);
});
