// Computes a version's reference profile from a data sample (rows of column → value, from
// parse-sample-file.ts): one sketch per column, outputs apart from features. A column is
// numeric when every present value is a number (JSONL) or reads as a decimal number (CSV);
// otherwise categorical, or when declared so (integer-coded categories like a zip code).
// Missing: absent, null, an empty cell; in a numeric column also NaN/NA/null/inf tokens and
// non-finite numbers. Pure: the caller supplies the time.

import type { Resolved } from '../resolved.ts';
import { CategoricalSketcher } from './categorical-sketcher.ts';
import {
  defaultMaxCategories,
  defaultRelativeAccuracy,
  profileFormatVersion,
  type DataProfile,
  type FeatureSketch,
} from './data-profile.ts';
import { NumericSketcher } from './numeric-sketcher.ts';
import { maxProfileNames } from './parse-data-profile.ts';
import type { SampleRow } from './parse-sample-file.ts';

export interface ComputeProfileOptions {
  /** Columns that are model outputs (a prediction column of the sample), not features. */
  readonly outputs?: readonly string[];
  /** Columns sketched as categories even when every value is a number. */
  readonly categorical?: readonly string[];
  /** Columns left out (an id, the label when it is not an output of the model). */
  readonly exclude?: readonly string[];
  readonly relativeAccuracy?: number;
  readonly maxCategories?: number;
  /** ISO time stamped as createdAt. */
  readonly createdAt: string;
}

const decimal = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const missingNumberTokens = new Set([
  'nan',
  'na',
  'null',
  'none',
  'inf',
  '+inf',
  '-inf',
  'infinity',
  '+infinity',
  '-infinity',
]);

type Cell =
  { kind: 'missing' } | { kind: 'number'; value: number } | { kind: 'text'; value: string };

function cellOf(value: unknown): Cell | null {
  if (value === undefined || value === null) return { kind: 'missing' };
  if (typeof value === 'number') {
    return Number.isFinite(value) ? { kind: 'number', value } : { kind: 'missing' };
  }
  if (typeof value === 'boolean') return { kind: 'text', value: String(value) };
  if (typeof value === 'string') {
    const trimmed = value.trim();
    if (trimmed === '') return { kind: 'missing' };
    if (decimal.test(trimmed)) return { kind: 'number', value: Number(trimmed) };
    return { kind: 'text', value };
  }
  return null; // an object or array: not a column value
}

export function computeProfile(
  rows: readonly SampleRow[],
  options: ComputeProfileOptions,
): Resolved<DataProfile> {
  if (rows.length === 0) return { ok: false, reason: 'the sample has no rows' };
  const exclude = new Set(options.exclude ?? []);
  const columns: string[] = [];
  const seen = new Set<string>();
  for (const row of rows) {
    for (const name of Object.keys(row)) {
      if (!seen.has(name) && !exclude.has(name)) columns.push(name);
      seen.add(name);
    }
  }
  if (columns.length > maxProfileNames) {
    return {
      ok: false,
      reason: `the sample has ${columns.length} columns; at most ${maxProfileNames}`,
    };
  }
  for (const [flag, names] of [
    ['outputs', options.outputs ?? []],
    ['categorical', options.categorical ?? []],
  ] as const) {
    const missing = names.filter((name) => !seen.has(name));
    if (missing.length > 0) {
      return {
        ok: false,
        reason: `${flag} names column ${missing.join(', ')} that the sample does not have (columns: ${columns.slice(0, 20).join(', ')})`,
      };
    }
  }
  // Pass 1: a column is numeric unless declared categorical or a present value is text.
  const declared = new Set(options.categorical ?? []);
  const textual = new Set<string>(declared);
  for (const [i, row] of rows.entries()) {
    for (const name of columns) {
      const cell = cellOf(row[name]);
      if (cell === null) {
        return {
          ok: false,
          reason: `row ${i + 1} column ${name}: nested values are not supported`,
        };
      }
      if (cell.kind === 'text' && !missingNumberTokens.has(cell.value.trim().toLowerCase())) {
        textual.add(name);
      }
    }
  }
  // Pass 2: sketch.
  const accuracy = options.relativeAccuracy ?? defaultRelativeAccuracy;
  const maxCategories = options.maxCategories ?? defaultMaxCategories;
  const sketchers = new Map<string, NumericSketcher | CategoricalSketcher>(
    columns.map((name) => [
      name,
      textual.has(name) ? new CategoricalSketcher(maxCategories) : new NumericSketcher(accuracy),
    ]),
  );
  // Categorical sketches of a whole sample keep the most frequent names, not the first seen.
  const categoryCounts = new Map<string, Map<string, number>>();
  for (const row of rows) {
    for (const name of columns) {
      const cell = cellOf(row[name]) ?? { kind: 'missing' };
      const sketcher = sketchers.get(name);
      if (sketcher instanceof NumericSketcher) {
        sketcher.add(cell.kind === 'number' ? cell.value : null);
      } else if (sketcher !== undefined) {
        if (cell.kind === 'missing') sketcher.addMissing();
        else {
          const text = cell.kind === 'number' ? String(row[name]).trim() : cell.value;
          const counts = categoryCounts.get(name) ?? new Map<string, number>();
          counts.set(text, (counts.get(text) ?? 0) + 1);
          categoryCounts.set(name, counts);
        }
      }
    }
  }
  for (const [name, counts] of categoryCounts) {
    const sketcher = sketchers.get(name);
    if (!(sketcher instanceof CategoricalSketcher)) continue;
    const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    for (const [text, count] of ranked) for (let k = 0; k < count; k++) sketcher.add(text);
  }
  const outputNames = new Set(options.outputs ?? []);
  const features: [string, FeatureSketch][] = [];
  const outputs: [string, FeatureSketch][] = [];
  for (const [name, sketcher] of sketchers) {
    (outputNames.has(name) ? outputs : features).push([name, sketcher.snapshot()]);
  }
  return {
    ok: true,
    value: {
      formatVersion: profileFormatVersion,
      rows: rows.length,
      features: Object.fromEntries(features),
      outputs: Object.fromEntries(outputs),
      createdAt: options.createdAt,
    },
  };
}
