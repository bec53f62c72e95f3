// Which feature and output names a version's profile may use: the names the workers see, so
// a serving sketch and the reference line up by name (drift, C). A feature is named
//
//   - by the model's feature names (tree models: formatInfo.featureNames), the names a
//     request may send them by (V2 named features, src/protocol/v2/input-naming.ts);
//   - by a schema input's name (one input per feature column);
//   - as INPUT[i] for column i of a schema input shaped [-1, F] (a feature matrix without names).
//
// Outputs are named by the schema's outputs. With neither a schema nor feature names, any name
// is accepted (nothing to check against). Pure.

import type { ModelSchema } from '../../core/tensor.ts';
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
  const features = knownFeatures(version);
  if (features !== null) {
    const unknown = Object.keys(profile.features).filter((name) => !features.accepts(name));
    if (unknown.length > 0) {
      problems.push(
        `unknown feature${unknown.length > 1 ? 's' : ''} ${list(unknown)} (the version has ${features.text})`,
      );
    }
  }
  if (version.schema !== null) {
    const outputs = new Set(version.schema.outputs.map((output) => output.name));
    const unknown = Object.keys(profile.outputs).filter((name) => !outputs.has(name));
    if (unknown.length > 0) {
      problems.push(
        `unknown output${unknown.length > 1 ? 's' : ''} ${list(unknown)} (the version has ${list([...outputs])})`,
      );
    }
  }
  return problems.length === 0 ? null : problems.join('; ');
}

function knownFeatures(
  version: VersionNames,
): { accepts: (name: string) => boolean; text: string } | null {
  const names = new Set<string>(version.featureNames ?? []);
  const matrices = new Map<string, number>();
  for (const input of version.schema?.inputs ?? []) {
    names.add(input.name);
    const columns = input.shape[1];
    if (input.shape.length === 2 && columns !== undefined && columns > 0) {
      matrices.set(input.name, columns);
    }
  }
  if (names.size === 0) return null;
  const texts = [...names];
  for (const [name, columns] of matrices) texts.push(`${name}[0..${columns - 1}]`);
  return {
    accepts: (name) => {
      if (names.has(name)) return true;
      const match = /^(.*)\[(\d+)\]$/.exec(name);
      if (match === null) return false;
      const columns = matrices.get(match[1] ?? '');
      return columns !== undefined && Number(match[2]) < columns;
    },
    text: list(texts),
  };
}

function list(names: readonly string[]): string {
  const shown = names.slice(0, 20).join(', ');
  return names.length > 20 ? `${shown}, … (${names.length} in all)` : shown;
}
