// Student's t distribution function with v degrees of freedom (v > 0, not necessarily an
// integer: Welch's df is not), through the incomplete beta (A&S 26.7.1):
//
//   P(T <= t) = 1 - I_{v/(v+t^2)}(v/2, 1/2) / 2            for t >= 0
//   P(|T| <= |t|) = I_{t^2/(v+t^2)}(1/2, v/2)             used when t^2 < v (the centre)
//
// Both arguments are computed directly, never as 1 minus the other, so tails keep their
// relative accuracy.

import { logBeta } from './log-beta.ts';
import { regularizedIncompleteBeta } from './regularized-incomplete-beta.ts';

function checkDf(df: number): void {
  if (!(df > 0)) throw new RangeError(`Student's t: df = ${df} must be > 0`);
}

/** P(T <= t) for T ~ t(df). */
export function studentTCdf(t: number, df: number): number {
  checkDf(df);
  if (Number.isNaN(t)) throw new RangeError("Student's t: t is NaN");
  if (t === Infinity) return 1;
  if (t === -Infinity) return 0;
  const t2 = t * t;
  const denominator = df + t2;
  if (t2 < df) {
    const centre = regularizedIncompleteBeta(t2 / denominator, 0.5, df / 2, df / denominator);
    return t < 0 ? 0.5 - 0.5 * centre : 0.5 + 0.5 * centre;
  }
  const tail = 0.5 * regularizedIncompleteBeta(df / denominator, df / 2, 0.5, t2 / denominator);
  return t < 0 ? tail : 1 - tail;
}

/** P(T > t), computed as the lower tail of -t (no 1 - cdf cancellation). */
export function studentTSurvival(t: number, df: number): number {
  return studentTCdf(-t, df);
}

/** The t density. */
export function studentTPdf(t: number, df: number): number {
  checkDf(df);
  const logDensity =
    -((df + 1) / 2) * Math.log1p((t * t) / df) - 0.5 * Math.log(df) - logBeta(df / 2, 0.5);
  return Math.exp(logDensity);
}
