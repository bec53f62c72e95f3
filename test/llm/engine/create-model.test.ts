import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createModel } from '../../../src/llm/engine/create-model.ts';
import { loadLlamaFolder } from '../../../src/llm/loader/load-llama-folder.ts';

const folder = new URL('../../../fixtures/llm/tiny-llama-draft', import.meta.url).pathname;

test('the KV cache is sized from the budget; a budget or a model too big is a message', async () => {
  const loaded = await loadLlamaFolder(folder);
  if (!loaded.ok) assert.fail(loaded.message);
  const { config, weights } = loaded;
  // One block: 2 (k, v) × layers × 16 positions × kv heads × headDim × 4 bytes.
  const perBlock = 2 * config.numHiddenLayers * 16 * config.numKeyValueHeads * config.headDim * 4;
  const made = createModel(config, weights, { kvCacheBytes: 10 * perBlock + 5 });
  if (!made.ok) assert.fail(made.message);
  assert.equal(made.model.pool!.numBlocks, 10);
  const none = createModel(config, weights, { kvCacheBytes: perBlock - 1 });
  assert.equal(none.ok, false);
  if (!none.ok) assert.match(none.message, /holds no block/);
  const huge = createModel(config, weights, { kvCacheBytes: 5 * 2 ** 30 });
  assert.equal(huge.ok, false);
  if (!huge.ok) assert.match(huge.message, /exceed the engine's 3\.75 GiB of WebAssembly memory/);
});
