// XGBoost artifacts: exactly one model file saved by `Booster.save_model`, as text JSON or
// UBJSON (`.json` / `.ubj`; which one is decided by content, since both start with `{`). The
// legacy binary format (`.model`, `.bst`) is refused: it has no schema to check.
//
// The document (the same tree in both encodings; numbers in params are strings):
//   { "version": [1, 7, 4],
//     "learner": { "feature_names": [...], "objective": { "name": "binary:logistic", ... },
//       "learner_model_param": { "num_feature": "5", "num_class": "0", "base_score": "5E-1" },
//       "gradient_booster": { "name": "gbtree",
//         "model": { "gbtree_model_param": { "num_trees": "10" }, "trees": [...] } } } }
// dart nests the gbtree under "gbtree"; gblinear keeps "model.weights" and has no trees.

import type { ArtifactFile, FormatCheck } from './artifact-file.ts';
import { readWholeFile } from './read-whole-file.ts';
import { decodeXgboostDocument } from './xgboost-document.ts';
import { count, field, ModelError, numbers, object, text } from './xgboost-fields.ts';

/** Whole-file parse limit: JSON.parse needs the text as one string. */
const maxModelBytes = 256 << 20;
const maxFeatureNamesInInfo = 1000;

export async function validateXgboost(files: readonly ArtifactFile[]): Promise<FormatCheck> {
  const candidates = files.filter((file) => /\.(json|ubj)$/i.test(file.path));
  const file = candidates[0];
  if (file === undefined || candidates.length > 1) {
    const legacy = files.find((f) => /\.(model|bst|bin|deprecated)$/i.test(f.path));
    const hint =
      legacy === undefined
        ? ''
        : `; if ${legacy.path} is XGBoost's legacy binary format, re-save it with booster.save_model('model.ubj')`;
    const found = candidates.length === 0 ? 'none' : candidates.map((f) => f.path).join(', ');
    return {
      ok: false,
      reason: `an XGBoost artifact needs exactly one model file saved as .json or .ubj; found ${found}${hint}`,
    };
  }
  const whole = await readWholeFile(file, maxModelBytes, 'the XGBoost model');
  if (!whole.ok) return { ...whole, path: file.path };
  const root = decodeXgboostDocument(whole.bytes);
  if (!root.ok) return { ok: false, reason: `${file.path}: ${root.reason}`, path: file.path };
  try {
    return { ok: true, info: checkModel(root.value) };
  } catch (error) {
    if (!(error instanceof ModelError)) throw error;
    return {
      ok: false,
      reason: `${file.path}: not an XGBoost model: ${error.message}`,
      path: file.path,
    };
  }
}

function checkModel(root: unknown): Record<string, unknown> {
  const learner = object(root, 'learner', 'learner');
  const version = numbers(field(root, 'version'), 'version');
  if (version.length < 2) throw new ModelError('version must list major, minor and patch');
  const booster = text(field(learner, 'gradient_booster'), 'name', 'learner.gradient_booster.name');
  const objective = text(field(learner, 'objective'), 'name', 'learner.objective.name');
  const params = object(learner, 'learner_model_param', 'learner.learner_model_param');
  const numFeature = count(params, 'num_feature', 'learner.learner_model_param.num_feature');
  const numClass = count(params, 'num_class', 'learner.learner_model_param.num_class');
  const baseScore = parseBaseScore(field(params, 'base_score'));

  let numTrees: number;
  switch (booster) {
    case 'gbtree':
      numTrees = checkTrees(
        field(field(learner, 'gradient_booster'), 'model'),
        numFeature,
        'gradient_booster.model',
      );
      break;
    case 'dart': {
      const inner = field(field(learner, 'gradient_booster'), 'gbtree');
      numTrees = checkTrees(field(inner, 'model'), numFeature, 'gradient_booster.gbtree.model');
      break;
    }
    case 'gblinear':
      if (
        arrayLength(field(field(field(learner, 'gradient_booster'), 'model'), 'weights')) === null
      ) {
        throw new ModelError('learner.gradient_booster.model.weights is missing');
      }
      numTrees = 0;
      break;
    default:
      throw new ModelError(`unknown booster '${booster}' (expected gbtree, dart or gblinear)`);
  }

  const info: Record<string, unknown> = {
    xgboostVersion: Array.from(version).join('.'),
    booster,
    objective,
    numFeature,
    numClass,
    numTrees,
    baseScore,
  };
  const names = field(learner, 'feature_names');
  if (Array.isArray(names) && names.length > 0) {
    if (!names.every((name) => typeof name === 'string')) {
      throw new ModelError('learner.feature_names must be strings');
    }
    if (names.length !== numFeature) {
      throw new ModelError(
        `learner.feature_names has ${names.length} names but num_feature is ${numFeature}`,
      );
    }
    if (names.length <= maxFeatureNamesInInfo) info['featureNames'] = names;
  }
  return info;
}

