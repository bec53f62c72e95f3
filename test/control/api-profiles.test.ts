// Reference profiles over the API, against the real store: the training sample of the
// xgb-binary-logistic fixture profiled as `kiln models profile` does, checked against numpy's
// figures for it, stored with PUT and read back with GET; malformed profiles and names the
// version does not have are refused naming the problem; missing profiles and versions 404.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { call, errorCode, readArtifact, register, testPlatform } from '../helpers/platform.ts';
import { computeProfile } from '../../src/observability/profile/compute-profile.ts';
import type { DataProfile } from '../../src/observability/profile/data-profile.ts';
import { parseSampleFile } from '../../src/observability/profile/parse-sample-file.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import type { VersionProfile } from '../../src/store/profile-records.ts';

const profiles = new URL('../../fixtures/profiles/', import.meta.url).pathname;
const trees = new URL('../../fixtures/trees/', import.meta.url).pathname;

interface ColumnFigures {
  readonly count: number;
  readonly missing: number;
  readonly mean: number;
  readonly min: number;
  readonly max: number;
  readonly quantiles: readonly (readonly [number, number])[];
}

async function trainingProfile(): Promise<DataProfile> {
  const rows = parseSampleFile(
    await readFile(`${profiles}xgb-binary-logistic.train.csv`, 'utf8'),
    'csv',
  );
  assert.ok(rows.ok);
  const profile = computeProfile(rows.value, {
    outputs: ['output'],
    createdAt: '2026-01-01T00:00:00.000Z',
  });
  assert.ok(profile.ok, profile.ok ? '' : profile.reason);
  return profile.value;
}

test('the training sample profile matches numpy: counts, missing, mean, extremes, quantiles within 1%', async () => {
  const expected = JSON.parse(
    await readFile(`${profiles}xgb-binary-logistic.train.expected.json`, 'utf8'),
  ) as { rows: number; columns: Record<string, ColumnFigures> };
  const profile = await trainingProfile();
  assert.equal(profile.rows, expected.rows);
  assert.deepEqual(Object.keys(profile.features), ['f0', 'f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7']);
  assert.deepEqual(Object.keys(profile.outputs), ['output']);
  for (const [name, figures] of Object.entries(expected.columns)) {
    const sketch = name === 'output' ? profile.outputs[name] : profile.features[name];
    assert.ok(sketch?.kind === 'numeric', name);
    assert.equal(sketch.moments.count, figures.count, `${name} count`);
    assert.equal(sketch.missing, figures.missing, `${name} missing`);
    assert.equal(sketch.moments.min, figures.min, `${name} min`);
    assert.equal(sketch.moments.max, figures.max, `${name} max`);
    assert.ok(Math.abs(sketch.moments.mean - figures.mean) < 1e-12, `${name} mean`);
    const histogram = HistogramSketch.fromSnapshot(sketch.histogram);
    assert.ok(histogram.ok);
    for (const [q, value] of figures.quantiles) {
      const got = histogram.sketch.quantile(q) ?? Number.NaN;
      assert.ok(
        Math.abs(got - value) <= 0.01 * Math.abs(value),
        `${name} q${q}: sketch ${got}, numpy ${value}`,
      );
    }
  }
});

test('profile API: PUT checks and stores, GET reads back; bad profiles and names are 400, missing ones 404', async () => {
  const { url } = await testPlatform();
  const files = await readArtifact(`${trees}xgb-binary-logistic.json`);
  assert.equal((await register(url, 'fraud', 'xgboost', files)).status, 201);
  assert.equal((await register(url, 'fraud', 'xgboost', files)).status, 201);
  const profile = await trainingProfile();

  const none = await call(url, 'GET', '/api/v1/models/fraud/versions/1/profile');
  assert.equal(none.status, 404);
  assert.equal(errorCode(none), 'KILN_PROFILE_NOT_FOUND');

  const put = await call(url, 'PUT', '/api/v1/models/fraud/versions/1/profile', profile);
  assert.equal(put.status, 200, JSON.stringify(put.body));
  const stored = put.body as VersionProfile;
  assert.equal(stored.model, 'fraud');
  assert.equal(stored.version, 1);
  assert.deepEqual(stored.profile, profile);
  const got = await call(url, 'GET', '/api/v1/models/fraud/versions/1/profile');
  assert.equal(got.status, 200);
  assert.deepEqual(got.body, stored);
  assert.equal(
    (await call(url, 'GET', '/api/v1/models/fraud/versions/2/profile')).status,
    404,
    'version 2 has none of its own',
  );

  const message = (body: unknown): string => (body as { error: { message: string } }).error.message;
  // A feature the model does not have: its feature names are f0..f7.
  const renamed = {
    ...profile,
    features: { ...profile.features, amount: profile.features['f0'] },
  };
  const unknown = await call(url, 'PUT', '/api/v1/models/fraud/versions/2/profile', renamed);
  assert.equal(unknown.status, 400);
  assert.equal(errorCode(unknown), 'KILN_PROFILE_INVALID');
  assert.match(
    message(unknown.body),
    /for fraud:2: unknown feature amount \(the version has f0, f1/,
  );

  for (const [body, problem] of [
    [[1, 2], /profile: must be an object, got an array/],
    [{ ...profile, rows: -3 }, /rows: must be an integer >= 0, got -3/],
    [
      { ...profile, features: { f0: { ...profile.features['f0'], kind: 'tdigest' } } },
      /features\.f0\.kind: unknown sketch kind "tdigest"/,
    ],
  ] as const) {
    const bad = await call(url, 'PUT', '/api/v1/models/fraud/versions/2/profile', body);
    assert.equal(bad.status, 400, JSON.stringify(bad.body));
    assert.equal(errorCode(bad), 'KILN_PROFILE_INVALID');
    assert.match(message(bad.body), problem);
  }
  const missingVersion = await call(url, 'PUT', '/api/v1/models/fraud/versions/9/profile', profile);
  assert.equal(missingVersion.status, 404);
  assert.equal(errorCode(missingVersion), 'KILN_VERSION_NOT_FOUND');
  const missingModel = await call(url, 'GET', '/api/v1/models/nope/versions/1/profile');
  assert.equal(errorCode(missingModel), 'KILN_MODEL_NOT_FOUND');
});
