import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadLlamaFolder } from '../../../src/llm/loader/load-llama-folder.ts';
import { f32Bytes, safetensorsBytes } from './safetensors-writer.ts';
import { shardName, tinyConfigJson, writeTinyLlama } from './tiny-llama.ts';

const registryFixtures = new URL('../../../fixtures/registry/', import.meta.url).pathname;

let root = '';
let folders = 0;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'kiln-llama-folder-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});

function nextDir(): string {
  folders += 1;
  return join(root, `model-${folders}`);
}

async function refused(dir: string): Promise<string> {
  const result = await loadLlamaFolder(dir);
  assert.equal(result.ok, false, 'expected a refusal');
  return result.ok ? '' : result.message;
}

async function editIndex(
  dir: string,
  edit: (index: { weight_map: Record<string, unknown> }) => void,
): Promise<void> {
  const path = join(dir, 'model.safetensors.index.json');
  const index = JSON.parse(await readFile(path, 'utf8')) as { weight_map: Record<string, unknown> };
  edit(index);
  await writeFile(path, JSON.stringify(index));
}

void test('config and weights load together', async () => {
  const dir = nextDir();
  await writeTinyLlama(dir, { shards: 2, dtype: 'F16' });
  const result = await loadLlamaFolder(dir);
  assert.ok(result.ok, result.ok ? '' : result.message);
  assert.equal(result.config.numKeyValueHeads, 1);
  assert.equal(result.weights.layers.length, 2);
  assert.equal(result.weights.embedTokens.length, 80);
});

void test('the registry fixtures load, one file and sharded, to the same weights as their bytes', async () => {
  const single = await loadLlamaFolder(join(registryFixtures, 'tiny-llm'));
  const sharded = await loadLlamaFolder(join(registryFixtures, 'tiny-llm-sharded'));
  assert.ok(single.ok, single.ok ? '' : single.message);
  assert.ok(sharded.ok, sharded.ok ? '' : sharded.message);
  assert.deepEqual(sharded.config, single.config);
  assert.deepEqual(sharded.weights, single.weights);
  const { config, weights } = single;
  assert.equal(config.headDim, 8);
  assert.equal(weights.embedTokens.length, 32 * 16);
  assert.equal(weights.layers[0]?.k.length, 8 * 16);
  // The script writes RMSNorm weights as ones and the embedding first in the file, as F32.
  assert.deepEqual(Array.from(weights.norm), new Array<number>(16).fill(1));
  const bytes = await readFile(join(registryFixtures, 'tiny-llm', 'model.safetensors'));
  const dataStart = 8 + Number(bytes.readBigUInt64LE(0));
  const embed = Array.from({ length: 32 * 16 }, (_, i) => bytes.readFloatLE(dataStart + 4 * i));
  assert.deepEqual(Array.from(weights.embedTokens), embed);
});

void test('a folder without config.json, or without weights, says which', async () => {
  const empty = nextDir();
  await mkdir(empty);
  assert.equal(
    await refused(empty),
    `${empty}: no config.json; is this a Hugging Face model folder?`,
  );
  await writeFile(join(empty, 'config.json'), JSON.stringify(tinyConfigJson));
  assert.equal(
    await refused(empty),
    `${empty}: no weights: needs model.safetensors or model.safetensors.index.json`,
  );
  await writeFile(join(empty, 'pytorch_model.bin'), 'not loaded');
  assert.equal(
    await refused(empty),
    `${empty}: no weights: needs model.safetensors or model.safetensors.index.json (pytorch_model.bin is a pickle checkpoint, which is not loaded; convert it to safetensors)`,
  );
  await writeFile(join(empty, 'weights.safetensors'), safetensorsBytes({}));
  assert.equal(
    await refused(empty),
    `${empty}: no weights: needs model.safetensors or model.safetensors.index.json (found weights.safetensors but no index naming them)`,
  );
  const nowhere = join(root, 'does-not-exist');
  assert.equal(
    await refused(nowhere),
    `${nowhere}: no config.json; is this a Hugging Face model folder?`,
  );
});

void test('a broken or unsupported config.json is refused before any weight is read', async () => {
  const dir = nextDir();
  await writeTinyLlama(dir);
  await writeFile(join(dir, 'config.json'), '{"vocab_size": 10,');
  assert.match(await refused(dir), /config\.json: not valid JSON \(/);
  await writeFile(
    join(dir, 'config.json'),
    JSON.stringify({ ...tinyConfigJson, architectures: ['GPT2LMHeadModel'] }),
  );
  assert.equal(
    await refused(dir),
    `${dir}: config.json: architecture "GPT2LMHeadModel" is not supported (supported: LlamaForCausalLM, MistralForCausalLM)`,
  );
});

void test('shard index problems are named', async () => {
  const index = (dir: string): string => join(dir, 'model.safetensors.index.json');
  const cases: [
    (index: { weight_map: Record<string, unknown> }) => void,
    (dir: string) => string,
  ][] = [
    [
      (i) => {
        i.weight_map['model.norm.weight'] = 'model-00009-of-00009.safetensors';
      },
      (dir) =>
        `${index(dir)}: shard model-00009-of-00009.safetensors (holding tensor 'model.norm.weight') is missing from the folder`,
    ],
    [
      (i) => {
        i.weight_map['model.norm.weight'] = shardName(0, 2);
      },
      (dir) =>
        `${index(dir)}: maps tensor 'model.norm.weight' to ${shardName(0, 2)}, which does not contain it`,
    ],
    [
      (i) => {
        delete i.weight_map['model.norm.weight'];
      },
      (dir) =>
        `${index(dir)}: does not map tensor 'model.norm.weight', which ${shardName(1, 2)} contains`,
    ],
    [
      (i) => {
        i.weight_map['model.norm.weight'] = '../elsewhere/model.safetensors';
      },
      (dir) =>
        `${index(dir)}: weight_map['model.norm.weight'] must be a *.safetensors file name in the same folder, got "../elsewhere/model.safetensors"`,
    ],
    [
      (i) => {
        i.weight_map['model.norm.weight'] = 3;
      },
      (dir) =>
        `${index(dir)}: weight_map['model.norm.weight'] must be a *.safetensors file name in the same folder, got 3`,
    ],
    [
      (i) => {
        (i as { weight_map?: unknown }).weight_map = undefined;
      },
      (dir) => `${index(dir)}: has no "weight_map" object`,
    ],
    [
      (i) => {
        i.weight_map = {};
      },
      (dir) => `${index(dir)}: "weight_map" lists no tensors`,
    ],
  ];
  for (const [edit, message] of cases) {
    const dir = nextDir();
    await writeTinyLlama(dir, { shards: 2 });
    await editIndex(dir, edit);
    assert.equal(await refused(dir), message(dir));
  }
  const dir = nextDir();
  await writeTinyLlama(dir, { shards: 2 });
  await writeFile(index(dir), '{"weight_map": {');
  assert.match(await refused(dir), /model\.safetensors\.index\.json: not valid JSON/);
});

void test('a lying shard header is named with its file', async () => {
  const dir = nextDir();
  await writeTinyLlama(dir, { shards: 2 });
  const path = join(dir, shardName(1, 2));
  const bytes = await readFile(path);
  await writeFile(path, Buffer.concat([bytes, f32Bytes([0])]));
  assert.match(
    await refused(dir),
    new RegExp(
      `^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: the header does not cover the data: 4 bytes after the last tensor '[^']+' belong to no tensor`,
    ),
  );
});
