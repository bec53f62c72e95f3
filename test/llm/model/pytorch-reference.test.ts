// The engine against PyTorch on the committed tiny Llama fixtures (fixtures/llm, made by
// make_llm_fixtures.py): last-position logits within 1e-3 of PyTorch's on every reference
// prompt (one of 243 tokens), and the 32-token greedy continuation identical. Covers F32,
// BF16/F16 shards, tied embeddings (the draft model), linear and llama3 RoPE scaling.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createModel } from '../../../src/llm/engine/create-model.ts';
import { generate } from '../../../src/llm/engine/generation.ts';
import { loadLlamaFolder } from '../../../src/llm/loader/load-llama-folder.ts';
import { SequenceKv } from '../../../src/llm/kv-cache/sequence-kv.ts';

const fixtures = new URL('../../../fixtures/llm/', import.meta.url).pathname;
const tolerance = 1e-3;

interface Reference {
  readonly prompts: readonly {
    readonly name: string;
    readonly ids: readonly number[];
    readonly greedyIds: readonly number[];
    readonly lastLogits: readonly number[];
  }[];
}

for (const folder of [
  'tiny-llama',
  'tiny-llama-draft',
  'tiny-llama-sharded',
  'tiny-llama-rope-linear',
  'tiny-llama-rope-llama3',
]) {
  test(`${folder}: logits within ${tolerance} of PyTorch, greedy continuations identical`, async () => {
    const loaded = await loadLlamaFolder(fixtures + folder);
    if (!loaded.ok) assert.fail(loaded.message);
    const created = createModel(loaded.config, loaded.weights, { kvCacheBytes: 8 << 20 });
    if (!created.ok) assert.fail(created.message);
    const model = created.model;
    const pool = model.pool!;
    const reference = JSON.parse(
      await readFile(`${fixtures}${folder}/reference.json`, 'utf8'),
    ) as Reference;
    assert.ok(reference.prompts.some((p) => p.ids.length > 200));
    for (const prompt of reference.prompts) {
      const kv = new SequenceKv(pool);
      assert.ok(kv.reserve(prompt.ids.length));
      const [logits] = model.forward([{ tokens: prompt.ids, kv }]);
      kv.release();
      let worst = 0;
      for (let i = 0; i < prompt.lastLogits.length; i++)
        worst = Math.max(worst, Math.abs(logits![i]! - prompt.lastLogits[i]!));
      assert.ok(worst <= tolerance, `${prompt.name}: max |logit diff| ${worst}`);
    }
    // Greedy continuations, all prompts decoded together in one batch.
    const tokens = new Map<number, number[]>();
    for (const event of generate(
      model,
      pool,
      reference.prompts.map((p) => ({
        promptTokens: p.ids,
        maxTokens: p.greedyIds.length,
        sampling: { temperature: 0 },
      })),
    )) {
      if (event.kind === 'token')
        tokens.set(event.request, [...(tokens.get(event.request) ?? []), event.token]);
    }
    reference.prompts.forEach((prompt, i) =>
      assert.deepEqual(tokens.get(i), prompt.greedyIds, `${prompt.name}: greedy continuation`),
    );
    assert.equal(pool.freeBlocks, pool.numBlocks);
  });
}
