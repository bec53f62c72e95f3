import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { ModelFormat } from '../../../src/registry/formats/artifact-file.ts';
import { modelFormats } from '../../../src/registry/formats/artifact-file.ts';
import { bufferArtifact } from '../../../src/registry/formats/buffer-artifact.ts';
import { fileArtifact } from '../../../src/registry/formats/file-artifact.ts';
import { validateFormat } from '../../../src/registry/formats/validate-format.ts';
import {
  fixture,
  fixtureFolder,
  lightgbmFixtures,
  lightgbmSkip,
  registryFixtures,
  seededBytes,
} from './fixtures.ts';

void test('each format dispatches to its validator', async () => {
  const onnx = await validateFormat('onnx', [await fixture('mlp.onnx')]);
  assert.ok(onnx.ok && onnx.info['producer'] === 'pytorch');
  const xgb = await validateFormat('xgboost', [await fixture('xgb-binary.ubj')]);
  assert.ok(xgb.ok && xgb.info['numTrees'] === 10);
  const llm = await validateFormat('hf-llm', await fixtureFolder('tiny-llm'));
  assert.ok(llm.ok && llm.info['modelType'] === 'llama');
  const external = await validateFormat('external', [], {
    external: { url: 'https://x.example', protocol: 'v2' },
  });
  assert.ok(external.ok);
});

void test('lightgbm dispatch', { skip: lightgbmSkip }, async () => {
  const result = await validateFormat('lightgbm', [
    await fileArtifact(join(lightgbmFixtures, 'model_simple.txt'), 'model.txt'),
  ]);
  assert.ok(result.ok && result.info['numTrees'] === 2);
});

void test('a model validated as the wrong format is refused, not thrown', async () => {
  const mlp = await fixture('mlp.onnx', 'model.json');
  for (const format of modelFormats) {
    const result = await validateFormat(format, [mlp]);
    assert.equal(result.ok, false, format);
    assert.ok(!result.ok && result.reason.length > 0);
  }
  const unknown = await validateFormat('pmml' as ModelFormat, []);
  assert.deepEqual(unknown, { ok: false, reason: 'unknown model format "pmml"' });
});

void test('no input makes any validator throw: empty, garbage, and mislabelled files', async () => {
  const inputs = [
    [],
    [bufferArtifact('model.onnx', Buffer.alloc(0))],
    [bufferArtifact('model.json', Buffer.alloc(0))],
    [bufferArtifact('config.json', Buffer.from('{}'))],
    ...Array.from({ length: 40 }, (_, seed) => [
      bufferArtifact('model.onnx', seededBytes(seed + 1, 200)),
      bufferArtifact('model.ubj', Buffer.concat([Buffer.from('{'), seededBytes(seed + 1000, 200)])),
      bufferArtifact('config.json', Buffer.from('{"model_type":"llama"}')),
      bufferArtifact('tokenizer.json', Buffer.from('{"model":{}}')),
      bufferArtifact('model.safetensors', seededBytes(seed + 2000, 300)),
    ]),
  ];
  for (const files of inputs) {
    for (const format of modelFormats) {
      const result = await validateFormat(format, files, { external: null });
      assert.equal(typeof result.ok, 'boolean');
    }
  }
});

void test('fileArtifact reads ranges and short reads only at the end', async () => {
  const file = await fileArtifact(join(registryFixtures, 'proto0.pkl'), 'proto0.pkl');
  assert.equal(file.path, 'proto0.pkl');
  assert.equal(file.size, 72);
  assert.equal((await file.read(0, 12)).toString('latin1'), 'ccollections');
  assert.equal((await file.read(70, 10)).toString('latin1'), 's.');
  assert.equal((await file.read(100, 10)).length, 0);
  await assert.rejects(file.read(-1, 2), RangeError);
  const memory = bufferArtifact('m', Buffer.from('abc'));
  assert.equal((await memory.read(1, 5)).toString(), 'bc');
});
