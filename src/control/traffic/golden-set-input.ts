// A golden set as users send it (`PUT /api/v1/models/{m}/versions/{v}/golden`, `kiln models
// register --golden FILE`): v2 infer requests with the outputs the version must reproduce,
// within a stated tolerance. Checked whole before it is stored; every bad field is named.
//
//   { "tolerance": { "absolute": 1e-6, "relative": 1e-4 },      (optional, these defaults)
//     "cases": [ { "request": { "inputs": [...] },
//                  "outputs": [ { "name": "y", "data": [0.5, 1.5] } ] }, ... ] }

import { kilnError } from '../../core/errors.ts';
import type { GoldenCase, GoldenSet, GoldenTolerance } from '../../store/traffic-records.ts';

/** The shadow comparison's agreement bound (traffic-report.ts): float32 noise passes. */
export const defaultGoldenTolerance: GoldenTolerance = { absolute: 1e-6, relative: 1e-4 };
export const maxGoldenCases = 1000;

/** The set to store, or KILN_GOLDEN_SET_INVALID (400) listing every problem. */
export function parseGoldenSet(
  model: string,
  version: number,
  body: unknown,
): Omit<GoldenSet, 'createdAt'> {
  const problems: string[] = [];
  const record = isObject(body) ? body : null;
  if (record === null) problems.push('the body must be an object with "cases"');
  const tolerance = parseTolerance(record?.tolerance, problems);
  const cases: GoldenCase[] = [];
  const given = record?.cases;
  if (record !== null && (!Array.isArray(given) || given.length === 0))
    problems.push('cases: give at least one case');
  else if (Array.isArray(given) && given.length > maxGoldenCases)
    problems.push(`cases: at most ${maxGoldenCases}, got ${given.length}`);
  else if (Array.isArray(given))
    given.forEach((entry: unknown, index) => {
      const parsed = parseCase(entry, `cases[${index}]`, problems);
      if (parsed !== null) cases.push(parsed);
    });
  if (problems.length > 0) {
    throw kilnError(
      'KILN_GOLDEN_SET_INVALID',
      { model, version, reason: problems.slice(0, 5).join('; ') },
      { problems },
    );
  }
  return { model, version, tolerance, cases };
}

function parseTolerance(value: unknown, problems: string[]): GoldenTolerance {
  if (value === undefined) return defaultGoldenTolerance;
  if (!isObject(value)) {
    problems.push('tolerance: must be an object {absolute, relative}');
    return defaultGoldenTolerance;
  }
  const pick = (field: 'absolute' | 'relative'): number => {
    const given = value[field];
    if (given === undefined) return defaultGoldenTolerance[field];
    if (typeof given !== 'number' || !Number.isFinite(given) || given < 0) {
      problems.push(`tolerance.${field}: must be a finite number >= 0`);
      return defaultGoldenTolerance[field];
    }
    return given;
  };
  const unknown = Object.keys(value).filter((key) => key !== 'absolute' && key !== 'relative');
  if (unknown.length > 0) problems.push(`tolerance: unknown fields ${unknown.join(', ')}`);
  return { absolute: pick('absolute'), relative: pick('relative') };
}

function parseCase(entry: unknown, at: string, problems: string[]): GoldenCase | null {
  if (!isObject(entry)) {
    problems.push(`${at}: must be an object {request, outputs}`);
    return null;
  }
  const request = entry.request;
  if (!isObject(request) || !Array.isArray(request.inputs) || request.inputs.length === 0)
    problems.push(`${at}.request: must be a v2 infer request with "inputs"`);
  const outputs = entry.outputs;
  if (!Array.isArray(outputs) || outputs.length === 0) {
    problems.push(`${at}.outputs: give at least one expected output`);
    return null;
  }
  const parsed: { name: string; data: unknown[] }[] = [];
  outputs.forEach((output: unknown, index) => {
    const where = `${at}.outputs[${index}]`;
    if (!isObject(output) || typeof output.name !== 'string' || output.name.length === 0) {
      problems.push(`${where}: must have a "name"`);
      return;
    }
    if (!Array.isArray(output.data) || output.data.length === 0) {
      problems.push(`${where}.data: must be a non-empty array`);
      return;
    }
    parsed.push({ name: output.name, data: output.data.flat(Infinity) as unknown[] });
  });
  return { request, outputs: parsed };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
