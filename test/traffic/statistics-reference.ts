// The cross-check values fixtures/traffic/make_statistics_reference.py wrote (mpmath at 40
// digits, scipy.stats), read as plain JSON so the tests need no Python.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

export interface StatisticsReference {
  readonly normalCdf: readonly (readonly [z: number, p: number])[];
  readonly normalQuantile: readonly (readonly [p: number, z: number])[];
  readonly studentTCdf: readonly (readonly [t: number, df: number, p: number])[];
  readonly studentTQuantile: readonly (readonly [p: number, df: number, t: number])[];
  readonly twoProportion: { readonly z: number; readonly pValue: number };
  readonly welchSummary: { readonly t: number; readonly pValue: number };
  readonly welchSleep: { readonly t: number; readonly pValue: number };
}

export const reference = JSON.parse(
  readFileSync(
    new URL('../../fixtures/traffic/statistics-reference.json', import.meta.url),
    'utf8',
  ),
) as StatisticsReference;

/** |actual - expected| <= tolerance * max(|expected|, tiny): relative, absolute near 0. */
export function assertClose(actual: number, expected: number, tolerance: number, what = ''): void {
  const scale = Math.max(Math.abs(expected), Number.MIN_VALUE);
  const error = Math.abs(actual - expected) / scale;
  assert.ok(
    error <= tolerance,
    `${what} expected ${expected}, got ${actual} (relative error ${error}, tolerance ${tolerance})`,
  );
}
