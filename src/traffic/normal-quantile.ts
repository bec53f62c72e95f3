// The standard normal quantile Phi^-1(p): Acklam's rational approximation (relative error
// below 1.15e-9 over (0, 1)) as the start, then Halley steps against the accurate normalCdf
// until the correction is below the double's resolution (one or two steps in practice).
//
// The lower half is solved directly and the upper half by symmetry, so small tail
// probabilities such as 1e-20 keep full relative accuracy.

import { normalCdf } from './normal-cdf.ts';

// Acklam's published coefficients (P. J. Acklam, "An algorithm for computing the inverse
// normal cumulative distribution function", 2003).
const a = [
  -3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2,
  -3.066479806614716e1, 2.506628277459239,
] as const;
const b = [
  -5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1,
  -1.328068155288572e1,
] as const;
const c = [
  -7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734,
  4.374664141464968, 2.938163982698783,
] as const;
const d = [
  7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416,
] as const;

const lowBreak = 0.02425;
const sqrtTwoPi = Math.sqrt(2 * Math.PI);

/**
 * z with P(Z <= z) = p. p = 0 and p = 1 give -Infinity and +Infinity; p outside [0, 1] is a
 * programming error (callers validate user input first) and throws.
 */
export function normalQuantile(p: number): number {
  if (!(p >= 0 && p <= 1)) throw new RangeError(`normalQuantile: p = ${p} is outside [0, 1]`);
  if (p === 0) return -Infinity;
  if (p === 1) return Infinity;
  if (p > 0.5) return -lowerQuantile(1 - p);
  return lowerQuantile(p);
}

/** The quantile for 0 < p <= 0.5 (a value <= 0). */
function lowerQuantile(p: number): number {
  let x = acklam(p);
  for (let step = 0; step < 4; step++) {
    // Halley's method on Phi(x) - p: u = (Phi(x) - p) / phi(x).
    const e = normalCdf(x) - p;
    const u = e * sqrtTwoPi * Math.exp(0.5 * x * x);
    const next = x - u / (1 + 0.5 * x * u);
    const done = Math.abs(next - x) <= 1e-15 * Math.abs(next);
    x = next;
    if (done) break;
  }
  return x;
}

function acklam(p: number): number {
  if (p < lowBreak) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (
      (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
      ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    );
  }
  const q = p - 0.5;
  const r = q * q;
  return (
    ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) /
    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
  );
}
