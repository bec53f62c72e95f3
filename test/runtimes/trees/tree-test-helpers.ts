// Shared by the tree runtime's tests: fixture paths, reading expected outputs, comparing.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const treeFixtures = fileURLToPath(new URL('../../../fixtures/trees/', import.meta.url));
export const registryFixtures = fileURLToPath(
  new URL('../../../fixtures/registry/', import.meta.url),
);
/** Real LightGBM models and LightGBM's own predictions (see its README.md); may be absent. */
export {
  lightgbmFixtures,
  haveLightgbmFixtures,
  noLightgbmFixtures,
  lightgbmSkip,
} from '../../helpers/shared-fixtures.ts';

export const kernels = ['auto', 'interpreter', 'compiled'] as const;

/** What make_xgboost_fixtures.py writes next to each model. */
export interface XgboostExpected {
  readonly objective: string;
  readonly numFeature: number;
  readonly numClass: number;
  readonly featureNames: readonly string[] | null;
  readonly rows: readonly (readonly (number | null)[])[];
  readonly predictions: readonly number[] | readonly (readonly number[])[];
  readonly margins: readonly number[] | readonly (readonly number[])[];
}

export function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

/** Rows with null for NaN → one flat row-major Float32Array. */
export function float32Rows(rows: readonly (readonly (number | null)[])[]): Float32Array {
  return Float32Array.from(rows.flat(), (v) => (v === null ? Number.NaN : v));
}

/** A whitespace-separated numeric table, optionally dropping leading columns. */
export function readTable(path: string, skipColumns = 0): number[][] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).slice(skipColumns).map(Number));
}

/** Largest |actual - expected|; NaN when the lengths differ or a value is NaN on one side. */
export function maxAbsDiff(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  if (actual.length !== expected.length) return Number.NaN;
  let max = 0;
  for (let i = 0; i < expected.length; i += 1) {
    const a = actual[i] ?? Number.NaN;
    const e = expected[i] ?? Number.NaN;
    if (Number.isNaN(a) !== Number.isNaN(e)) return Number.NaN;
    if (!Number.isNaN(a)) max = Math.max(max, Math.abs(a - e));
  }
  return max;
}

/**
 * A LightGBM text model from tree sections (each a list of `key=value` lines), with a
 * header LightGBM itself would write.
 */
export function lightgbmModel(options: {
  numFeatures: number;
  objective?: string;
  numClass?: number;
  extraHeader?: readonly string[];
  trees: readonly (readonly string[])[];
  parameters?: readonly string[];
}): string {
  const numClass = options.numClass ?? 1;
  const header = [
    'tree',
    'version=v3',
    `num_class=${numClass}`,
    `num_tree_per_iteration=${numClass}`,
    'label_index=0',
    `max_feature_idx=${options.numFeatures - 1}`,
    ...(options.objective === undefined ? [] : [`objective=${options.objective}`]),
    ...(options.extraHeader ?? []),
    `feature_names=${Array.from({ length: options.numFeatures }, (_, i) => `f${i}`).join(' ')}`,
  ];
  const trees = options.trees.map((lines, i) => [`Tree=${i}`, ...lines, '', ''].join('\n'));
  const parameters =
    options.parameters === undefined
      ? ''
      : ['parameters:', ...options.parameters, 'end of parameters', ''].join('\n');
  return `${header.join('\n')}\n\n${trees.join('')}end of trees\n\n${parameters}`;
}
