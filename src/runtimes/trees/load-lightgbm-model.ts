// LightGBM text models → a TreePredictor, replicating LightGBM's Tree::Predict:
//
//   raw[k] = Σ_{i} tree[i·K + k](x)            (double; K = num_tree_per_iteration)
//   predict = ConvertOutput(raw / iterations if average_output else raw)
//
// Leaf values already include shrinkage. A node's decision_type packs: bit 0 categorical,
// bit 1 default-left, bits 2-3 missing type (0 None, 1 Zero, 2 NaN). NumericalDecision:
//   - NaN with missing type ≠ NaN becomes 0.0
//   - missing type Zero and |x| <= kZeroThreshold, or type NaN and x NaN → default child
//   - else x <= threshold → left
// CategoricalDecision: NaN or a negative int(x) → right; int(x) in the node's bitset
// (cat_threshold[cat_boundaries[t] .. cat_boundaries[t+1]), t = threshold) → left.
//
// Random forests before LightGBM 2.2.3 (PR #1906) stored leaves already passed through the
// objective and predicted the plain average; later ones store raw leaves and transform the
// average. A forest saved as `version=v2` without `feature_fraction_bynode` (added in 2.3.0)
// among its parameters is read the old way; only forests saved by 2.2.3 itself are misread.

import type { OutputTransform } from './output-transform.ts';
import { parseLightgbmText, parseNumberList, type LightgbmText } from './parse-lightgbm-text.ts';
import { EnsembleBuilder, nextUp, nodeKind, type NodeSpec } from './tree-ensemble.ts';
import {
  TreePredictor,
  type PredictorOptions,
  type TreeLoadResult,
  type TreeModel,
} from './tree-predictor.ts';

class LightgbmError extends Error {}

export function loadLightgbmModel(source: string, options: PredictorOptions = {}): TreeLoadResult {
  const parsed = parseLightgbmText(source);
  if (typeof parsed === 'string') return { ok: false, reason: parsed };
  try {
    return { ok: true, predictor: new TreePredictor(readModel(parsed), options) };
  } catch (error) {
    if (!(error instanceof LightgbmError)) throw error;
    return { ok: false, reason: `not a servable LightGBM model: ${error.message}` };
  }
}

function readModel(text: LightgbmText): TreeModel {
  const { header } = text;
  const version = header.get('version') ?? '';
  const numClass = headerInteger(header, 'num_class', 1);
  const perIteration = headerInteger(header, 'num_tree_per_iteration', numClass);
  const maxFeatureIdx = headerInteger(header, 'max_feature_idx', -1);
  if (numClass < 1 || perIteration < 1) {
    throw new LightgbmError('num_class and num_tree_per_iteration must be positive');
  }
  if (maxFeatureIdx < 0) throw new LightgbmError('the max_feature_idx= line is missing');
  const numFeatures = maxFeatureIdx + 1;
  const objective = header.get('objective') ?? '';
  const transform = objectiveTransform(objective);
  const numTrees = text.trees.length;
  if (numTrees % perIteration !== 0) {
    throw new LightgbmError(`${numTrees} trees do not split into iterations of ${perIteration}`);
  }
  const averaged = header.has('average_output');
  const legacyForest =
    averaged && version === 'v2' && !text.parameters.has('feature_fraction_bynode');

  const builder = new EnsembleBuilder(numFeatures, perIteration);
  text.trees.forEach((tree, t) => {
    try {
      const { nodes, leaves } = readTree(tree);
      const problem = builder.addTree(t % perIteration, nodes, leaves);
      if (problem !== null) throw new LightgbmError(problem);
    } catch (error) {
      if (error instanceof LightgbmError) throw new LightgbmError(`Tree=${t}: ${error.message}`);
      throw error;
    }
  });
  const names = (header.get('feature_names') ?? '').split(' ').filter((name) => name !== '');
  return {
    library: 'lightgbm',
    ensemble: builder.build(),
    objective: objective === '' ? 'custom' : objective,
    transform,
    baseMargins: new Array<number>(perIteration).fill(0),
    averageOver: averaged && numTrees > 0 ? numTrees / perIteration : null,
    transformAfterAverage: !legacyForest,
    featureNames: names.length === numFeatures ? names : null,
    formatVersion: version,
  };
}

function headerInteger(header: ReadonlyMap<string, string>, key: string, fallback: number): number {
  const value = header.get(key);
  if (value === undefined) return fallback;
  if (!/^-?\d+$/.test(value.trim())) throw new LightgbmError(`${key}=${value} is not an integer`);
  return Number(value);
}

