// Reading and checking profiles: a CSV/JSONL sample computed into a profile (kinds, missing
// values, outputs apart), the profile checker naming each problem by its path, and the
// feature/output names checked against a version's schema and feature names.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { computeProfile } from '../../../src/observability/profile/compute-profile.ts';
import type { DataProfile } from '../../../src/observability/profile/data-profile.ts';
import { parseDataProfile } from '../../../src/observability/profile/parse-data-profile.ts';
import {
  parseSampleFile,
  sampleFormatOf,
} from '../../../src/observability/profile/parse-sample-file.ts';
import { unknownProfileNames } from '../../../src/observability/profile/profile-names.ts';

const createdAt = '2026-01-02T03:04:05.000Z';

/** The object at `path` inside a parsed JSON document (for editing a copy in a test). */
function at(document: Record<string, unknown>, ...path: string[]): Record<string, unknown> {
  let node: unknown = document;
  for (const key of path) node = (node as Record<string, unknown>)[key];
  return node as Record<string, unknown>;
}

function profileOf(text: string, format: 'csv' | 'jsonl', outputs: string[] = []): DataProfile {
  const rows = parseSampleFile(text, format);
  assert.ok(rows.ok, rows.ok ? '' : rows.reason);
  const profile = computeProfile(rows.value, { createdAt, outputs });
  assert.ok(profile.ok, profile.ok ? '' : profile.reason);
  return profile.value;
}

test('CSV: numeric and categorical columns, quoted fields, missing cells, an output column', () => {
  const csv =
    'age,country,"note, quoted",score\r\n' +
    '31,fr,"a ""b""",0.25\r\n' +
    ',de,x,0.75\r\n' +
    '45,fr,,NaN\r\n' +
    '27,"",y,0.5\n';
  const profile = profileOf(csv, 'csv', ['score']);
  assert.equal(profile.rows, 4);
  assert.deepEqual(Object.keys(profile.features), ['age', 'country', 'note, quoted']);
  assert.deepEqual(Object.keys(profile.outputs), ['score']);
  const age = profile.features['age'];
  assert.ok(age?.kind === 'numeric');
  assert.equal(age.missing, 1);
  assert.equal(age.moments.count, 3);
  assert.equal(age.moments.min, 27);
  assert.equal(age.moments.max, 45);
  assert.ok(Math.abs(age.moments.mean - 103 / 3) < 1e-12);
  const country = profile.features['country'];
  assert.deepEqual(country, {
    kind: 'categorical',
    missing: 1,
    count: 3,
    maxCategories: 100,
    categories: { de: 1, fr: 2 },
    other: 0,
  });
  const note = profile.features['note, quoted'];
  assert.ok(note?.kind === 'categorical');
  assert.deepEqual(note.categories, { 'a "b"': 1, x: 1, y: 1 });
  const score = profile.outputs['score'];
  assert.ok(score?.kind === 'numeric');
  assert.equal(score.missing, 1); // NaN in a numeric column is missing, not a category
  assert.equal(score.moments.count, 3);
  // The computed profile passes the checker unchanged.
  const checked = parseDataProfile(JSON.parse(JSON.stringify(profile)));
  assert.ok(checked.ok, checked.ok ? '' : checked.reason);
  assert.deepEqual(checked.value, profile);
});

test('JSONL: numbers, strings and booleans; a ragged row set takes the union of columns', () => {
  const jsonl =
    '{"x": 1.5, "flag": true}\n\n{"x": -2, "city": "Lyon"}\n{"x": null, "flag": false}\n';
  const profile = profileOf(jsonl, 'jsonl');
  assert.deepEqual(Object.keys(profile.features), ['x', 'flag', 'city']);
  const x = profile.features['x'];
  assert.ok(x?.kind === 'numeric');
  assert.equal(x.missing, 1);
  const city = profile.features['city'];
  assert.ok(city?.kind === 'categorical');
  assert.equal(city.missing, 2); // absent from two rows
  assert.deepEqual(profile.features['flag'], {
    kind: 'categorical',
    missing: 1,
    count: 2,
    maxCategories: 100,
    categories: { false: 1, true: 1 },
    other: 0,
  });
});

test('a declared categorical column of numbers keeps the most frequent codes under the cap', () => {
  const rows = parseSampleFile('zip\n75001\n75002\n75002\n69001\n69001\n69001\n', 'csv');
  assert.ok(rows.ok);
  const profile = computeProfile(rows.value, { createdAt, categorical: ['zip'], maxCategories: 2 });
  assert.ok(profile.ok);
  assert.deepEqual(profile.value.features['zip'], {
    kind: 'categorical',
    missing: 0,
    count: 6,
    maxCategories: 2,
    categories: { '69001': 3, '75002': 2 },
    other: 1,
  });
});

test('bad samples are named: ragged CSV, open quote, duplicate header, non-object JSONL, unknown flags', () => {
  const problem = (text: string, format: 'csv' | 'jsonl'): string => {
    const rows = parseSampleFile(text, format);
    return rows.ok ? '' : rows.reason;
  };
  assert.match(problem('a,b\n1,2\n3\n', 'csv'), /line 3 has 1 fields; the header has 2/);
  assert.match(problem('a,b\n"1,2\n', 'csv'), /quoted field is not closed/);
  assert.match(problem('a,a\n1,2\n', 'csv'), /names column a twice/);
  assert.match(problem('a\n', 'csv'), /no rows/);
  assert.match(problem('{"a":1}\n[1]\n', 'jsonl'), /line 2 must be a JSON object/);
  assert.match(problem('{"a":1}\n{oops\n', 'jsonl'), /line 2 is not JSON/);
  const rows = parseSampleFile('a,b\n1,2\n', 'csv');
  assert.ok(rows.ok);
  const unknown = computeProfile(rows.value, { createdAt, outputs: ['prediction'] });
  assert.equal(unknown.ok, false);
  assert.match(unknown.ok ? '' : unknown.reason, /outputs names column prediction .*columns: a, b/);
  const nested = computeProfile([{ a: [1, 2] }], { createdAt });
  assert.match(nested.ok ? '' : nested.reason, /row 1 column a: nested values/);
  assert.equal(sampleFormatOf('x.CSV'), 'csv');
  assert.equal(sampleFormatOf('x.ndjson'), 'jsonl');
  assert.equal(sampleFormatOf('x.parquet'), null);
});

