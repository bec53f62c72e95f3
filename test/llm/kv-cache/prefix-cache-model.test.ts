// Prefix caching under the real model (fixtures/llm/tiny-llama): a prompt that starts from
// another prompt's cached blocks and computes only its own suffix gives exactly the logits
// and greedy tokens it gives computed whole with no cache.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createModel } from '../../../src/llm/engine/create-model.ts';
import { loadLlamaFolder } from '../../../src/llm/loader/load-llama-folder.ts';
import type { LlamaModel } from '../../../src/llm/model/llama-model.ts';
import { PrefixCache } from '../../../src/llm/kv-cache/prefix-cache.ts';
import { SequenceKv } from '../../../src/llm/kv-cache/sequence-kv.ts';

const folder = new URL('../../../fixtures/llm/tiny-llama/', import.meta.url).pathname;

function argmax(logits: Float32Array): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
  return best;
}

/**
 * The prompt's last logits and `count` greedy tokens; with a cache, the prompt starts from
 * its cached prefix and every block that fills (prompt or generated) is registered.
 */
function greedy(
  model: LlamaModel,
  cache: PrefixCache | null,
  prompt: readonly number[],
  count: number,
): { logits: Float32Array[]; tokens: number[]; cachedTokens: number } {
  const pool = model.pool!;
  const hit = cache?.lookup(prompt) ?? { blocks: [], numTokens: 0 };
  const kv = SequenceKv.fromPrefix(pool, hit);
  const tokens = [...prompt];
  const hashes: string[] = [];
  const logits: Float32Array[] = [];
  let next = prompt.slice(hit.numTokens);
  for (let i = 0; i < count; i++) {
    assert.ok(kv.reserve(next.length));
    const [row] = model.forward([{ tokens: next, kv }]);
    cache?.register(kv.blocks, cache.extendHashes(hashes, tokens));
    logits.push(Float32Array.from(row!));
    const token = argmax(row!);
    tokens.push(token);
    next = [token];
  }
  kv.release();
  return { logits, tokens: tokens.slice(prompt.length), cachedTokens: hit.numTokens };
}

test('tiny-llama: a prompt from cached prefix blocks gives exactly the uncached logits and tokens', async () => {
  const loaded = await loadLlamaFolder(folder);
  if (!loaded.ok) assert.fail(loaded.message);
  const created = createModel(loaded.config, loaded.weights, { kvCacheBytes: 8 << 20 });
  if (!created.ok) assert.fail(created.message);
  const model = created.model;
  const pool = model.pool!;
  const reference = JSON.parse(await readFile(`${folder}reference.json`, 'utf8')) as {
    prompts: { ids: number[] }[];
  };
  const long = reference.prompts.map((p) => p.ids).sort((a, b) => b.length - a.length)[0]!;
  assert.ok(long.length > 200);
  // Two requests sharing a 100-token "system prompt", each with its own question.
  const shared = long.slice(0, 100);
  const first = [...shared, ...long.slice(150, 190)];
  const second = [...shared, ...long.slice(200, 230)];

  const uncached = greedy(model, null, second, 24);
  assert.equal(pool.freeBlocks, pool.numBlocks);

  const cache = new PrefixCache(pool);
  const warm = greedy(model, cache, first, 8);
  assert.equal(warm.cachedTokens, 0);
  const cached = greedy(model, cache, second, 24);
  assert.equal(cached.cachedTokens, 96); // six full blocks of 16 of the shared 100 tokens
  assert.deepEqual(cached.tokens, uncached.tokens);
  cached.logits.forEach((row, i) => assert.deepEqual(row, uncached.logits[i], `step ${i}`));
  // The same request again hits its own prompt and the blocks its generation filled.
  const again = greedy(model, cache, [...second, ...cached.tokens.slice(0, 20)], 4);
  assert.equal(again.cachedTokens, 16 * Math.floor((second.length + 19) / 16));
  assert.deepEqual(again.tokens, uncached.tokens.slice(20, 24));
  const stats = cache.stats();
  assert.equal(stats.queries, 3);
  assert.equal(stats.hitTokens, 96 + again.cachedTokens);
  assert.equal(pool.stats().usedBlocks, 0);
});
