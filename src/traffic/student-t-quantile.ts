// The quantile of Student's t: exact closed forms for df = 1 (Cauchy) and df = 2; otherwise
// Newton's method on ln P(T <= t) = ln q in the lower tail, started from the Cornish-Fisher
// expansion around the normal quantile (A&S 26.7.5) and kept inside a bracket so that a
// poor start (very small df, far tail) falls back to bisection rather than diverging.
// Working on the log of the lower tail keeps the steps well scaled for q down to 1e-300.

import { normalQuantile } from './normal-quantile.ts';
import { studentTCdf, studentTPdf } from './student-t-cdf.ts';

/** t with P(T <= t) = p for T ~ t(df); p = 0 / 1 give -/+Infinity. */
export function studentTQuantile(p: number, df: number): number {
  if (!(p >= 0 && p <= 1)) throw new RangeError(`studentTQuantile: p = ${p} is outside [0, 1]`);
  if (!(df > 0)) throw new RangeError(`studentTQuantile: df = ${df} must be > 0`);
  if (p === 0) return -Infinity;
  if (p === 1) return Infinity;
  if (p === 0.5) return 0;
  const lower = p < 0.5;
  const q = lower ? p : 1 - p;
  const t = lowerTailQuantile(q, df);
  return lower ? t : -t;
}

/** The t < 0 with P(T <= t) = q, 0 < q < 0.5. */
function lowerTailQuantile(q: number, df: number): number {
  if (df === 1) return -1 / Math.tan(Math.PI * q);
  if (df === 2) return (2 * q - 1) / Math.sqrt(2 * q * (1 - q));
  const target = Math.log(q);
  // Bracket [low, high] with cdf(low) <= q <= cdf(high); high = 0 has cdf 1/2 > q.
  let high = 0;
  let t = cornishFisher(q, df);
  let low = t;
  while (studentTCdf(low, df) > q) low *= 2;
  if (!(t >= low && t < high)) t = 0.5 * (low + high);
  for (let iteration = 0; iteration < 200; iteration++) {
    const cdf = studentTCdf(t, df);
    if (cdf > q) high = t;
    else low = t;
    // d/dt ln F(t) = f(t) / F(t).
    let next = t - ((Math.log(cdf) - target) * cdf) / studentTPdf(t, df);
    if (!(next > low && next < high)) next = 0.5 * (low + high);
    if (Math.abs(next - t) <= 1e-15 * Math.abs(t) || high - low <= 1e-15 * Math.abs(low)) {
      return next;
    }
    t = next;
  }
  return t;
}

/** The Cornish-Fisher start: z + g1/v + g2/v^2 + g3/v^3 (A&S 26.7.5), z the normal quantile. */
function cornishFisher(q: number, df: number): number {
  const z = normalQuantile(q);
  const z2 = z * z;
  const g1 = (z * (z2 + 1)) / 4;
  const g2 = (z * ((5 * z2 + 16) * z2 + 3)) / 96;
  const g3 = (z * (((3 * z2 + 19) * z2 + 17) * z2 - 15)) / 384;
  const start = z + g1 / df + g2 / (df * df) + g3 / (df * df * df);
  return Math.min(start, -1e-300);
}