test('the profile checker names what is wrong by its path', () => {
  const good = profileOf('a,c\n1,x\n2,y\n', 'csv');
  const broken = (edit: (profile: Record<string, unknown>) => void): string => {
    const copy = JSON.parse(JSON.stringify(good)) as Record<string, unknown>;
    edit(copy);
    const result = parseDataProfile(copy);
    return result.ok ? 'accepted' : result.reason;
  };
  assert.match(
    parseDataProfile([1]).ok ? '' : (parseDataProfile([1]) as { reason: string }).reason,
    /profile: must be an object, got an array/,
  );
  assert.match(
    broken((p) => (at(p, 'features', 'a')['kind'] = 'tdigest')),
    /features\.a\.kind: unknown sketch kind "tdigest" \(known: numeric, categorical\)/,
  );
  assert.match(
    broken((p) => (at(p, 'features', 'a')['missing'] = -1)),
    /features\.a\.missing: must be an integer >= 0, got -1/,
  );
  assert.match(
    broken((p) => (at(p, 'features', 'a', 'moments')['mean'] = Number.NaN)),
    /features\.a\.moments\.mean: must be a finite number, got NaN/,
  );
  assert.match(
    broken((p) => (at(p, 'features', 'a', 'moments')['count'] = 3)),
    /features\.a\.histogram: holds 2 values but moments\.count is 3|counts 3 values but the profile has 2 rows/,
  );
  assert.match(
    broken(
      (p) =>
        (at(p, 'features', 'a', 'histogram')['positive'] = [
          [5, 1],
          [2, 1],
        ]),
    ),
    /positive\[1\]: bucket indexes must be strictly ascending/,
  );
  assert.match(
    broken((p) => (at(p, 'features', 'c', 'categories')['x'] = 5)),
    /features\.c: categories and other add up to 6 but count is 2/,
  );
  assert.match(
    broken((p) => (at(p, 'features', 'c')['categories'] = 'x')),
    /features\.c\.categories: must be an object, got "x"/,
  );
  assert.match(
    broken((p) => (p['formatVersion'] = 2)),
    /formatVersion: must be 1, got 2/,
  );
  assert.match(
    broken((p) => (p['createdAt'] = 'yesterday')),
    /createdAt: must be an ISO 8601 time/,
  );
  assert.match(
    broken((p) => (p['colour'] = 'blue')),
    /profile: unknown field colour/,
  );
  assert.match(
    broken((p) => (p['features'] = {})),
    /has no features and no outputs/,
  );
  assert.match(
    broken((p) => (p['rows'] = 1)),
    /features\.a: counts 2 values but the profile has 1 rows/,
  );
  assert.equal(
    broken(() => undefined),
    'accepted',
  );
});

test('profile names are checked against the schema inputs and outputs and the model feature names', () => {
  const profile = profileOf('age,income,prediction\n1,2,0.5\n', 'csv', ['prediction']);
  const schema = {
    inputs: [{ name: 'input', datatype: 'FP32' as const, shape: [-1, 2] }],
    outputs: [{ name: 'predict', datatype: 'FP32' as const, shape: [-1] }],
  };
  assert.equal(
    unknownProfileNames(profile, { schema, featureNames: null }),
    'unknown features age, income (the version has input[0..1]); ' +
      'unknown output prediction (the version has predict)',
  );
  assert.equal(
    unknownProfileNames(profile, {
      schema: { ...schema, outputs: [{ name: 'prediction', datatype: 'FP32', shape: [-1] }] },
      featureNames: ['age', 'income'],
    }),
    null,
  );
  const columns = profileOf('input[0],input[1],input[2]\n1,2,3\n', 'csv');
  assert.match(
    unknownProfileNames(columns, { schema, featureNames: null }) ?? '',
    /^unknown feature input\[2\] /,
  );
  assert.equal(unknownProfileNames(profile, { schema: null, featureNames: null }), null);
  // Named features replace INPUT[i] (the worker names the columns by them); a [-1, K] output
  // has one column per class.
  const classes = profileOf(
    'age,input[0],probabilities[2],probabilities[3]\n1,2,0.1,0.2\n',
    'csv',
    ['probabilities[2]', 'probabilities[3]'],
  );
  assert.equal(
    unknownProfileNames(classes, {
      schema: {
        inputs: [{ name: 'input', datatype: 'FP32', shape: [-1, 2] }],
        outputs: [{ name: 'probabilities', datatype: 'FP32', shape: [-1, 3] }],
      },
      featureNames: ['age', 'income'],
    }),
    'unknown feature input[0] (the version has age, income); ' +
      'unknown output probabilities[3] (the version has probabilities[0..2])',
  );
  assert.match(
    unknownProfileNames(profile, { schema: null, featureNames: ['age'] }) ?? '',
    /unknown features income, prediction|unknown feature income/,
  );
});
