// One input's `data`, flat or nested, into the typed array its datatype uses (or, for the
// gateway's validate-only pass, through a small reused scratch buffer: every check, no
// tensor-sized allocation).
//
//   flat:    shape [2, 3], data [1, 2, 3, 4, 5, 6]        length must be 2·3
//   nested:  shape [2, 3], data [[1, 2, 3], [4, 5, 6]]    every level must match the shape
//
// Nested data is walked level by level (no recursion): the structure is proven first, so a
// shape that claims more elements than the JSON holds is refused before anything is
// allocated; then each innermost row is filled by the family's hot loop.

import type { TensorData, TensorDatatype } from '../../core/tensor.ts';
import type { DatatypeInfo } from './datatypes.ts';
import { datatypeInfo } from './datatypes.ts';
import type { V2Failure } from './errors.ts';
import { formatShape, jsonKind, v2Failure } from './errors.ts';
import type { Int64Array, IntegerArray } from './fill-elements.ts';
import {
  describeElementError,
  fillBool,
  fillBytes,
  fillFloat32,
  fillFloat64,
  fillHalf,
  fillInt64,
  fillInteger,
} from './fill-elements.ts';

/** The already-checked header of one input. */
export interface TensorDataTarget {
  readonly name: string;
  readonly datatype: TensorDatatype;
  readonly shape: readonly number[];
  /** Product of the shape. */
  readonly count: number;
  readonly allowNonFinite: boolean;
}

/** A failure that may go away when the body is re-read with exact integers. */
export type TensorDataFailure = V2Failure & { readonly inexactInteger?: true };

export type TensorDataResult = { readonly ok: true; readonly data: TensorData } | TensorDataFailure;

interface Sink {
  readonly info: DatatypeInfo;
  readonly allowNonFinite: boolean;
  /** The tensor's own container, or a scratch buffer reused chunk by chunk. */
  readonly out: TensorData | null;
  /** Uint32 view of `out` for INT64/UINT64 (see fillInt64). */
  readonly words: Uint32Array | null;
  readonly scratch: boolean;
}

export function decodeTensorData(target: TensorDataTarget, data: unknown): TensorDataResult {
  const rows = structure(target, data);
  if ('ok' in rows) return rows;
  const info = datatypeInfo[target.datatype];
  const out = info.allocate(target.count);
  const words =
    out instanceof BigInt64Array || out instanceof BigUint64Array
      ? new Uint32Array(out.buffer, out.byteOffset, out.length * 2)
      : null;
  const failure = fill(target, rows, {
    info,
    allowNonFinite: target.allowNonFinite,
    out,
    words,
    scratch: false,
  });
  return failure ?? { ok: true, data: out };
}

/** Every check decodeTensorData makes, without allocating the tensor. */
export function checkTensorData(
  target: TensorDataTarget,
  data: unknown,
): { readonly ok: true } | TensorDataFailure {
  const rows = structure(target, data);
  if ('ok' in rows) return rows;
  const info = datatypeInfo[target.datatype];
  const failure = fill(target, rows, {
    info,
    allowNonFinite: target.allowNonFinite,
    out: scratchFor(info),
    words: info.family === 'int64' ? scratchWords : null,
    scratch: true,
  });
  return failure ?? { ok: true };
}

// --- structure --------------------------------------------------------------------------

/** The innermost rows in row-major order (flat data is one row), or why the data is malformed. */
function structure(target: TensorDataTarget, data: unknown): readonly unknown[][] | V2Failure {
  if (!Array.isArray(data)) {
    return v2Failure(
      'KILN_INVALID_TENSOR',
      `input '${target.name}': 'data' must be an array, got ${jsonKind(data)}`,
      target.name,
    );
  }
  const shape = target.shape;
  if (shape.length >= 2 && data.length > 0 && Array.isArray(data[0])) {
    return nestedRows(target, data);
  }
  if (data.length !== target.count) {
    return v2Failure(
      'KILN_INVALID_TENSOR',
      `input '${target.name}': data holds ${data.length} elements, shape ${formatShape(shape)} needs ${target.count}`,
      target.name,
    );
  }
  return [data];
}

