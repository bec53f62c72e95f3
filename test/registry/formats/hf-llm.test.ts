import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ArtifactFile } from '../../../src/registry/formats/artifact-file.ts';
import { bufferArtifact } from '../../../src/registry/formats/buffer-artifact.ts';
import { validateHfLlm } from '../../../src/registry/formats/hf-llm.ts';
import { expected, fixture, fixtureFolder } from './fixtures.ts';

const want = expected['tiny-llm'];
const reasonOf = (result: Awaited<ReturnType<typeof validateHfLlm>>): string =>
  result.ok ? '' : result.reason;
const without = (files: ArtifactFile[], path: string) => files.filter((f) => f.path !== path);
const json = (path: string, value: unknown) =>
  bufferArtifact(path, Buffer.from(JSON.stringify(value)));
const replace = (files: ArtifactFile[], file: ArtifactFile) => [...without(files, file.path), file];

for (const [folder, shards] of [
  ['tiny-llm', 1],
  ['tiny-llm-sharded', 2],
] as const) {
  void test(`${folder} is accepted with its config and weight summary`, async () => {
    const result = await validateHfLlm(await fixtureFolder(folder));
    assert.ok(result.ok, reasonOf(result));
    assert.deepEqual(result.info, {
      architectures: want.architectures,
      modelType: want.modelType,
      numTensors: want.numTensors,
      numParameters: want.numParameters,
      dtypes: want.dtypes,
      shards,
    });
  });
}

void test('config.json and tokenizer.json are required and checked', async () => {
  const files = await fixtureFolder('tiny-llm');
  assert.match(
    reasonOf(await validateHfLlm(without(files, 'config.json'))),
    /needs config\.json at its root; none was found/,
  );
  assert.match(
    reasonOf(await validateHfLlm(without(files, 'tokenizer.json'))),
    /needs tokenizer\.json .* none was found/,
  );
  assert.match(
    reasonOf(await validateHfLlm(replace(files, json('config.json', { hidden_size: 16 })))),
    /config\.json: needs "architectures" .* or "model_type"/,
  );
  assert.ok((await validateHfLlm(replace(files, json('config.json', { model_type: 'llama' })))).ok);
  assert.match(
    reasonOf(await validateHfLlm(replace(files, json('config.json', [1])))),
    /config\.json: expected a JSON object, found an array/,
  );
  assert.match(
    reasonOf(
      await validateHfLlm(replace(files, bufferArtifact('config.json', Buffer.from('{oops')))),
    ),
    /config\.json: not valid JSON/,
  );
  assert.match(
    reasonOf(await validateHfLlm(replace(files, json('tokenizer.json', { vocab: {} })))),
    /tokenizer\.json: has no "model" object/,
  );
});

void test('weights must be safetensors; a pickled checkpoint gets a hint', async () => {
  const files = await fixtureFolder('tiny-llm');
  const pickled = [...without(files, 'model.safetensors'), await fixture('pytorch_model.bin')];
  assert.match(
    reasonOf(await validateHfLlm(pickled)),
    /needs \*\.safetensors weights; found none \(pytorch_model\.bin is a pickle-based checkpoint; convert it to safetensors\)/,
  );
  const broken = replace(files, bufferArtifact('model.safetensors', Buffer.alloc(4)));
  const result = await validateHfLlm(broken);
  assert.match(reasonOf(result), /model\.safetensors: 4 bytes is too short/);
  assert.equal(result.ok ? '' : result.path, 'model.safetensors');
});

void test('the shard index must point at present shards that hold each tensor', async () => {
  const files = await fixtureFolder('tiny-llm-sharded');
  const missingShard = without(files, 'model-00002-of-00002.safetensors');
  assert.match(
    reasonOf(await validateHfLlm(missingShard)),
    /model\.safetensors\.index\.json: tensor '.*' is mapped to model-00002-of-00002\.safetensors, which is not a \.safetensors file in the artifact/,
  );

  const index = {
    metadata: {},
    weight_map: { 'model.embed_tokens.weight': 'model-00002-of-00002.safetensors' },
  };
  const wrongShard = replace(files, json('model.safetensors.index.json', index));
  assert.match(
    reasonOf(await validateHfLlm(wrongShard)),
    /tensor 'model\.embed_tokens\.weight' is mapped to model-00002-of-00002\.safetensors, which does not contain it/,
  );

  const noMap = replace(files, json('model.safetensors.index.json', { metadata: {} }));
  assert.match(reasonOf(await validateHfLlm(noMap)), /has no "weight_map" object/);
});
