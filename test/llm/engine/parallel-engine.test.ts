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

test('stopping the iteration early cancels the thread’s work and frees its KV blocks', async () => {
  // One thread, 16 sequences of ~500 tokens: ~8,000 tokens of work, far more than the thread
  // can make before the cancel, sent as soon as the first events arrive, reaches it.
  const started = await ParallelEngine.start(folder, 1, { kvCacheBytes: 24 << 20 });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine;
  try {
    const requests = Array.from({ length: 16 }, (_, i) => ({
      promptTokens: [1, 2, 3 + i],
      maxTokens: 500,
      sampling: { temperature: 0 },
    }));
    let events = 0;
    for await (const event of engine.generate(requests)) {
      void event;
      if (++events === 20) break;
    }
    // Answered once the thread has finished what it had: the cancelled job ends at its next
    // step, with every block given back.
    const [after] = await engine.stats();
    assert.equal(after!.kv.usedBlocks, 0);
    assert.ok(
      after!.generatedTokens < (16 * 500) / 2,
      `${after!.generatedTokens} tokens made of the ${16 * 500} asked for`,
    );
    // The engine still serves afterwards.
    let done = 0;
    for await (const event of engine.generate(requests.map((r) => ({ ...r, maxTokens: 3 }))))
      if (event.kind === 'done') done += 1;
    assert.equal(done, 16);
  } finally {
    await engine.close();
  }
});

test('a thread that dies fails the call instead of leaving it waiting', async () => {
  const started = await ParallelEngine.start(folder, 2, { kvCacheBytes: 4 << 20 });
  if (!started.ok) assert.fail(started.message);
  const engine = started.engine;
  const requests = Array.from({ length: 2 }, () => ({
    promptTokens: [1, 2, 3],
    maxTokens: 400,
    sampling: { temperature: 0 },
  }));
  await assert.rejects(async () => {
    let first = true;
    for await (const event of engine.generate(requests)) {
      void event;
      if (first) void engine.close(); // both threads terminated mid-generation
      first = false;
    }
  }, /generation thread \d stopped/);
  await assert.rejects(async () => {
    for await (const event of engine.generate(requests)) void event;
  }, /generation thread \d stopped/);
  await assert.rejects(engine.stats(), /stopped/);
});
