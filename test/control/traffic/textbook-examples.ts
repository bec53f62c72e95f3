// Two textbook examples for `kiln experiments report`, with the figures computed by hand
// (digits carried by a calculator, rounded at the end) and what the sources print.
//
// RATE — the Physicians' Health Study (aspirin and myocardial infarction), as worked in
// A. Agresti, An Introduction to Categorical Data Analysis, 2nd ed. (Wiley 2007), §2.2,
// Table 2.3: placebo 189 heart attacks of 11 034, aspirin 104 of 11 037. Agresti prints
// p1 = 0.0171, p2 = 0.0094, difference 0.0077 with SE 0.0015, 95 % CI (0.005, 0.011); the
// Pearson X² of the same table, 25.01, is the pooled z squared.
//   control (placebo) p_c = 189/11034 = 0.0171288744, treatment (aspirin) p_t = 104/11037
//   = 0.0094228504, effect p_t - p_c = -0.0077060240
//   pooled p = 293/22071 = 0.0132753387; SE_0 = sqrt(p (1-p) (1/11034 + 1/11037))
//   = sqrt(0.0130991 × 1.812183e-4) = 0.00154077; z = -0.0077060240 / 0.00154077 = -5.00139
//   (z² = 25.01); two-sided p = 2 (1 - Φ(5.00139)) = 5.69e-7
//   Wald SE = sqrt(0.0171289 × 0.9828711 / 11034 + 0.0094229 × 0.9905771 / 11037)
//   = sqrt(1.525742e-6 + 8.456996e-7) = 0.00153995; 95 % CI = -0.0077060 ± 1.959964 × 0.00153995
//   = (-0.0107243, -0.00468775)   — Agresti's (0.005, 0.011) with the groups the other way
//   Cohen's h = 2 asin sqrt(0.0094229) - 2 asin sqrt(0.0171289) = 2 × 0.0972245 - 2 × 0.1312539
//   = -0.0680588
//   sample size for the observed effect (alpha 0.05, power 0.8; Fleiss eq. 4.14):
//   pbar = 0.0132759; 1.959964 sqrt(2 × 0.0132759 × 0.9867241) = 0.317244;
//   0.841621 sqrt(0.0168355 + 0.0093341) = 0.136149; (0.453393)² / 0.0077060² = 3461.7 → 3462
//   per group, none still needed (11 034 collected).
//
// MEAN — Student's sleep data (Cushny & Peebles; Student, Biometrika 6, 1908), the example of
// R's `t.test` documentation: `t.test(extra ~ group, data = sleep)` prints t = -1.8608,
// df = 17.776, p-value = 0.07939, 95 % CI (-3.3654832, 0.2054832), means 0.75 and 2.33
// (group 1 - group 2; here group 1 is the control, so the signs turn).
//   s1² = 3.2005556, s2² = 4.0090000; SE² = 0.32005556 + 0.40090000 = 0.72095556,
//   SE = 0.8490910; t = 1.58 / 0.8490910 = 1.860813;
//   df = 0.72095556² / (0.32005556²/9 + 0.4009²/9) = 0.5197769 / 0.0292395 = 17.7765
//   Cohen's d = 1.58 / sqrt((3.2005556 + 4.009) / 2) = 1.58 / 1.898625 = 0.832181
//   sample size for the observed effect: (1.959964 + 0.841621)² (3.2005556 + 4.009) / 1.58²
//   = 7.848879 × 7.2095556 / 2.4964 = 22.67 → 23 per group, 13 still needed (10 collected).

export const aspirin = {
  placebo: { events: 189, total: 11034 },
  aspirin: { events: 104, total: 11037 },
  effect: -0.007706024,
  z: -5.00139,
  cohenH: -0.0680588,
  pValue: 5.69e-7,
  interval: [-0.0107243, -0.00468775] as const,
  perGroup: 3462,
  remainingPerGroup: 0,
};

export const sleep = {
  group1: [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0],
  group2: [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4],
  means: [0.75, 2.33] as const,
  effect: 1.58,
  t: 1.8608,
  cohenD: 0.832181,
  degreesOfFreedom: 17.776,
  pValue: 0.07939,
  interval: [-0.2054832, 3.3654832] as const,
  perGroup: 23,
  remainingPerGroup: 13,
};

/** 0/1 values: `events` ones among `total`. */
export function binaryOutcomes(events: number, total: number): number[] {
  return Array.from({ length: total }, (_, i) => (i < events ? 1 : 0));
}
