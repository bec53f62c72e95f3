// Which feature and output names a version's profile may use: the names the workers see, so
// a serving sketch and the reference line up by name (drift, C). A feature is named
//
//   - by the model's feature names (tree models: formatInfo.featureNames), the names a
//     request may send them by (V2 named features, src/protocol/v2/input-naming.ts);
//   - by a schema input's name when it is one column ([-1] or [-1, 1]);
//   - as INPUT[i] for column i of a schema input shaped [-1, F] when the model has no F
//     feature names (a feature matrix without names).
//
// Outputs likewise: OUTPUT for a one-column output, OUTPUT[j] for column j of a [-1, K] one
// (class probabilities). The worker's drift sketches name columns by the same rule. With
// neither a schema nor feature names, any name is accepted (nothing to check against). Pure.

import type { ModelSchema, TensorSpec } from '../../core/tensor.ts';
import type { DataProfile } from './data-profile.ts';

export interface VersionNames {
  readonly schema: ModelSchema | null;
  readonly featureNames: readonly string[] | null;
}

/** The version's feature names out of its formatInfo, when it carries them. */
export function formatFeatureNames(formatInfo: Readonly<Record<string, unknown>>): string[] | null {
  const names = formatInfo['featureNames'];
  if (!Array.isArray(names) || !names.every((name) => typeof name === 'string')) return null;
  return names;
}

/** null when every name is known; else the sentence naming the unknown ones and the known. */
export function unknownProfileNames(profile: DataProfile, version: VersionNames): string | null {
  const problems: string[] = [];
  const featureNames = version.featureNames ?? [];
  if (version.schema !== null || featureNames.length > 0) {
    const features = knownNames(version.schema?.inputs ?? [], featureNames);
    const problem = unknownNames('feature', Object.keys(profile.features), features);
    if (problem !== null) problems.push(problem);
  }
  if (version.schema !== null) {
    const outputs = knownNames(version.schema.outputs, []);
    const problem = unknownNames('output', Object.keys(profile.outputs), outputs);
    if (problem !== null) problems.push(problem);
  }
  return problems.length === 0 ? null : problems.join('; ');
}

interface KnownNames {
  readonly exact: ReadonlySet<string>;
  /** NAME[j] columns: NAME → number of columns (Infinity: a variable width). */
  readonly indexed: ReadonlyMap<string, number>;
}

/**
 * The column names a worker gives the tensors of `specs` (as the drift sketches name them): a
 * one-column tensor by its name; a [-1, F] one by the model's feature names when there are F
 * of them, else NAME[0] … NAME[F-1]. The model's feature names are always accepted too.
 */
function knownNames(specs: readonly TensorSpec[], featureNames: readonly string[]): KnownNames {
  const exact = new Set<string>(featureNames);
  const indexed = new Map<string, number>();
  for (const spec of specs) {
    const width = spec.shape.length === 2 ? (spec.shape[1] ?? 1) : 1;
    if (width === 1) exact.add(spec.name);
    else if (width < 0) {
      exact.add(spec.name);
      indexed.set(spec.name, Infinity);
    } else if (featureNames.length !== width) indexed.set(spec.name, width);
  }
  return { exact, indexed };
}

function accepts(known: KnownNames, name: string): boolean {
  if (known.exact.has(name)) return true;
  const match = /^(.*)\[(\d+)\]$/.exec(name);
  if (match === null) return false;
  const columns = known.indexed.get(match[1] ?? '');
  return columns !== undefined && Number(match[2]) < columns;
}

function unknownNames(side: string, names: readonly string[], known: KnownNames): string | null {
  const unknown = names.filter((name) => !accepts(known, name));
  if (unknown.length === 0) return null;
  const texts = [...known.exact];
  for (const [name, columns] of known.indexed) {
    texts.push(Number.isFinite(columns) ? `${name}[0..${columns - 1}]` : `${name}[j]`);
  }
  return `unknown ${side}${unknown.length > 1 ? 's' : ''} ${list(unknown)} (the version has ${texts.length === 0 ? 'none' : list(texts)})`;
}

function list(names: readonly string[]): string {
  const shown = names.slice(0, 20).join(', ');
  return names.length > 20 ? `${shown}, … (${names.length} in all)` : shown;
}
