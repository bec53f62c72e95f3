// Every fixture row through onnxruntime-node against the training library's outputs (torch,
// scikit-learn), within `tolerance` (1e-4 absolute) for floats; labels and integers exactly.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  assertMatches,
  loadOptions,
  mustLoad,
  mustSucceed,
  onnxFixtures,
  readExpected,
  registryFixtures,
  tolerance,
  toTensor,
} from './onnx-fixtures.ts';

const models = ['mlp', 'cnn-digits', 'iris-forest', 'iris-logistic', 'all-types'] as const;

for (const name of models) {
  void test(`${name}.onnx matches ${name}.expected.json (abs error <= ${tolerance})`, async (t) => {
    const expected = readExpected(name);
    const runtime = await mustLoad(loadOptions(onnxFixtures, [expected.model]));
    t.after(() => runtime.unload());
    assert.deepEqual(
      { inputs: runtime.inputs, outputs: runtime.outputs },
      expected.signature,
      'signature read from the model',
    );
    const outputs = mustSucceed(await runtime.infer({ inputs: expected.inputs.map(toTensor) }));
    assert.deepEqual(
      outputs.map((o) => o.name),
      expected.outputs.map((o) => o.name),
    );
    expected.outputs.forEach((want, i) => {
      const got = outputs[i];
      assert.ok(got !== undefined);
      const error = assertMatches(got, want);
      t.diagnostic(
        `${want.name} ${want.datatype} [${want.shape.join(', ')}]: max abs error ${error}`,
      );
    });
  });
}

void test('cnn-digits: the demo classifier names the true digit for each image', async () => {
  const expected = readExpected('cnn-digits');
  const digits = /true digits are \[([\d, ]+)\]/.exec(expected.description)?.[1];
  assert.ok(digits !== undefined, 'the description lists the true digits');
  const runtime = await mustLoad(loadOptions(onnxFixtures, [expected.model]));
  const [probabilities] = mustSucceed(
    await runtime.infer({ inputs: expected.inputs.map(toTensor), outputs: ['probabilities'] }),
  );
  assert.ok(probabilities !== undefined);
  const predicted: number[] = [];
  for (let row = 0; row < 8; row += 1) {
    const scores = [...probabilities.data.slice(row * 10, row * 10 + 10)].map(Number);
    predicted.push(scores.indexOf(Math.max(...scores)));
  }
  assert.deepEqual(predicted, digits.split(',').map(Number));
  await runtime.unload();
});

void test('fixtures/registry/mlp.onnx matches the probe in fixtures/registry/expected.json', async (t) => {
  const registryExpected = JSON.parse(readFileSync(`${registryFixtures}expected.json`, 'utf8')) as {
    'mlp.onnx': { probe: { input: number[][]; logits: number[][] } };
  };
  const { input, logits } = registryExpected['mlp.onnx'].probe;
  const runtime = await mustLoad(loadOptions(registryFixtures, ['mlp.onnx']));
  const outputs = mustSucceed(
    await runtime.infer({
      inputs: [
        {
          name: 'input',
          datatype: 'FP32',
          shape: [input.length, 4],
          data: Float32Array.from(input.flat()),
        },
      ],
    }),
  );
  const [got] = outputs;
  assert.ok(got !== undefined);
  const error = assertMatches(got, {
    name: 'logits',
    datatype: 'FP32',
    shape: [logits.length, 3],
    data: logits.flat(),
  });
  t.diagnostic(`logits: max abs error ${error}`);
  await runtime.unload();
});

void test('an external-data model (fixtures/registry/onnx-external) loads by path and runs', async () => {
  const runtime = await mustLoad(
    loadOptions(`${registryFixtures}onnx-external`, ['model.onnx', 'weights.bin']),
  );
  // The graph adds the initializer bias [0.5, -1, 2], stored in weights.bin, to x.
  const outputs = mustSucceed(
    await runtime.infer({
      inputs: [
        { name: 'words', datatype: 'BYTES', shape: [2], data: ['a', 'bé'] },
        { name: 'x', datatype: 'FP32', shape: [2, 3], data: Float32Array.of(1, 2, 3, 0, 0, 0) },
      ],
    }),
  );
  const byName = new Map(outputs.map((o) => [o.name, o]));
  assert.deepEqual(byName.get('words_out')?.data, ['a', 'bé']);
  assert.deepEqual(byName.get('count')?.data, BigInt64Array.of(2n));
  assert.deepEqual(byName.get('y')?.data, Float32Array.of(1.5, 1, 5, 0.5, -1, 2));
  // memoryBytes counts the model file and its external data.
  assert.equal(runtime.memoryBytes(), 329 + 12);
  await runtime.unload();
});
