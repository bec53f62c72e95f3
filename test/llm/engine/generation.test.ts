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

test('a consumer that stops at any event leaves every KV block free', () => {
  const llama = model();
  const requests: GenerationRequest[] = [
    { promptTokens: [1, 2, 3, 4, 5], maxTokens: 4, sampling: { temperature: 0 } },
    { promptTokens: [6, 7, 8, 9, 10, 11], maxTokens: 4, sampling: { temperature: 0 } },
  ];
  const total = [...generate(llama, pool(), requests)].length;
  for (let stopAfter = 1; stopAfter <= total; stopAfter++) {
    const blocks = pool(16);
    let seen = 0;
    for (const event of generate(llama, blocks, requests)) {
      void event;
      if (++seen === stopAfter) break; // closes the generator there
    }
    assert.equal(blocks.freeBlocks, 16, `stopped after event ${stopAfter} of ${total}`);
  }
});

test('more live sequences than a forward call takes are decoded in several calls a step', () => {
  const llama = model(); // maxTokensPerStep 8
  const requests: GenerationRequest[] = Array.from({ length: 11 }, (_, i) => ({
    promptTokens: [i + 1, (i * 7) % 26],
    maxTokens: 5,
    sampling: { temperature: 0 },
  }));
  const together = collect(generate(llama, pool(), requests));
  for (const [i, request] of requests.entries()) {
    const alone = collect(generate(llama, pool(), [request])).get(0)!;
    assert.deepEqual(together.get(i)!.tokens, alone.tokens, `request ${i}`);
  }
});

/** A detokenizer that holds every token back until flushed (as byte-fallback tokens are). */
function holdingUntilFlush(): { push(t: number): string; flush(): string } {
  let held = '';
  return {
    push: (t) => {
      held += String.fromCharCode(97 + t);
      return '';
    },
    flush: () => {
      const out = held;
      held = '';
      return out;
    },
  };
}

test('text held back by the detokenizer or a partial stop string comes out however a request ends', () => {
  const llama = model();
  const plain = collect(
    generate(llama, pool(), [
      { promptTokens: [2, 4], maxTokens: 6, sampling: { temperature: 0 }, textStream: letters() },
    ]),
  ).get(0)!;
  const stopAt = plain.tokens[3]!;
  const index = plain.tokens.indexOf(stopAt);
  const before = plain.text.slice(0, index);
  // Ended by a stop token: the held characters are flushed into the done event.
  const byToken = collect(
    generate(llama, pool(), [
      {
        promptTokens: [2, 4],
        maxTokens: 6,
        sampling: { temperature: 0 },
        stopTokenIds: [stopAt],
        textStream: holdingUntilFlush(),
      },
    ]),
  ).get(0)!;
  assert.equal(byToken.done.kind === 'done' && byToken.done.reason, 'stop');
  assert.equal(byToken.text, before);
  // A stop string whose first character is the last text before the stop token: held back
  // as a possible start, then returned as plain text when the stop token ends the request.
  const partial = collect(
    generate(llama, pool(), [
      {
        promptTokens: [2, 4],
        maxTokens: 6,
        sampling: { temperature: 0 },
        stopTokenIds: [stopAt],
        stopStrings: [`${before.at(-1)}~`],
        textStream: letters(),
      },
    ]),
  ).get(0)!;
  assert.equal(partial.text, before);
  // Ended by a full KV cache: the same flush.
  const small = pool(1); // 4 positions: the 2-token prompt and two more
  const full = collect(
    generate(llama, small, [
      {
        promptTokens: [2, 4],
        maxTokens: 6,
        sampling: { temperature: 0 },
        textStream: holdingUntilFlush(),
      },
    ]),
  ).get(0)!;
  assert.equal(full.done.kind === 'done' && full.done.reason, 'kv_cache_full');
  assert.equal(full.text, plain.text.slice(0, full.tokens.length));
  assert.equal(small.freeBlocks, 1);
});

test('stop strings without a text stream are refused: they are matched on text', () => {
  assert.match(
    checkGenerationRequest({ promptTokens: [1], maxTokens: 2, stopStrings: ['x'] }, 8, 26) ?? '',
    /needs a text stream/,
  );
});
