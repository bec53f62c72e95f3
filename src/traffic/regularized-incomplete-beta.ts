// The regularized incomplete beta function I_x(a, b), the distribution function behind
// Student's t. Numerical Recipes' method (Press et al., 3rd ed., section 6.4): the continued
// fraction of A&S 26.5.8 evaluated by the modified Lentz algorithm, used directly when
// x < (a + 1)/(a + b + 2) and through I_x(a, b) = 1 - I_{1-x}(b, a) otherwise, where it
// converges in O(sqrt(max(a, b))) terms.
//
// Callers that know 1 - x more precisely than by subtraction (the t distribution computes
// both t^2/(v + t^2) and v/(v + t^2) directly) pass it as `y`.

import { logBeta } from './log-beta.ts';

const tiny = 1e-300;
const epsilon = 1e-16;
const maxTerms = 100_000;

/** I_x(a, b) for 0 <= x <= 1 and a, b > 0; `y` is 1 - x if the caller has it exactly. */
export function regularizedIncompleteBeta(x: number, a: number, b: number, y = 1 - x): number {
  if (!(x >= 0 && x <= 1)) throw new RangeError(`incomplete beta: x = ${x} is outside [0, 1]`);
  if (!(a > 0 && b > 0)) throw new RangeError(`incomplete beta: a = ${a}, b = ${b} must be > 0`);
  if (x === 0) return 0;
  if (y === 0) return 1;
  const logX = x < 0.5 ? Math.log(x) : Math.log1p(-y);
  const logY = y < 0.5 ? Math.log(y) : Math.log1p(-x);
  const front = Math.exp(a * logX + b * logY - logBeta(a, b));
  if (x < (a + 1) / (a + b + 2)) return (front * continuedFraction(x, a, b)) / a;
  return 1 - (front * continuedFraction(y, b, a)) / b;
}

function guard(value: number): number {
  return Math.abs(value) < tiny ? tiny : value;
}

/** The continued fraction for I_x(a, b) / front * a (NR's betacf), by modified Lentz. */
function continuedFraction(x: number, a: number, b: number): number {
  const sum = a + b;
  let c = 1;
  let d = 1 / guard(1 - (sum * x) / (a + 1));
  let h = d;
  for (let m = 1; m <= maxTerms; m++) {
    const m2 = 2 * m;
    // Even step: d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m)).
    let coefficient = (m * (b - m) * x) / ((a - 1 + m2) * (a + m2));
    d = 1 / guard(1 + coefficient * d);
    c = guard(1 + coefficient / c);
    h *= d * c;
    // Odd step: d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)).
    coefficient = (-(a + m) * (sum + m) * x) / ((a + m2) * (a + 1 + m2));
    d = 1 / guard(1 + coefficient * d);
    c = guard(1 + coefficient / c);
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < epsilon) return h;
  }
  return h; // not reached for the a, b the t distribution uses (b = 1/2)
}
