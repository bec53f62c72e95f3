// ln B(a, b) = ln Gamma(a) + ln Gamma(b) - ln Gamma(a + b), arranged so that large arguments
// do not cancel: with Welch degrees of freedom in the thousands, the three log-gammas are
// each ~1e4 and their naive difference would keep only ~12 significant digits. Stirling's
// series with the large terms combined through log1p keeps the result near full precision.
//
// ln Gamma(x) for x >= 10 is Stirling's series (A&S 6.1.41) through the x^-11 term (error
// below 1e-14 at x = 10); smaller x is shifted up with Gamma(x) = Gamma(x + k) / (x ... (x+k-1)).

const halfLogTwoPi = 0.9189385332046728;
const stirlingFrom = 10;

/** Stirling's correction delta(x) = ln Gamma(x) - [(x - 1/2) ln x - x + ln sqrt(2 pi)], x >= 10. */
function stirlingCorrection(x: number): number {
  const r = 1 / x;
  const r2 = r * r;
  return (
    r *
    (1 / 12 -
      r2 * (1 / 360 - r2 * (1 / 1260 - r2 * (1 / 1680 - r2 * (1 / 1188 - r2 * (691 / 360360))))))
  );
}

/** ln Gamma(x) for x > 0. */
export function logGamma(x: number): number {
  if (!(x > 0)) throw new RangeError(`logGamma: x = ${x} must be > 0`);
  if (x >= stirlingFrom) {
    return (x - 0.5) * Math.log(x) - x + halfLogTwoPi + stirlingCorrection(x);
  }
  let product = 1;
  let shifted = x;
  while (shifted < stirlingFrom) {
    product *= shifted;
    shifted += 1;
  }
  return logGamma(shifted) - Math.log(product);
}

/** ln B(a, b) for a, b > 0. */
export function logBeta(a: number, b: number): number {
  if (!(a > 0 && b > 0)) throw new RangeError(`logBeta: a = ${a}, b = ${b} must be > 0`);
  const big = Math.max(a, b);
  const small = Math.min(a, b);
  const sum = big + small;
  if (small >= stirlingFrom) {
    return (
      halfLogTwoPi -
      0.5 * Math.log(sum) -
      (big - 0.5) * Math.log1p(small / big) -
      (small - 0.5) * Math.log1p(big / small) +
      stirlingCorrection(big) +
      stirlingCorrection(small) -
      stirlingCorrection(sum)
    );
  }
  if (big >= stirlingFrom) {
    // ln Gamma(big) - ln Gamma(big + small), with the (x - 1/2) ln x terms combined.
    const ratio =
      -(big - 0.5) * Math.log1p(small / big) -
      small * Math.log(sum) +
      small +
      stirlingCorrection(big) -
      stirlingCorrection(sum);
    return logGamma(small) + ratio;
  }
  return logGamma(a) + logGamma(b) - logGamma(sum);
}
