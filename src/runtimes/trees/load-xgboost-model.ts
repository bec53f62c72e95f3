// XGBoost `save_model` files (JSON or UBJSON) → a TreePredictor. What XGBoost 1.7–2.x do at
// prediction time, and how this loader mirrors it:
//
//   margin[g] = base_margin + Σ_{trees t of group g} w_t · leaf_t(x)      (float32 throughout)
//
// - base_margin is base_score passed through the objective's ProbToMargin: logit for the
//   logistic objectives, log for poisson/tweedie/gamma (stored as a mean), identity else.
// - group g of a tree is tree_info[t]; w_t is dart's weight_drop[t] (1 for gbtree); random
//   forests (num_parallel_tree > 1) simply hold more trees per round, all summed.
// - a split sends x left when x < split_condition (float32), a NaN to the default child; a
//   categorical split (split_type 1) sends the listed categories right, the rest left.
// - leaves have left_children == -1 and their value in split_conditions.
// Leaf ids are XGBoost's node ids, so predictLeaf answers like XGBoost's pred_leaf.

import { decodeXgboostDocument } from '../../registry/formats/xgboost-document.ts';
import {
  ModelError,
  baseScores,
  count,
  field,
  numbers,
  object,
  optionalNumbers,
  text,
} from '../../registry/formats/xgboost-fields.ts';
import type { OutputTransform } from './output-transform.ts';
import { EnsembleBuilder, nodeKind, type NodeSpec } from './tree-ensemble.ts';
import { TreePredictor, type PredictorOptions, type TreeLoadResult } from './tree-predictor.ts';

type Link = 'identity' | 'logit' | 'log';

/** Objectives served, with the link that maps base_score to a margin and the output. */
const objectives: Readonly<Record<string, { link: Link; transform: OutputTransform }>> = {
  'binary:logistic': { link: 'logit', transform: { kind: 'sigmoid', scale: 1 } },
  'reg:logistic': { link: 'logit', transform: { kind: 'sigmoid', scale: 1 } },
  'binary:logitraw': { link: 'identity', transform: { kind: 'identity' } },
  'binary:hinge': { link: 'identity', transform: { kind: 'hinge' } },
  'reg:squarederror': { link: 'identity', transform: { kind: 'identity' } },
  'reg:linear': { link: 'identity', transform: { kind: 'identity' } },
  'reg:squaredlogerror': { link: 'identity', transform: { kind: 'identity' } },
  'reg:pseudohubererror': { link: 'identity', transform: { kind: 'identity' } },
  'reg:absoluteerror': { link: 'identity', transform: { kind: 'identity' } },
  'count:poisson': { link: 'log', transform: { kind: 'exp' } },
  'reg:tweedie': { link: 'log', transform: { kind: 'exp' } },
  'reg:gamma': { link: 'log', transform: { kind: 'exp' } },
  'multi:softprob': { link: 'identity', transform: { kind: 'softmax' } },
  'multi:softmax': { link: 'identity', transform: { kind: 'argmax' } },
  'rank:pairwise': { link: 'identity', transform: { kind: 'identity' } },
  'rank:ndcg': { link: 'identity', transform: { kind: 'identity' } },
  'rank:map': { link: 'identity', transform: { kind: 'identity' } },
};

export const supportedXgboostObjectives: readonly string[] = Object.keys(objectives);

export function loadXgboostModel(
  bytes: Uint8Array,
  options: PredictorOptions = {},
): TreeLoadResult {
  const decoded = decodeXgboostDocument(bytes);
  if (!decoded.ok) return decoded;
  try {
    return { ok: true, predictor: new TreePredictor(readModel(decoded.value), options) };
  } catch (error) {
    if (!(error instanceof ModelError)) throw error;
    return { ok: false, reason: `not a servable XGBoost model: ${error.message}` };
  }
}

