// Checks a reference profile as a user sent it (`PUT .../profile`, `kiln models register
// --profile FILE`) and answers the first problem by its path (`features.age.moments.count:
// must be an integer >= 0, got -1`), so a hand-edited or foreign file is refused with words
// rather than poisoning every later PSI with a NaN. Pure.

import type { HistogramSketchSnapshot } from '../../traffic/histogram-sketch.ts';
import type { MomentsSnapshot } from '../../traffic/running-moments.ts';
import type { Resolved } from '../resolved.ts';
import {
  profileFormatVersion,
  type CategoricalSketch,
  type DataProfile,
  type FeatureSketch,
  type NumericSketch,
} from './data-profile.ts';

/** Names per side; a profile is one JSON document, so this bounds its work (~one per column). */
export const maxProfileNames = 10_000;
/** Buckets per histogram side: 0.01 accuracy spans 1e-12..1e300 in ~36 000. */
const maxBucketsPerSide = 40_000;

class ProfileProblem extends Error {}

function fail(path: string, reason: string): never {
  throw new ProfileProblem(`${path}: ${reason}`);
}

export function parseDataProfile(input: unknown): Resolved<DataProfile> {
  try {
    return { ok: true, value: profileOf(input) };
  } catch (error) {
    if (error instanceof ProfileProblem) return { ok: false, reason: error.message };
    throw error;
  }
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 40));
  return `a ${typeof value}`;
}

