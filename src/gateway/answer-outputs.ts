// The outputs of a replica's v2 answer, read for traffic management only (endpoints with a
// traffic policy; never on the plain forwarding path): the values counted per version
// (protocol/traffic/traffic-report.ts: the first numeric output, column 0 of each row) and
// the comparison of a shadow's answer with the primary's.

import { tensorDatatypes } from '../core/tensor.ts';
import { parseJsonLenient } from '../protocol/v2/lenient-json.ts';
import type { RunningMoments } from '../traffic/running-moments.ts';

/** One output tensor as the answer's JSON has it, its data flattened (row-major). */
export interface AnswerOutput {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly data: readonly unknown[];
}

/** Every datatype whose elements are numbers (not BOOL, not BYTES). */
const numericDatatypes: ReadonlySet<string> = new Set(
  tensorDatatypes.filter((datatype) => datatype !== 'BOOL' && datatype !== 'BYTES'),
);

/** Within this of the primary's value a shadow's element agrees: absolute + relative. */
export const agreementAbsolute = 1e-6;
export const agreementRelative = 1e-4;

/** The outputs of a v2 answer body; null when it is no v2 answer. */
export function answerOutputs(body: Buffer): AnswerOutput[] | null {
  const parsed = parseJsonLenient(body);
  if (!parsed.ok) return null;
  const value = parsed.value;
  if (typeof value !== 'object' || value === null) return null;
  const outputs = (value as { outputs?: unknown }).outputs;
  if (!Array.isArray(outputs)) return null;
  const list: AnswerOutput[] = [];
  for (const output of outputs as unknown[]) {
    if (typeof output !== 'object' || output === null) return null;
    const { name, datatype, shape, data } = output as Record<string, unknown>;
    if (typeof name !== 'string' || typeof datatype !== 'string') return null;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d))) return null;
    if (!Array.isArray(data)) return null;
    list.push({ name, datatype, shape: shape as number[], data: flatten(data) });
  }
  return list;
}

/**
 * The values counted for an answer: the first output with a numeric datatype, column 0 of
 * each of its shape[0] rows, at most `max` values; null when it has none.
 */
export function outputColumn(outputs: readonly AnswerOutput[], max: number): number[] | null {
  const output = outputs.find((o) => numericDatatypes.has(o.datatype));
  if (output === undefined) return null;
  const rows = output.shape.length === 0 ? 1 : (output.shape[0] ?? 0);
  let columns = 1;
  for (let i = 1; i < output.shape.length; i++) columns *= output.shape[i] ?? 0;
  if (rows <= 0 || columns <= 0) return null;
  const values: number[] = [];
  for (let row = 0; row < rows && values.length < max; row++) {
    const value = output.data[row * columns];
    if (typeof value === 'number' && Number.isFinite(value)) values.push(value);
  }
  return values.length === 0 ? null : values;
}

/**
 * Whether a shadow's outputs agree with the primary's: the same outputs (names, shapes),
 * every numeric element within agreementAbsolute + agreementRelative × |primary|, every
 * other element equal. |shadow − primary| of each numeric element compared goes into
 * `absDiff` (outputs matched by name, even when the answers do not agree as a whole).
 */
export function compareOutputs(
  primary: readonly AnswerOutput[],
  shadow: readonly AnswerOutput[],
  absDiff: RunningMoments,
): boolean {
  let agree = primary.length === shadow.length;
  for (const expected of primary) {
    const got = shadow.find((o) => o.name === expected.name);
    if (got === undefined) {
      agree = false;
      continue;
    }
    if (!sameShape(expected.shape, got.shape) || expected.data.length !== got.data.length) {
      agree = false;
      continue;
    }
    const numeric = numericDatatypes.has(expected.datatype);
    for (let i = 0; i < expected.data.length; i++) {
      const p = expected.data[i];
      const s = got.data[i];
      if (numeric && typeof p === 'number' && typeof s === 'number') {
        const diff = Math.abs(s - p);
        absDiff.add(diff);
        if (!(diff <= agreementAbsolute + agreementRelative * Math.abs(p))) {
          // NaN in both counts as equal; NaN on one side never agrees.
          if (!(Number.isNaN(p) && Number.isNaN(s))) agree = false;
        }
      } else if (p !== s) {
        agree = false;
      }
    }
  }
  return agree;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** v2 allows nested data ([[1, 2], [3, 4]]); row-major flat is what shapes index. */
function flatten(data: readonly unknown[]): unknown[] {
  if (!data.some(Array.isArray)) return data as unknown[];
  return (data as unknown[]).flat(Infinity);
}