function readModel(root: unknown): TreePredictor['model'] {
  const learner = object(root, 'learner', 'learner');
  const versionList = field(root, 'version');
  const version = Array.isArray(versionList) ? versionList.join('.') : 'unknown';
  const objective = text(field(learner, 'objective'), 'name', 'learner.objective.name');
  const known = objectives[objective];
  if (known === undefined) {
    throw new ModelError(
      `objective '${objective}' is not supported (supported: ${supportedXgboostObjectives.join(', ')})`,
    );
  }
  const params = object(learner, 'learner_model_param', 'learner.learner_model_param');
  const numFeature = count(params, 'num_feature', 'learner_model_param.num_feature');
  if (numFeature < 1) throw new ModelError('learner_model_param.num_feature is 0');
  const numClass = count(params, 'num_class', 'learner_model_param.num_class', 0);
  const numTarget = count(params, 'num_target', 'learner_model_param.num_target', 1);
  if (numTarget > 1) {
    throw new ModelError(`multi-target models (num_target=${numTarget}) are not supported`);
  }
  const numGroups = Math.max(1, numClass);
  // One base score for every group, or (XGBoost 3's per-class intercepts) one per group.
  const scores = baseScores(field(params, 'base_score'));
  if (scores.length !== 1 && scores.length !== numGroups) {
    throw new ModelError(`base_score lists ${scores.length} values for ${numGroups} output groups`);
  }
  const baseMargins = Array.from({ length: numGroups }, (_, g) =>
    toMargin(scores[scores.length === 1 ? 0 : g] ?? 0, known.link, objective),
  );

  const booster = object(learner, 'gradient_booster', 'learner.gradient_booster');
  const boosterName = text(booster, 'name', 'learner.gradient_booster.name');
  let model: Record<string, unknown>;
  let weights: ArrayLike<number> | null = null;
  if (boosterName === 'gbtree') {
    model = object(booster, 'model', 'gradient_booster.model');
  } else if (boosterName === 'dart') {
    model = object(object(booster, 'gbtree', 'gradient_booster.gbtree'), 'model', 'gbtree.model');
    weights = numbers(field(booster, 'weight_drop'), 'gradient_booster.weight_drop');
  } else {
    throw new ModelError(
      `booster '${boosterName}' is not a tree booster (the tree runtime serves gbtree and dart)`,
    );
  }

  const trees = field(model, 'trees');
  if (!Array.isArray(trees)) throw new ModelError('gradient_booster model.trees is missing');
  const numTrees = count(
    field(model, 'gbtree_model_param'),
    'num_trees',
    'gbtree_model_param.num_trees',
  );
  if (trees.length !== numTrees) {
    throw new ModelError(`num_trees says ${numTrees} but model.trees holds ${trees.length}`);
  }
  const treeInfo = numbers(field(model, 'tree_info'), 'model.tree_info', numTrees);
  if (weights !== null && weights.length !== numTrees) {
    throw new ModelError(`weight_drop has ${weights.length} weights for ${numTrees} trees`);
  }
  const indptr = optionalNumbers(field(model, 'iteration_indptr'), 'model.iteration_indptr');
  if (indptr !== null && indptr.length > 0 && indptr[indptr.length - 1] !== numTrees) {
    throw new ModelError(
      `iteration_indptr ends at ${indptr[indptr.length - 1]}, not at ${numTrees} trees`,
    );
  }

  const builder = new EnsembleBuilder(numFeature, numGroups);
  trees.forEach((tree: unknown, t) => {
    const group = treeInfo[t] ?? -1;
    if (!Number.isInteger(group) || group < 0 || group >= numGroups) {
      throw new ModelError(
        `tree_info[${t}] is ${group}, but the model has ${numGroups} output groups`,
      );
    }
    const weight = weights === null ? 1 : Math.fround(weights[t] ?? Number.NaN);
    const { nodes, leaves } = readTree(tree, weight, `tree ${t}`);
    const problem = builder.addTree(group, nodes, leaves);
    if (problem !== null) throw new ModelError(`tree ${t}: ${problem}`);
  });

  return {
    library: 'xgboost',
    ensemble: builder.build(),
    objective,
    transform: known.transform,
    baseMargins,
    averageOver: null,
    transformAfterAverage: true,
    featureNames: featureNames(field(learner, 'feature_names'), numFeature),
    formatVersion: version,
  };
}

/** XGBoost's ProbToMargin, in float32 like XGBoost. */
function toMargin(score: number, link: Link, objective: string): number {
  switch (link) {
    case 'identity':
      return Math.fround(score);
    case 'logit':
      if (!(score > 0 && score < 1)) {
        throw new ModelError(`base_score ${score} must lie in (0, 1) for ${objective}`);
      }
      return Math.fround(-Math.log(1 / score - 1));
    case 'log':
      if (!(score > 0))
        throw new ModelError(`base_score ${score} must be positive for ${objective}`);
      return Math.fround(Math.log(score));
  }
}

function featureNames(value: unknown, numFeature: number): readonly string[] | null {
  if (!Array.isArray(value) || value.length !== numFeature) return null;
  return value.every((name): name is string => typeof name === 'string') ? value : null;
}

/**
 * One tree's reachable internal nodes in depth-first order (a parent just before its left
 * subtree), with leaves addressed by XGBoost node id.
 */