function objectAt(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(path, `must be an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

function onlyFields(fields: Record<string, unknown>, known: readonly string[], path: string): void {
  for (const key of Object.keys(fields)) {
    if (!known.includes(key)) fail(path, `unknown field ${key} (known: ${known.join(', ')})`);
  }
}

function countAt(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    fail(path, `must be an integer >= 0, got ${describe(value)}`);
  }
  return value;
}

function finiteAt(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    fail(path, `must be a finite number, got ${describe(value)}`);
  }
  return value;
}

function profileOf(input: unknown): DataProfile {
  const fields = objectAt(input, 'profile');
  onlyFields(fields, ['formatVersion', 'rows', 'features', 'outputs', 'createdAt'], 'profile');
  if (fields['formatVersion'] !== profileFormatVersion) {
    fail(
      'formatVersion',
      `must be ${profileFormatVersion}, got ${describe(fields['formatVersion'])}`,
    );
  }
  const rows = countAt(fields['rows'], 'rows');
  const createdAt = fields['createdAt'];
  if (typeof createdAt !== 'string' || Number.isNaN(Date.parse(createdAt))) {
    fail('createdAt', `must be an ISO 8601 time, got ${describe(createdAt)}`);
  }
  const features = sketchesAt(fields['features'], 'features', rows);
  const outputs = sketchesAt(fields['outputs'] ?? {}, 'outputs', rows);
  if (Object.keys(features).length + Object.keys(outputs).length === 0) {
    fail('profile', 'has no features and no outputs');
  }
  return {
    formatVersion: profileFormatVersion,
    rows,
    features,
    outputs,
    createdAt: new Date(createdAt).toISOString(),
  };
}

function sketchesAt(value: unknown, path: string, rows: number): Record<string, FeatureSketch> {
  const fields = objectAt(value, path);
  const names = Object.keys(fields);
  if (names.length > maxProfileNames) {
    fail(path, `has ${names.length} names; at most ${maxProfileNames}`);
  }
  const out: [string, FeatureSketch][] = [];
  for (const name of names) {
    const at = `${path}.${name}`;
    if (name.length === 0 || name.length > 256) fail(at, 'a name is 1 to 256 characters');
    const sketch = sketchOf(fields[name], at);
    const total =
      (sketch.kind === 'numeric' ? sketch.moments.count : sketch.count) + sketch.missing;
    if (total > rows) fail(at, `counts ${total} values but the profile has ${rows} rows`);
    out.push([name, sketch]);
  }
  return Object.fromEntries(out);
}

function sketchOf(value: unknown, path: string): FeatureSketch {
  const fields = objectAt(value, path);
  const kind = fields['kind'];
  if (kind === 'numeric') return numericOf(fields, path);
  if (kind === 'categorical') return categoricalOf(fields, path);
  return fail(
    `${path}.kind`,
    `unknown sketch kind ${describe(kind)} (known: numeric, categorical)`,
  );
}

function numericOf(fields: Record<string, unknown>, path: string): NumericSketch {
  onlyFields(fields, ['kind', 'missing', 'moments', 'histogram'], path);
  const missing = countAt(fields['missing'], `${path}.missing`);
  const moments = momentsOf(fields['moments'], `${path}.moments`);
  const histogram = histogramOf(fields['histogram'], `${path}.histogram`);
  const total =
    histogram.zeroCount +
    histogram.positive.reduce((sum, [, count]) => sum + count, 0) +
    histogram.negative.reduce((sum, [, count]) => sum + count, 0);
  if (total !== moments.count) {
    fail(`${path}.histogram`, `holds ${total} values but moments.count is ${moments.count}`);
  }
  return { kind: 'numeric', missing, moments, histogram };
}

function momentsOf(value: unknown, path: string): MomentsSnapshot {
  const fields = objectAt(value, path);
  onlyFields(fields, ['count', 'mean', 'm2', 'min', 'max'], path);
  const count = countAt(fields['count'], `${path}.count`);
  const mean = finiteAt(fields['mean'], `${path}.mean`);
  const m2 = finiteAt(fields['m2'], `${path}.m2`);
  if (m2 < 0) fail(`${path}.m2`, `must be >= 0, got ${m2}`);
  if (count === 0) {
    if (fields['min'] !== null || fields['max'] !== null) {
      fail(path, 'min and max must be null when count is 0');
    }
    return { count, mean, m2, min: null, max: null };
  }
  const min = finiteAt(fields['min'], `${path}.min`);
  const max = finiteAt(fields['max'], `${path}.max`);
  if (min > max) fail(path, `min ${min} is above max ${max}`);
  if (mean < min || mean > max) fail(`${path}.mean`, `${mean} lies outside [min, max]`);
  return { count, mean, m2, min, max };
}

function histogramOf(value: unknown, path: string): HistogramSketchSnapshot {
  const fields = objectAt(value, path);
  onlyFields(fields, ['relativeAccuracy', 'zeroCount', 'positive', 'negative'], path);
  const relativeAccuracy = finiteAt(fields['relativeAccuracy'], `${path}.relativeAccuracy`);
  if (!(relativeAccuracy > 0 && relativeAccuracy < 1)) {
    fail(`${path}.relativeAccuracy`, `must lie in (0, 1), got ${relativeAccuracy}`);
  }
  return {
    relativeAccuracy,
    zeroCount: countAt(fields['zeroCount'], `${path}.zeroCount`),
    positive: bucketsOf(fields['positive'], `${path}.positive`),
    negative: bucketsOf(fields['negative'], `${path}.negative`),
  };
}

function bucketsOf(value: unknown, path: string): [number, number][] {
  if (!Array.isArray(value))
    fail(path, `must be an array of [index, count], got ${describe(value)}`);
  if (value.length > maxBucketsPerSide) {
    fail(path, `has ${value.length} buckets; at most ${maxBucketsPerSide}`);
  }
  const out: [number, number][] = [];
  let previous = -Infinity;
  for (const [i, entry] of (value as unknown[]).entries()) {
    const at = `${path}[${i}]`;
    if (!Array.isArray(entry) || entry.length !== 2) fail(at, 'must be [index, count]');
    const [index, count] = entry as unknown[];
    if (typeof index !== 'number' || !Number.isSafeInteger(index)) {
      fail(at, `bucket index must be an integer, got ${describe(index)}`);
    }
    if (index <= previous) fail(at, 'bucket indexes must be strictly ascending');
    previous = index;
    out.push([index, countAt(count, `${at} count`)]);
  }
  return out;
}

function categoricalOf(fields: Record<string, unknown>, path: string): CategoricalSketch {
  onlyFields(fields, ['kind', 'missing', 'count', 'maxCategories', 'categories', 'other'], path);
  const missing = countAt(fields['missing'], `${path}.missing`);
  const count = countAt(fields['count'], `${path}.count`);
  const maxCategories = countAt(fields['maxCategories'], `${path}.maxCategories`);
  if (maxCategories < 1) fail(`${path}.maxCategories`, 'must be >= 1');
  const other = countAt(fields['other'], `${path}.other`);
  const categoryFields = objectAt(fields['categories'], `${path}.categories`);
  const names = Object.keys(categoryFields);
  if (names.length > maxCategories) {
    fail(`${path}.categories`, `has ${names.length} categories; maxCategories is ${maxCategories}`);
  }
  let sum = other;
  const categories: [string, number][] = [];
  for (const name of names.sort()) {
    const categoryCount = countAt(categoryFields[name], `${path}.categories.${name}`);
    sum += categoryCount;
    categories.push([name, categoryCount]);
  }
  if (sum !== count) {
    fail(path, `categories and other add up to ${sum} but count is ${count}`);
  }
  return {
    kind: 'categorical',
    missing,
    count,
    maxCategories,
    categories: Object.fromEntries(categories),
    other,
  };
}
