// Model quality from joined (prediction, outcome) pairs (issue 15, D). Pure.
//   classification (binary): the prediction is a score; label = score >= threshold.
//     accuracy   share of pairs whose label equals the outcome (0 or 1)
//     auc        ROC AUC by ranks (Mann-Whitney U; tied scores share their average rank);
//                null unless both classes occur
//     logLoss    -mean(y ln p + (1 - y) ln(1 - p)), p clipped to [1e-15, 1 - 1e-15] as
//                scikit-learn does; null unless every score is a probability in [0, 1]
//   regression: mae = mean |prediction - outcome|, rmse = sqrt(mean (prediction - outcome)^2)
// Every figure is null for no pairs.

export interface JoinedPair {
  readonly prediction: number;
  readonly outcome: number;
}

export interface ClassificationQuality {
  readonly task: 'classification';
  readonly count: number;
  readonly positives: number;
  readonly accuracy: number | null;
  readonly auc: number | null;
  readonly logLoss: number | null;
}

export interface RegressionQuality {
  readonly task: 'regression';
  readonly count: number;
  readonly mae: number | null;
  readonly rmse: number | null;
}

export type QualityFigures = ClassificationQuality | RegressionQuality;

const logLossEpsilon = 1e-15;

export function classificationQuality(
  pairs: readonly JoinedPair[],
  threshold: number,
): ClassificationQuality {
  const count = pairs.length;
  let positives = 0;
  let correct = 0;
  let probabilities = true;
  let loss = 0;
  for (const { prediction, outcome } of pairs) {
    const positive = outcome === 1;
    if (positive) positives += 1;
    if (prediction >= threshold === positive) correct += 1;
    if (!(prediction >= 0 && prediction <= 1)) probabilities = false;
    const p = Math.min(1 - logLossEpsilon, Math.max(logLossEpsilon, prediction));
    loss -= positive ? Math.log(p) : Math.log(1 - p);
  }
  return {
    task: 'classification',
    count,
    positives,
    accuracy: count === 0 ? null : correct / count,
    auc: rocAuc(pairs, positives),
    logLoss: count === 0 || !probabilities ? null : loss / count,
  };
}

/** ROC AUC = (sum of the positives' ranks - P(P+1)/2) / (P N), ranks averaged over ties. */
function rocAuc(pairs: readonly JoinedPair[], positives: number): number | null {
  const negatives = pairs.length - positives;
  if (positives === 0 || negatives === 0) return null;
  const sorted = [...pairs].sort((a, b) => a.prediction - b.prediction);
  let rankSum = 0;
  let i = 0;
  while (i < sorted.length) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1]!.prediction === sorted[i]!.prediction) j += 1;
    // Ranks i+1 .. j+1 (1-based) are tied: each gets their mean.
    const rank = (i + 1 + (j + 1)) / 2;
    for (let k = i; k <= j; k++) if (sorted[k]!.outcome === 1) rankSum += rank;
    i = j + 1;
  }
  return (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives);
}

export function regressionQuality(pairs: readonly JoinedPair[]): RegressionQuality {
  const count = pairs.length;
  let absolute = 0;
  let squared = 0;
  for (const { prediction, outcome } of pairs) {
    const error = prediction - outcome;
    absolute += Math.abs(error);
    squared += error * error;
  }
  return {
    task: 'regression',
    count,
    mae: count === 0 ? null : absolute / count,
    rmse: count === 0 ? null : Math.sqrt(squared / count),
  };
}