function readTree(
  tree: unknown,
  weight: number,
  at: string,
): { nodes: NodeSpec[]; leaves: Float64Array } {
  const param = field(tree, 'tree_param');
  const numNodes = count(param, 'num_nodes', `${at} tree_param.num_nodes`);
  if (numNodes < 1) throw new ModelError(`${at} has no nodes`);
  if (count(param, 'size_leaf_vector', `${at} size_leaf_vector`, 0) > 1) {
    throw new ModelError(`${at} has vector leaves (multi-target trees are not supported)`);
  }
  const left = numbers(field(tree, 'left_children'), `${at} left_children`, numNodes);
  const right = numbers(field(tree, 'right_children'), `${at} right_children`, numNodes);
  const features = numbers(field(tree, 'split_indices'), `${at} split_indices`, numNodes);
  const conditions = numbers(field(tree, 'split_conditions'), `${at} split_conditions`, numNodes);
  const defaultLeft = numbers(field(tree, 'default_left'), `${at} default_left`, numNodes);
  const splitType = optionalNumbers(field(tree, 'split_type'), `${at} split_type`, numNodes);
  const categories = splitType === null ? null : readCategories(tree, at);

  const leaves = new Float64Array(numNodes);
  // Children hold XGBoost node ids until every node's index is known, then are patched.
  const nodes: { -readonly [K in keyof NodeSpec]: NodeSpec[K] }[] = [];
  const internalIndex = new Int32Array(numNodes).fill(-1);
  const visited = new Uint8Array(numNodes);
  const stack = [0];
  while (stack.length > 0) {
    const id = stack.pop() ?? 0;
    if (visited[id] === 1) throw new ModelError(`${at}: node ${id} is reached twice`);
    visited[id] = 1;
    const l = left[id] ?? -1;
    const r = right[id] ?? -1;
    if (l === -1 && r === -1) {
      leaves[id] = Math.fround(Math.fround(conditions[id] ?? Number.NaN) * weight);
      continue;
    }
    if (!isChild(l, numNodes) || !isChild(r, numNodes)) {
      throw new ModelError(`${at}: node ${id} has invalid children ${l} and ${r}`);
    }
    const isCategorical = (splitType?.[id] ?? 0) === 1;
    const spec = {
      feature: features[id] ?? -1,
      threshold: Math.fround(conditions[id] ?? Number.NaN),
      kind: isCategorical ? nodeKind.xgboostCategorical : nodeKind.numeric,
      yes: isCategorical ? r : l,
      no: isCategorical ? l : r,
      nanGoesYes: ((defaultLeft[id] ?? 0) !== 0) !== isCategorical,
      ...(isCategorical ? { catBits: categoryBits(categories?.get(id), `${at} node ${id}`) } : {}),
    };
    internalIndex[id] = nodes.length;
    nodes.push(spec);
    stack.push(r, l); // left popped first: it follows its parent
  }
  const local = (id: number): number => {
    const index = internalIndex[id] ?? -1;
    return index >= 0 ? index : ~id;
  };
  for (const spec of nodes) {
    spec.yes = local(spec.yes);
    spec.no = local(spec.no);
  }
  return { nodes, leaves };
}

function isChild(child: number, numNodes: number): boolean {
  return Number.isInteger(child) && child > 0 && child < numNodes;
}

/** node id → its categories (the ones that go right), from the categories_* arrays. */
function readCategories(tree: unknown, at: string): Map<number, ArrayLike<number>> {
  const nodes = optionalNumbers(field(tree, 'categories_nodes'), `${at} categories_nodes`) ?? [];
  const segments = numbers(
    field(tree, 'categories_segments') ?? [],
    `${at} categories_segments`,
    nodes.length,
  );
  const sizes = numbers(
    field(tree, 'categories_sizes') ?? [],
    `${at} categories_sizes`,
    nodes.length,
  );
  const all = numbers(field(tree, 'categories') ?? [], `${at} categories`);
  const out = new Map<number, ArrayLike<number>>();
  for (let k = 0; k < nodes.length; k += 1) {
    const start = segments[k] ?? 0;
    const size = sizes[k] ?? 0;
    if (start < 0 || size < 0 || start + size > all.length) {
      throw new ModelError(`${at}: categories segment ${k} lies outside the categories list`);
    }
    out.set(nodes[k] ?? -1, Array.prototype.slice.call(all, start, start + size) as number[]);
  }
  return out;
}

/** A category list as bitset words: bit c%32 of word c/32. */
function categoryBits(list: ArrayLike<number> | undefined, at: string): Uint32Array {
  if (list === undefined) throw new ModelError(`${at} is a categorical split without categories`);
  let max = -1;
  for (let i = 0; i < list.length; i += 1) {
    const c = list[i] ?? -1;
    if (!Number.isInteger(c) || c < 0 || c >= 16777216) {
      throw new ModelError(`${at} lists an invalid category ${c}`);
    }
    max = Math.max(max, c);
  }
  const bits = new Uint32Array((max >> 5) + 1);
  for (let i = 0; i < list.length; i += 1) {
    const c = list[i] ?? 0;
    bits[c >> 5] = (bits[c >> 5] ?? 0) | (1 << (c & 31));
  }
  return bits;
}
