// The standard normal distribution function Phi(z) = P(Z <= z) and its upper tail, computed
// in z itself (not through erfc(z / sqrt 2), whose rounded argument alone costs ~1e-14 relative
// at z = 8) and with relative accuracy in both tails (1 - Phi(8) is 6.2e-16, not 0):
//
//   |z| < 2   Phi(z) - 1/2 = phi(z) * sum_n z^(2n+1) / (1*3*...*(2n+1))   (Marsaglia 2004;
//             all terms positive), so the tail 1/2 - that has absolute error ~1e-17.
//   z >= 2    1 - Phi(z) = phi(z) / (z + 1/(z + 2/(z + 3/(z + ...))))     (Laplace's continued
//             fraction for Mills' ratio, A&S 26.2.14), by the modified Lentz method.
//
// phi(z) = exp(-z^2/2)/sqrt(2 pi) is formed with z^2 split as h^2 + (z - h)(z + h), h = z
// rounded to 1/16, so h^2 is exact and exp() does not magnify the rounding of z*z (the trick
// in Cody's erfc, ACM TOMS 1993).

const inverseSqrtTwoPi = 0.3989422804014327;
const tiny = 1e-300;

/** The standard normal density, with the exponent formed exactly for large |z|. */
export function normalPdf(z: number): number {
  const h = Math.round(z * 16) / 16;
  return inverseSqrtTwoPi * Math.exp(-0.5 * h * h) * Math.exp(-0.5 * (z - h) * (z + h));
}

/** P(Z > z), computed directly rather than as 1 - normalCdf(z). */
export function normalSurvival(z: number): number {
  if (Number.isNaN(z)) throw new RangeError('normal distribution: z is NaN');
  if (z >= 2) return upperTail(z);
  if (z <= -2) return 1 - upperTail(-z);
  return 0.5 - centralMass(z);
}

/** P(Z <= z) for a standard normal Z. */
export function normalCdf(z: number): number {
  if (Number.isNaN(z)) throw new RangeError('normal distribution: z is NaN');
  return normalSurvival(-z);
}

/** Phi(z) - 1/2 for |z| < 2 by the all-positive series. */
function centralMass(z: number): number {
  const z2 = z * z;
  let term = z;
  let sum = z;
  for (let n = 1; n < 200; n++) {
    term *= z2 / (2 * n + 1);
    sum += term;
    if (Math.abs(term) < Math.abs(sum) * 1e-17) break;
  }
  return normalPdf(z) * sum;
}

/** 1 - Phi(z) for z >= 2: b_0 = z, a_k = k, b_k = z, by modified Lentz. */
function upperTail(z: number): number {
  if (z > 38.5) return 0; // below the smallest double
  let f = z;
  let c = z;
  let d = 0;
  for (let k = 1; k < 5000; k++) {
    d = z + k * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = z + k / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = c * d;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  return normalPdf(z) / f;
}
