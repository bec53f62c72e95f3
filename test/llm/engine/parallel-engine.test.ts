// Two threads, a model replica each: the requests split between them come back with their
// own indices and exactly PyTorch's greedy tokens; a folder that does not load is a message.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { ParallelEngine } from '../../../src/llm/engine/parallel-engine.ts';

const folder = new URL('../../../fixtures/llm/tiny-llama', import.meta.url).pathname;

test('requests split over two threads give the greedy tokens PyTorch gives', async () => {
  const reference = JSON.parse(await readFile(`${folder}/reference.json`, 'utf8')) as {
    prompts: { ids: number[]; greedyIds: number[] }[];
  };
  const started = await ParallelEngine.start(folder, 2, { kvCacheBytes: 4 << 20 });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine;
  try {
    const prompts = reference.prompts.slice(0, 5);
    const tokens = new Map<number, number[]>();
    const finished = new Set<number>();
    for await (const event of engine.generate(
      prompts.map((p) => ({ promptTokens: p.ids, maxTokens: 12, sampling: { temperature: 0 } })),
    )) {
      if (event.kind === 'token')
        tokens.set(event.request, [...(tokens.get(event.request) ?? []), event.token]);
      else finished.add(event.request);
    }
    assert.equal(finished.size, prompts.length);
    prompts.forEach((p, i) =>
      assert.deepEqual(tokens.get(i), p.greedyIds.slice(0, 12), `prompt ${i}`),
    );
  } finally {
    await engine.close();
  }
});

test('a folder that does not load stops the engine with the loader message', async () => {
  const started = await ParallelEngine.start(`${folder}-missing`, 2);
  assert.equal(started.ok, false);
  if (!started.ok) assert.match(started.message, /no config\.json/);
});
