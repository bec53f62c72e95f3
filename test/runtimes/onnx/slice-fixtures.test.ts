// The traffic fixtures (fixtures/traffic/make_slice_models.py) under Kiln's ONNX runtime, no
// processes: each version reproduces its numpy reference exactly (float32) on every row, one
// row at a time and all rows in one batch, and v2 fails at run time (kind `failed`, which a
// worker answers 500) on exactly the de rows. The end-to-end traffic tests rely on both.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Tensor } from '../../../src/core/tensor.ts';
import { sliceFixtures, sliceReference, sliceRows } from '../../helpers/slice-models.ts';
import { loadOptions, mustLoad, mustSucceed } from './onnx-fixtures.ts';

const x = (rows: readonly (readonly number[])[]): Tensor => ({
  name: 'x',
  datatype: 'FP32',
  shape: [rows.length, 2],
  data: Float32Array.from(rows.flat()),
});

for (const version of ['1', '2', '3'] as const) {
  void test(`slice-v${version}.onnx reproduces its reference row by row and batched`, async () => {
    const reference = sliceReference.versions[version];
    assert.ok(reference !== undefined);
    const runtime = await mustLoad(loadOptions(sliceFixtures, [`slice-v${version}.onnx`]));
    try {
      for (const [i, row] of sliceRows.entries()) {
        const outcome = await runtime.infer({ inputs: [x([row.x])] });
        const want: number | null | undefined = reference.y[i];
        if (want === null || want === undefined) {
          assert.ok(!outcome.ok && outcome.kind === 'failed', `row ${i} should fail`);
          assert.match(outcome.ok ? '' : outcome.message, /GatherElements/);
          continue;
        }
        const [y] = mustSucceed(outcome);
        assert.deepEqual(y?.shape, [1, 1]);
        assert.equal(y?.data[0], Math.fround(want), `row ${i}`);
      }
      const passing = sliceRows.flatMap((row, i) => (reference.fails[i] === true ? [] : [i]));
      const [batched] = mustSucceed(
        await runtime.infer({ inputs: [x(passing.map((i) => sliceRows[i]?.x ?? [0, 0]))] }),
      );
      assert.deepEqual(
        [...((batched?.data ?? []) as Float32Array)],
        passing.map((i) => Math.fround(reference.y[i] ?? Number.NaN)),
      );
      assert.equal(reference.fails.filter(Boolean).length, version === '2' ? 20 : 0);
    } finally {
      await runtime.unload();
    }
  });
}
