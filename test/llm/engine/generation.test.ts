// Generation over a small random Llama: batched decoding gives each request the tokens it
// gets alone, seeds reproduce, every way to finish (stop token, stop string across tokens,
// max tokens, KV cache full) ends the request cleanly, and every KV block is free after.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRandom } from '../../../src/core/random.ts';
import {
  checkGenerationRequest,
  generate,
  type GenerationEvent,
  type GenerationRequest,
} from '../../../src/llm/engine/generation.ts';
import { BlockPool } from '../../../src/llm/kv-cache/block-pool.ts';
import { LlamaModel, type LlamaDims } from '../../../src/llm/model/llama-model.ts';

const dims: LlamaDims = {
  vocabSize: 26,
  hiddenSize: 16,
  intermediateSize: 32,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 4,
  rmsNormEps: 1e-5,
};

function model(): LlamaModel {
  const random = createRandom(3);
  const m = (n: number, scale = 0.5): Float32Array =>
    Float32Array.from({ length: n }, () => (random.next() * 2 - 1) * scale);
  const ones = (): Float32Array => new Float32Array(dims.hiddenSize).fill(1);
  const layers = Array.from({ length: dims.numLayers }, () => ({
    inputNorm: ones(),
    q: m(16 * 16),
    k: m(8 * 16),
    v: m(8 * 16),
    o: m(16 * 16),
    postAttentionNorm: ones(),
    gate: m(32 * 16),
    up: m(32 * 16),
    down: m(16 * 32),
  }));
  const embed = m(26 * 16, 1);
  return new LlamaModel(
    dims,
    { embedTokens: embed, layers, norm: ones(), lmHead: embed },
    Float64Array.from([1, 0.01]),
    { maxTokensPerStep: 8 },
  );
}

const pool = (blocks = 64): BlockPool =>
  new BlockPool({ numLayers: 2, numKvHeads: 2, headDim: 4, blockSize: 4 }, blocks);

/** Token t is the letter 'a' + t. */
function letters(): { push(t: number): string; flush(): string } {
  return { push: (t) => String.fromCharCode(97 + t), flush: () => '' };
}

function collect(
  events: Iterable<GenerationEvent>,
): Map<number, { tokens: number[]; text: string; done: GenerationEvent }> {
  const out = new Map<number, { tokens: number[]; text: string; done: GenerationEvent }>();
  for (const event of events) {
    const entry = out.get(event.request) ?? { tokens: [], text: '', done: event };
    if (event.kind === 'token') entry.tokens.push(event.token);
    entry.text += event.text;
    if (event.kind === 'done') entry.done = event;
    out.set(event.request, entry);
  }
  return out;
}

test('batched decoding gives every request the tokens it gets alone (greedy and seeded)', () => {
  const llama = model();
  const requests: GenerationRequest[] = [
    {
      promptTokens: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
      maxTokens: 12,
      sampling: { temperature: 0 },
    },
    { promptTokens: [5], maxTokens: 7, sampling: { temperature: 0.9, seed: 11 } },
    { promptTokens: [20, 3, 3], maxTokens: 10, sampling: { temperature: 1.2, topP: 0.8, seed: 4 } },
  ];
  const kv = pool();
  const together = collect(generate(llama, kv, requests));
  requests.forEach((request, i) => {
    const alone = collect(generate(llama, pool(), [request])).get(0)!;
    assert.deepEqual(together.get(i)!.tokens, alone.tokens, `request ${i}`);
    assert.equal(alone.tokens.length, request.maxTokens);
    assert.equal(alone.done.kind === 'done' && alone.done.reason, 'length');
  });
  assert.equal(kv.freeBlocks, kv.numBlocks);
});

test('a stop token ends the request and is not part of the text', () => {
  const llama = model();
  const first = collect(
    generate(llama, pool(), [{ promptTokens: [2, 4], maxTokens: 6, sampling: { temperature: 0 } }]),
  ).get(0)!;
  const stopAt = first.tokens[3]!;
  const index = first.tokens.indexOf(stopAt);
  const stopped = collect(
    generate(llama, pool(), [
      {
        promptTokens: [2, 4],
        maxTokens: 6,
        sampling: { temperature: 0 },
        stopTokenIds: [stopAt],
        textStream: letters(),
      },
    ]),
  ).get(0)!;
  assert.deepEqual(stopped.tokens, first.tokens.slice(0, index + 1));
  assert.equal(
    stopped.text,
    first.tokens
      .slice(0, index)
      .map((t) => String.fromCharCode(97 + t))
      .join(''),
  );
  assert.equal(stopped.done.kind === 'done' && stopped.done.reason, 'stop');
});

test('a stop string spanning two tokens ends the request; nothing of it is returned', () => {
  const llama = model();
  const plain = collect(
    generate(llama, pool(), [
      { promptTokens: [9], maxTokens: 8, sampling: { temperature: 0 }, textStream: letters() },
    ]),
  ).get(0)!;
  const stop = plain.text.slice(3, 5);
  const cut = plain.text.indexOf(stop);
  const stopped = collect(
    generate(llama, pool(), [
      {
        promptTokens: [9],
        maxTokens: 8,
        sampling: { temperature: 0 },
        textStream: letters(),
        stopStrings: [stop],
      },
    ]),
  ).get(0)!;
  assert.equal(stopped.text, plain.text.slice(0, cut));
  assert.equal(stopped.done.kind === 'done' && stopped.done.reason, 'stop');
});

test('a KV cache too small ends requests with kv_cache_full and frees every block', () => {
  const llama = model();
  const small = pool(3); // 12 positions
  const result = collect(
    generate(llama, small, [
      { promptTokens: [1, 2, 3, 4, 5, 6, 7, 8, 9], maxTokens: 10, sampling: { temperature: 0 } },
      { promptTokens: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], maxTokens: 2 },
    ]),
  );
  const a = result.get(0)!.done;
  const b = result.get(1)!.done;
  assert.equal(a.kind === 'done' && a.reason, 'kv_cache_full');
  assert.equal(a.kind === 'done' && a.completionTokens, 4); // 9 + 3 positions fit, one more sampled
  assert.equal(b.kind === 'done' && b.reason, 'kv_cache_full');
  assert.equal(small.freeBlocks, 3);
});

test('requests that cannot run are refused with the cause', () => {
  const base = { promptTokens: [1, 2], maxTokens: 4 };
  assert.equal(checkGenerationRequest(base, 8, 26), null);
  assert.match(checkGenerationRequest({ ...base, promptTokens: [] }, 8, 26) ?? '', /empty/);
  assert.match(
    checkGenerationRequest({ ...base, promptTokens: [26] }, 8, 26) ?? '',
    /outside the vocabulary/,
  );
  assert.match(
    checkGenerationRequest({ ...base, maxTokens: 7 }, 8, 26) ?? '',
    /exceed the model's context of 8/,
  );
  assert.match(checkGenerationRequest({ ...base, maxTokens: 0 }, 8, 26) ?? '', /max_tokens/);
  assert.match(checkGenerationRequest({ ...base, sampling: { topP: 2 } }, 8, 26) ?? '', /top_p/);
});