/** The objective line (`binary sigmoid:1`, `regression sqrt`, …) → LightGBM's ConvertOutput. */
function objectiveTransform(objective: string): OutputTransform {
  const [name = '', ...params] = objective.trim().split(/\s+/);
  const param = (key: string): string | undefined =>
    params.find((p) => p.startsWith(`${key}:`))?.slice(key.length + 1);
  const sigmoid = Number(param('sigmoid') ?? '1');
  switch (name) {
    case '': // no objective line: a custom objective, raw scores
    case 'custom':
    case 'none':
    case 'lambdarank':
    case 'rank_xendcg':
    case 'xendcg':
    case 'xe_ndcg':
    case 'xe_ndcg_mart':
    case 'xendcg_mart':
      return { kind: 'identity' };
    case 'binary':
    case 'multiclassova':
    case 'multiclass_ova':
    case 'ova':
    case 'ovr':
      if (!Number.isFinite(sigmoid) || sigmoid <= 0) {
        throw new LightgbmError(`objective '${objective}' has an invalid sigmoid parameter`);
      }
      return { kind: 'sigmoid', scale: sigmoid };
    case 'multiclass':
    case 'softmax':
      return { kind: 'softmax' };
    case 'regression':
    case 'regression_l2':
    case 'l2':
    case 'mean_squared_error':
    case 'mse':
    case 'l2_root':
    case 'root_mean_squared_error':
    case 'rmse':
    case 'regression_l1':
    case 'l1':
    case 'mean_absolute_error':
    case 'mae':
    case 'huber':
    case 'fair':
    case 'quantile':
    case 'mape':
    case 'mean_absolute_percentage_error':
      return params.includes('sqrt') ? { kind: 'signed-square' } : { kind: 'identity' };
    case 'poisson':
    case 'gamma':
    case 'tweedie':
      return { kind: 'exp' };
    case 'cross_entropy':
    case 'xentropy':
      return { kind: 'sigmoid', scale: 1 };
    case 'cross_entropy_lambda':
    case 'xentlambda':
      return { kind: 'softplus' };
    default:
      throw new LightgbmError(`objective '${objective}' is not supported`);
  }
}

function list(tree: ReadonlyMap<string, string>, key: string, length: number): number[] {
  const values = parseNumberList(tree.get(key));
  if (values === null) throw new LightgbmError(`${key} is missing or holds a non-number`);
  if (values.length !== length) {
    throw new LightgbmError(`${key} has ${values.length} entries, expected ${length}`);
  }
  return values;
}

function readTree(tree: ReadonlyMap<string, string>): { nodes: NodeSpec[]; leaves: number[] } {
  const numLeaves = Number(tree.get('num_leaves') ?? Number.NaN);
  if (!Number.isSafeInteger(numLeaves) || numLeaves < 1) {
    throw new LightgbmError('num_leaves is missing or not a positive integer');
  }
  if ((tree.get('is_linear') ?? '0').trim() !== '0') {
    throw new LightgbmError('linear trees (linear_tree=true) are not supported');
  }
  const leaves = list(tree, 'leaf_value', numLeaves);
  if (numLeaves === 1) return { nodes: [], leaves };
  const numNodes = numLeaves - 1;
  const features = list(tree, 'split_feature', numNodes);
  const thresholds = list(tree, 'threshold', numNodes);
  const left = list(tree, 'left_child', numNodes);
  const right = list(tree, 'right_child', numNodes);
  const decisions = tree.has('decision_type')
    ? list(tree, 'decision_type', numNodes)
    : new Array<number>(numNodes).fill(0);
  const numCat = Number(tree.get('num_cat') ?? '0');
  const boundaries = numCat > 0 ? list(tree, 'cat_boundaries', numCat + 1) : [];
  const catWords = numCat > 0 ? (parseNumberList(tree.get('cat_threshold')) ?? []) : [];

  const nodes: NodeSpec[] = [];
  for (let i = 0; i < numNodes; i += 1) {
    const decision = decisions[i] ?? 0;
    const l = left[i] ?? 0;
    const r = right[i] ?? 0;
    const missingType = (decision >> 2) & 3;
    const defaultLeft = (decision & 2) !== 0;
    const threshold = thresholds[i] ?? Number.NaN;
    if (missingType === 3) throw new LightgbmError(`node ${i} has an unknown missing type`);
    if ((decision & 1) !== 0) {
      const index = threshold;
      const start = boundaries[index] ?? Number.NaN;
      const end = boundaries[index + 1] ?? Number.NaN;
      if (!Number.isInteger(index) || !(start >= 0 && end >= start && end <= catWords.length)) {
        throw new LightgbmError(`node ${i}: categorical threshold ${threshold} has no bitset`);
      }
      nodes.push({
        feature: features[i] ?? -1,
        threshold: 0,
        kind: nodeKind.lightgbmCategorical,
        yes: l,
        no: r,
        nanGoesYes: false,
        catBits: catWords.slice(start, end),
      });
      continue;
    }
    // x <= t  ⇔  x < nextUp(t) for every double x; NaN → default child, or where 0.0 goes.
    nodes.push({
      feature: features[i] ?? -1,
      threshold: nextUp(threshold),
      kind: missingType === 1 ? nodeKind.zeroAsMissing : nodeKind.numeric,
      yes: l,
      no: r,
      nanGoesYes: missingType === 0 ? 0 <= threshold : defaultLeft,
    });
  }
  return { nodes, leaves };
}
