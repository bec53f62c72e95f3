import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createModel } from '../../../src/llm/engine/create-model.ts';
import { loadLlamaFolder } from '../../../src/llm/loader/load-llama-folder.ts';
import { SequenceKv } from '../../../src/llm/kv-cache/sequence-kv.ts';

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
  if (!huge.ok) assert.match(huge.message, /exceed the engine's 4\.00 GiB of WebAssembly memory/);
  // A step so large that its activations alone do not fit: counted before anything is made.
  const wide = createModel(config, weights, { maxTokensPerStep: 1 << 22 });
  assert.equal(wide.ok, false);
  if (!wide.ok) assert.match(wide.message, /working memory \([\d.]+ GiB\) exceed/);
});

test('a step with more sequences than one vocabulary product takes gets every row right', async () => {
  const loaded = await loadLlamaFolder(folder);
  if (!loaded.ok) assert.fail(loaded.message);
  const made = createModel(loaded.config, loaded.weights, { kvCacheBytes: 4 << 20 });
  if (!made.ok) assert.fail(made.message);
  const model = made.model;
  const pool = model.pool!;
  // 70 one-token sequences (past the 64 rows a vocabulary product makes), each against the
  // same sequence run alone.
  const tokens = Array.from({ length: 70 }, (_, i) => (i * 37) % loaded.config.vocabSize);
  const together = tokens.map((token) => {
    const kv = new SequenceKv(pool);
    assert.ok(kv.reserve(1));
    return { tokens: [token], kv };
  });
  const logits = model.forward(together);
  for (const [i, token] of tokens.entries()) {
    const kv = new SequenceKv(pool);
    assert.ok(kv.reserve(1));
    const [alone] = model.forward([{ tokens: [token], kv }]);
    kv.release();
    for (let j = 0; j < alone!.length; j++)
      assert.ok(Math.abs(logits[i]![j]! - alone![j]!) < 1e-5, `sequence ${i}, logit ${j}`);
  }
  for (const step of together) step.kv.release();
  assert.equal(pool.freeBlocks, pool.numBlocks);
});
