// The sketch statistics on a real training sample (fixtures/profiles, the xgb-binary-logistic
// training set): a seeded bootstrap resample of it stays under PSI's "moderate" line and is
// not rejected by KS on any column; the same resample with f0 shifted by one standard
// deviation is flagged on f0 alone.

import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';

import { createRandom } from '../../../src/core/random.ts';
import { computeProfile } from '../../../src/observability/profile/compute-profile.ts';
import type { DataProfile } from '../../../src/observability/profile/data-profile.ts';
import {
  parseSampleFile,
  type SampleRow,
} from '../../../src/observability/profile/parse-sample-file.ts';
import { sketchKolmogorovSmirnov } from '../../../src/observability/profile/sketch-ks.ts';
import { sketchPsi } from '../../../src/observability/profile/sketch-psi.ts';

const sample = new URL('../../../fixtures/profiles/xgb-binary-logistic.train.csv', import.meta.url);

function profileOf(rows: readonly SampleRow[]): DataProfile {
  const profile = computeProfile(rows, { outputs: ['output'], createdAt: '2026-01-01T00:00:00Z' });
  assert.ok(profile.ok);
  return profile.value;
}

test('a bootstrap resample of the training sample is not flagged; f0 shifted by 1 sd is, alone', async () => {
  const rows = parseSampleFile(await readFile(sample, 'utf8'), 'csv');
  assert.ok(rows.ok);
  const reference = profileOf(rows.value);
  const random = createRandom(2026);
  const resample = Array.from({ length: 2000 }, () => rows.value[random.int(rows.value.length)]!);
  const shifted = resample.map((row) => {
    const f0 = row['f0'];
    return f0 === '' ? row : { ...row, f0: String(Number(f0) + 1) };
  });
  const fresh = profileOf(resample);
  const moved = profileOf(shifted);
  for (const name of ['f0', 'f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7']) {
    const base = reference.features[name]!;
    const psi = sketchPsi(base, fresh.features[name]!);
    const ks = sketchKolmogorovSmirnov(base, fresh.features[name]!);
    assert.ok(psi.ok && ks.ok);
    assert.ok(psi.psi < 0.1, `${name}: fresh PSI ${psi.psi}`);
    assert.ok(ks.pValue > 0.01, `${name}: fresh KS p ${ks.pValue}`);
    const shiftedPsi = sketchPsi(base, moved.features[name]!);
    const shiftedKs = sketchKolmogorovSmirnov(base, moved.features[name]!);
    assert.ok(shiftedPsi.ok && shiftedKs.ok);
    if (name === 'f0') {
      assert.ok(shiftedPsi.psi > 0.25, `f0 shifted: PSI ${shiftedPsi.psi}`);
      assert.ok(shiftedKs.pValue < 1e-6, `f0 shifted: KS p ${shiftedKs.pValue}`);
    } else {
      assert.equal(shiftedPsi.psi, psi.psi, `${name} did not move`);
    }
  }
  const output = sketchPsi(reference.outputs['output']!, fresh.outputs['output']!);
  assert.ok(output.ok && output.psi < 0.1, `output: fresh PSI ${output.ok ? output.psi : ''}`);
});