/** Checks the tree list's counts and each tree's node arrays; returns the number of trees. */
function checkTrees(model: unknown, numFeature: number, where: string): number {
  const declared = count(
    field(model, 'gbtree_model_param'),
    'num_trees',
    `${where}.gbtree_model_param.num_trees`,
  );
  const trees = field(model, 'trees');
  if (!Array.isArray(trees)) throw new ModelError(`${where}.trees is missing`);
  if (trees.length !== declared) {
    throw new ModelError(`num_trees says ${declared} but ${where}.trees holds ${trees.length}`);
  }
  const treeInfo = arrayLength(field(model, 'tree_info'));
  if (treeInfo !== null && treeInfo !== declared) {
    throw new ModelError(`${where}.tree_info has ${treeInfo} entries for ${declared} trees`);
  }
  trees.forEach((tree: unknown, index) => {
    const at = `tree ${index}`;
    const numNodes = count(field(tree, 'tree_param'), 'num_nodes', `${at} tree_param.num_nodes`);
    const left = numbers(field(tree, 'left_children'), `${at} left_children`);
    const right = numbers(field(tree, 'right_children'), `${at} right_children`);
    const splits = numbers(field(tree, 'split_indices'), `${at} split_indices`);
    for (const [name, list] of [
      ['left_children', left],
      ['right_children', right],
      ['split_indices', splits],
    ] as const) {
      if (list.length !== numNodes) {
        throw new ModelError(`${at} has ${list.length} ${name} for ${numNodes} nodes`);
      }
    }
    for (let node = 0; node < numNodes; node += 1) {
      const l = left[node] ?? -1;
      const r = right[node] ?? -1;
      if (l < -1 || l >= numNodes || r < -1 || r >= numNodes || (l === -1) !== (r === -1)) {
        throw new ModelError(`${at} node ${node} has invalid children ${l} and ${r}`);
      }
      const feature = splits[node] ?? 0;
      if (l !== -1 && (feature < 0 || feature >= numFeature)) {
        throw new ModelError(
          `${at} node ${node} splits on feature ${feature}, but num_feature is ${numFeature}`,
        );
      }
    }
    // The nodes must form a tree from node 0: a cycle, or a node two parents share, is a
    // file the runtime would refuse at load (and a version that could never be served).
    if (numNodes > 0) {
      const seen = new Uint8Array(numNodes);
      const stack = [0];
      seen[0] = 1;
      while (stack.length > 0) {
        const node = stack.pop()!;
        for (const child of [left[node] ?? -1, right[node] ?? -1]) {
          if (child === -1) continue;
          if (seen[child] === 1)
            throw new ModelError(`${at}: node ${child} is reached twice (a cycle, or two parents)`);
          seen[child] = 1;
          stack.push(child);
        }
      }
    }
  });
  return declared;
}

/** "5E-1" (XGBoost 1.x/2.x) or "[5E-1]" / "[1E-1,2E-1]" (3.x, one per target). */
function parseBaseScore(value: unknown): number | number[] {
  if (typeof value !== 'string')
    throw new ModelError('learner.learner_model_param.base_score is missing');
  const text = value.trim();
  const parts = (text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text).split(',');
  const numbers = parts.map((part) => (part.trim() === '' ? Number.NaN : Number(part)));
  if (numbers.some((n) => !Number.isFinite(n))) {
    throw new ModelError(`learner.learner_model_param.base_score '${value}' is not a number`);
  }
  return numbers.length === 1 ? (numbers[0] ?? 0) : numbers;
}

function arrayLength(value: unknown): number | null {
  if (Array.isArray(value)) return value.length;
  if (ArrayBuffer.isView(value) && !(value instanceof DataView))
    return (value as unknown as ArrayLike<unknown>).length;
  return null;
}