function nestedRows(target: TensorDataTarget, data: unknown[]): readonly unknown[][] | V2Failure {
  const shape = target.shape;
  let level: unknown[] = [data];
  for (let depth = 0; depth < shape.length; depth++) {
    const size = shape[depth] ?? 0;
    const innermost = depth === shape.length - 1;
    const next: unknown[] = [];
    for (let k = 0; k < level.length; k++) {
      const node = level[k];
      if (!Array.isArray(node) || node.length !== size) {
        const where = `data${formatIndex(k, shape.slice(0, depth), '][')}`;
        const what = Array.isArray(node)
          ? `has ${node.length} elements, expected ${size}`
          : `is ${jsonKind(node)}, expected an array of ${size}`;
        return v2Failure(
          'KILN_INVALID_TENSOR',
          `input '${target.name}': nested data does not match shape ${formatShape(shape)}: ${where} ${what}`,
          target.name,
        );
      }
      if (!innermost) for (let j = 0; j < size; j++) next.push(node[j]);
    }
    if (innermost) return level as unknown[][];
    level = next;
  }
  return [];
}

/** `[1][2]` (or `1, 2` with separator ', ') for a row-major index into `dims`. */
function formatIndex(index: number, dims: readonly number[], separator: string): string {
  if (dims.length === 0) return '';
  const coordinates = new Array<number>(dims.length);
  let rest = index;
  for (let d = dims.length - 1; d >= 0; d--) {
    const size = dims[d] ?? 1;
    coordinates[d] = size === 0 ? 0 : rest % size;
    rest = size === 0 ? 0 : Math.floor(rest / size);
  }
  return separator === ', ' ? coordinates.join(', ') : `[${coordinates.join('][')}]`;
}

// --- filling ----------------------------------------------------------------------------

function fill(
  target: TensorDataTarget,
  rows: readonly unknown[][],
  sink: Sink,
): TensorDataFailure | null {
  let at = 0;
  for (const row of rows) {
    const bad = sink.scratch ? fillChunked(row, sink) : fillRange(row, 0, row.length, sink, at);
    if (bad >= 0) return elementFailure(target, at + bad, row[bad], sink);
    at += row.length;
  }
  return null;
}

function fillChunked(row: readonly unknown[], sink: Sink): number {
  for (let from = 0; from < row.length; from += scratchSize) {
    const bad = fillRange(row, from, Math.min(row.length, from + scratchSize), sink, 0);
    if (bad >= 0) return bad;
  }
  return -1;
}

function fillRange(
  values: readonly unknown[],
  from: number,
  to: number,
  sink: Sink,
  at: number,
): number {
  const info = sink.info;
  const out = sink.out;
  switch (info.family) {
    case 'float32':
      return fillFloat32(values, from, to, out as Float32Array, at, sink.allowNonFinite);
    case 'float64':
      return fillFloat64(values, from, to, out as Float64Array, at, sink.allowNonFinite);
    case 'half':
      return fillHalf(values, from, to, out as Uint16Array, at, info, sink.allowNonFinite);
    case 'integer':
      return fillInteger(values, from, to, out as IntegerArray, at, info.min, info.max);
    case 'int64':
      return fillInt64(values, from, to, out as Int64Array, sink.words as Uint32Array, at, info);
    case 'bool':
      return fillBool(values, from, to, out as Uint8Array, at);
    case 'bytes':
      return fillBytes(values, from, to, out as string[] | null, at);
  }
}

function elementFailure(
  target: TensorDataTarget,
  index: number,
  value: unknown,
  sink: Sink,
): TensorDataFailure {
  const problem = describeElementError(value, sink.info, sink.allowNonFinite);
  const where =
    target.shape.length >= 2 ? ` (index [${formatIndex(index, target.shape, ', ')}])` : '';
  const failure = v2Failure(
    'KILN_INVALID_TENSOR',
    `input '${target.name}': element ${index}${where} ${problem.text}`,
    target.name,
  );
  return problem.inexactInteger ? { ...failure, inexactInteger: true } : failure;
}

// --- scratch buffers for validate-only ----------------------------------------------------
// One per family, shared by every check (JS runs one check at a time). Scratch contents are
// never read.

const scratchSize = 1024;
const scratchInt64 = new BigInt64Array(scratchSize);
const scratchWords = new Uint32Array(scratchInt64.buffer);
const scratchBuffers = {
  float32: new Float32Array(scratchSize),
  float64: new Float64Array(scratchSize),
  half: new Uint16Array(scratchSize),
  integer: new Int32Array(scratchSize),
  bool: new Uint8Array(scratchSize),
};

function scratchFor(info: DatatypeInfo): TensorData | null {
  switch (info.family) {
    case 'int64':
      return scratchInt64;
    case 'bytes':
      return null;
    case 'float32':
    case 'float64':
    case 'half':
    case 'integer':
    case 'bool':
      return scratchBuffers[info.family];
  }
}
