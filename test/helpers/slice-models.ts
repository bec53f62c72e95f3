// The traffic fixtures (fixtures/traffic/make_slice_models.py): one ONNX family, x FP32
// [n, 2] -> y FP32 [n, 1], whose versions differ on slice `de` only (x1 = 7):
//   v1 y = x0;  v2 y = x0 but the run fails (500) on de rows;  v3 y = x0 + 10 on de rows.
// Registered in that order, model version N is fixture vN. Requests carry the row's slice
// as `parameters.country` (the rollouts' slicePath `$.parameters.country`), and answers are
// checked against the numpy reference for the version that answered.

import { readFileSync } from 'node:fs';
import { readArtifact, register } from './platform.ts';
import type { LoadAnswer, LoadRequest } from './steady-load.ts';

export const sliceFixtures = new URL('../../fixtures/traffic/', import.meta.url).pathname;

export interface SliceRow {
  readonly slice: string;
  readonly x: readonly [number, number];
}

interface SliceReference {
  readonly rows: readonly SliceRow[];
  readonly versions: Readonly<
    Record<string, { readonly y: readonly (number | null)[]; readonly fails: readonly boolean[] }>
  >;
}

export const sliceReference = JSON.parse(
  readFileSync(`${sliceFixtures}slice-models.expected.json`, 'utf8'),
) as SliceReference;

export const sliceRows = sliceReference.rows;
/** Indexes of the rows of slice de (every 10th) and of the others. */
export const deRows = sliceRows.flatMap((row, i) => (row.slice === 'de' ? [i] : []));
export const otherRows = sliceRows.flatMap((row, i) => (row.slice === 'de' ? [] : [i]));

export const SLICE_PATH = '$.parameters.country';

/** Registers fixtures v1, v2, v3 as versions 1, 2, 3 of `model`; throws unless each is 201. */
export async function registerSliceModels(
  url: string,
  model: string,
  headers: Record<string, string> = {},
): Promise<void> {
  for (const version of [1, 2, 3]) {
    const files = await readArtifact(`${sliceFixtures}slice-v${version}.onnx`, 'model.onnx');
    const response = await register(url, model, 'onnx', files, {}, headers);
    if (response.status !== 201)
      throw new Error(`registering slice-v${version}: ${JSON.stringify(response.body)}`);
  }
}

/** A v2 infer body for fixture row `row`, its slice in `parameters.country`. */
export function sliceBody(row: number): string {
  const fixture = sliceRows[row];
  if (fixture === undefined) throw new Error(`no fixture row ${row}`);
  return JSON.stringify({
    parameters: { country: fixture.slice },
    inputs: [{ name: 'x', shape: [1, 2], datatype: 'FP32', data: fixture.x }],
  });
}

/** The i-th request of a load cycling over `rows` (fixture row indexes). */
export function cyclingRequests(rows: readonly number[]): (i: number) => LoadRequest {
  const bodies = rows.map((row) => ({ row, body: sliceBody(row) }));
  return (i) => {
    const pick = bodies[i % bodies.length];
    if (pick === undefined) throw new Error('no rows to send');
    return { body: pick.body, tag: pick.row };
  };
}

/**
 * Checks a 200 answer for fixture row `answer.tag` against the reference of the version that
 * answered; returns the problem or null. Values compare as float32 (the model's type).
 */
export function checkSliceAnswer(answer: LoadAnswer): string | null {
  const version = answer.version === null ? undefined : sliceReference.versions[answer.version];
  if (version === undefined) return `version ${answer.version} is not a fixture version`;
  const want = version.y[answer.tag];
  if (want === undefined) return `no reference for row ${answer.tag}`;
  if (want === null) return `row ${answer.tag} should fail on version ${answer.version}`;
  const outputs = (answer.body as { outputs?: { name: string; shape: number[]; data: number[] }[] })
    .outputs;
  const y = outputs?.find((output) => output.name === 'y');
  if (y === undefined) return 'no output y';
  if (JSON.stringify(y.shape) !== '[1,1]') return `shape ${JSON.stringify(y.shape)}`;
  const got = y.data[0];
  return typeof got === 'number' && Math.fround(got) === Math.fround(want)
    ? null
    : `y ${String(got)}, reference ${want}`;
}

/** The expected failure of the slice fixtures: version 2 on a de row, a 5xx. */
export function isV2DeFailure(answer: LoadAnswer): boolean {
  return (
    answer.version === 2 &&
    answer.status >= 500 &&
    sliceReference.versions['2']?.fails[answer.tag] === true
  );
}

/**
 * A golden set (golden-set-input.ts) of every fixture row with the outputs of reference
 * version `outputsOf`: registered with a version that must reproduce them before a
 * blue-green switch gives it traffic.
 */
export function sliceGoldenSet(outputsOf: 1 | 3): unknown {
  const reference = sliceReference.versions[outputsOf];
  if (reference === undefined) throw new Error(`no reference for v${outputsOf}`);
  return {
    tolerance: { absolute: 0, relative: 0 },
    cases: sliceRows.map((row, i) => ({
      request: { inputs: [{ name: 'x', shape: [1, 2], datatype: 'FP32', data: row.x }] },
      outputs: [{ name: 'y', data: [reference.y[i]] }],
    })),
  };
}
