// The forward pass over the paged KV cache against a plain contiguous implementation written
// here (whole sequence at once, no cache), on a small random Llama with GQA: prefill in one
// call, token by token, in mixed batches, with tiny blocks handed out in a scrambled order —
// all must give the same logits.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRandom } from '../../../src/core/random.ts';
import { BlockPool } from '../../../src/llm/kv-cache/block-pool.ts';
import { SequenceKv } from '../../../src/llm/kv-cache/sequence-kv.ts';
import {
  LlamaModel,
  type LlamaDims,
  type LlamaTensors,
} from '../../../src/llm/model/llama-model.ts';

const dims: LlamaDims = {
  vocabSize: 40,
  hiddenSize: 24,
  intermediateSize: 40,
  numLayers: 2,
  numHeads: 6,
  numKvHeads: 2,
  headDim: 4,
  rmsNormEps: 1e-5,
};

function randomModel(seed: number): { tensors: LlamaTensors; frequencies: Float64Array } {
  const random = createRandom(seed);
  const matrix = (rows: number, cols: number, scale = 0.3): Float32Array =>
    Float32Array.from({ length: rows * cols }, () => (random.next() * 2 - 1) * scale);
  const norm = (): Float32Array =>
    Float32Array.from({ length: dims.hiddenSize }, () => 0.8 + random.next() * 0.4);
  const q = dims.numHeads * dims.headDim;
  const kv = dims.numKvHeads * dims.headDim;
  const layers = Array.from({ length: dims.numLayers }, () => ({
    inputNorm: norm(),
    q: matrix(q, dims.hiddenSize),
    k: matrix(kv, dims.hiddenSize),
    v: matrix(kv, dims.hiddenSize),
    o: matrix(dims.hiddenSize, q),
    postAttentionNorm: norm(),
    gate: matrix(dims.intermediateSize, dims.hiddenSize),
    up: matrix(dims.intermediateSize, dims.hiddenSize),
    down: matrix(dims.hiddenSize, dims.intermediateSize),
  }));
  const embedTokens = matrix(dims.vocabSize, dims.hiddenSize, 1);
  const frequencies = Float64Array.from(
    { length: dims.headDim / 2 },
    (_, i) => 1 / 10000 ** ((2 * i) / dims.headDim),
  );
  return {
    tensors: { embedTokens, layers, norm: norm(), lmHead: matrix(dims.vocabSize, dims.hiddenSize) },
    frequencies,
  };
}

/** The textbook forward pass over the whole sequence: logits [T, vocab]. No cache, no pages. */
function reference(t: LlamaTensors, freq: Float64Array, tokens: number[]): number[][] {
  const { hiddenSize: H, headDim: D, numHeads, numKvHeads } = dims;
  const mul = (x: number[], w: Float32Array, out: number): number[] =>
    Array.from({ length: out }, (_, o) => x.reduce((s, xi, i) => s + xi * w[o * x.length + i]!, 0));
  const rms = (x: number[], w: Float32Array): number[] => {
    const inv = 1 / Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length + dims.rmsNormEps);
    return x.map((v, i) => v * inv * w[i]!);
  };
  const rope = (vec: number[], heads: number, pos: number): number[] => {
    const out = [...vec];
    for (let h = 0; h < heads; h++)
      for (let i = 0; i < D / 2; i++) {
        const a = vec[h * D + i]!;
        const b = vec[h * D + i + D / 2]!;
        const angle = pos * freq[i]!;
        out[h * D + i] = a * Math.cos(angle) - b * Math.sin(angle);
        out[h * D + i + D / 2] = b * Math.cos(angle) + a * Math.sin(angle);
      }
    return out;
  };
  let xs = tokens.map((id) => [...t.embedTokens.subarray(id * H, (id + 1) * H)]);
  for (const w of t.layers) {
    const hs = xs.map((x) => rms(x, w.inputNorm));
    const qs = hs.map((h, p) => rope(mul(h, w.q, numHeads * D), numHeads, p));
    const ks = hs.map((h, p) => rope(mul(h, w.k, numKvHeads * D), numKvHeads, p));
    const vs = hs.map((h) => mul(h, w.v, numKvHeads * D));
    xs = xs.map((x, p) => {
      const att: number[] = [];
      for (let h = 0; h < numHeads; h++) {
        const g = Math.floor(h / (numHeads / numKvHeads));
        const scores = ks
          .slice(0, p + 1)
          .map(
            (k) =>
              k.slice(g * D, g * D + D).reduce((s, kv, j) => s + kv * qs[p]![h * D + j]!, 0) /
              Math.sqrt(D),
          );
        const max = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - max));
        const sum = e.reduce((a, b) => a + b, 0);
        for (let j = 0; j < D; j++)
          att.push(e.reduce((s, ei, q) => s + (ei / sum) * vs[q]![g * D + j]!, 0));
      }
      const o = mul(att, w.o, H);
      const x1 = x.map((v, i) => v + o[i]!);
      const h2 = rms(x1, w.postAttentionNorm);
      const gate = mul(h2, w.gate, dims.intermediateSize);
      const up = mul(h2, w.up, dims.intermediateSize);
      const act = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]!);
      const down = mul(act, w.down, H);
      return x1.map((v, i) => v + down[i]!);
    });
  }
  return xs.map((x) => mul(rms(x, t.norm), t.lmHead, dims.vocabSize));
}

function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string): void {
  assert.equal(actual.length, expected.length, what);
  let worst = 0;
  for (let i = 0; i < actual.length; i++)
    worst = Math.max(worst, Math.abs(actual[i]! - expected[i]!));
  assert.ok(worst < 1e-4, `${what}: max |diff| ${worst}`);
}

/** A pool whose free blocks come out in a scrambled order (pages far from contiguous). */
function scrambledPool(seed: number, blocks: number, blockSize: number): BlockPool {
  const pool = new BlockPool(
    { numLayers: dims.numLayers, numKvHeads: dims.numKvHeads, headDim: dims.headDim, blockSize },
    blocks,
  );
  const random = createRandom(seed);
  const taken: number[] = [];
  for (let i = 0; i < blocks; i++) taken.push(pool.allocate()!);
  for (let i = taken.length - 1; i > 0; i--) {
    const j = random.int(i + 1);
    [taken[i], taken[j]] = [taken[j]!, taken[i]!];
  }
  for (const b of taken) pool.release(b);
  return pool;
}

test('prefill, then decode token by token, match the contiguous reference at every position', () => {
  const { tensors, frequencies } = randomModel(7);
  const model = new LlamaModel(dims, tensors, frequencies);
  const tokens = [3, 17, 17, 0, 39, 5, 22, 8, 11, 2, 30, 4];
  const expected = reference(tensors, frequencies, tokens);

  const pool = scrambledPool(1, 16, 2);
  const whole = new SequenceKv(pool);
  assert.ok(whole.reserve(tokens.length));
  const [all] = model.forward([{ tokens, kv: whole }], true);
  tokens.forEach((_, p) =>
    assertClose(
      all!.subarray(p * dims.vocabSize, (p + 1) * dims.vocabSize),
      expected[p]!,
      `prefill @${p}`,
    ),
  );

  const stepwise = new SequenceKv(pool);
  tokens.forEach((token, p) => {
    assert.ok(stepwise.reserve(1));
    const [last] = model.forward([{ tokens: [token], kv: stepwise }]);
    assertClose(last!, expected[p]!, `decode @${p}`);
  });
  assert.equal(stepwise.numTokens, tokens.length);
});

test('a batch mixing a prefill and decodes of different lengths equals each sequence alone', () => {
  const { tensors, frequencies } = randomModel(11);
  const model = new LlamaModel(dims, tensors, frequencies);
  const prompts = [[1, 2, 3, 4, 5, 6, 7], [9], [20, 21, 22, 23, 24]];
  const pool = scrambledPool(2, 40, 3);
  const kvs = prompts.map(() => new SequenceKv(pool));
  // Sequence 0 and 2 have a prompt in the cache already; sequence 1 arrives with its prompt.
  for (const i of [0, 2]) {
    kvs[i]!.reserve(prompts[i]!.length);
    model.forward([{ tokens: prompts[i]!, kv: kvs[i]! }]);
  }
  const steps = [
    { tokens: [8], kv: kvs[0]! },
    { tokens: prompts[1]!, kv: kvs[1]! },
    { tokens: [25, 26], kv: kvs[2]! },
  ];
  for (const step of steps) assert.ok(step.kv.reserve(step.tokens.length));
  const logits = model.forward(steps);
  const full = [[...prompts[0]!, 8], prompts[1]!, [...prompts[2]!, 25, 26]];
  full.forEach((tokens, i) => {
    const expected = reference(tensors, frequencies, tokens);
    assertClose(logits[i]!, expected.at(-1)!, `sequence ${i}`);
  });
});

test('a forked sequence continues on its own after copy-on-write, the parent is unchanged', () => {
  const { tensors, frequencies } = randomModel(5);
  const model = new LlamaModel(dims, tensors, frequencies);
  const pool = scrambledPool(3, 20, 4);
  const parent = new SequenceKv(pool);
  const prompt = [4, 8, 15, 16, 23, 42 % 40];
  parent.reserve(prompt.length);
  model.forward([{ tokens: prompt, kv: parent }]);
  const child = parent.fork();
  child.reserve(1);
  parent.reserve(1);
  const [a, b] = model.forward([
    { tokens: [7], kv: child },
    { tokens: [9], kv: parent },
  ]);
  assertClose(a!, reference(tensors, frequencies, [...prompt, 7]).at(-1)!, 'child');
  assertClose(b!, reference(tensors, frequencies, [...prompt, 9]).at(-1)!, 'parent');
  child.release();
  parent.release();
  assert.equal(pool.freeBlocks, pool.numBlocks);
});

test('a token outside the vocabulary is refused before anything is written', () => {
  const { tensors, frequencies } = randomModel(1);
  const model = new LlamaModel(dims, tensors, frequencies);
  const kv = new SequenceKv(scrambledPool(4, 4, 4));
  kv.reserve(2);
  assert.throws(() => model.forward([{ tokens: [1, 40], kv }]), /outside the vocabulary/);
  assert.equal(kv.numTokens, 0);
});

test("a sequence past the model's positions is refused before anything is written", () => {
  const { tensors, frequencies } = randomModel(2);
  const model = new LlamaModel(dims, tensors, frequencies, {
    kvCache: { numBlocks: 8, blockSize: 2 },
    maxPositions: 6,
  });
  const kv = new SequenceKv(model.pool!);
  assert.ok(kv.reserve(5));
  model.forward([{ tokens: [1, 2, 3, 4, 5], kv }]);
  assert.ok(kv.reserve(2));
  assert.throws(() => model.forward([{ tokens: [6, 7], kv }]), /reach 7 positions; .* at most 6/);
  assert.equal(kv.numTokens, 5);
  model.forward([{ tokens: [6], kv }]);
  assert.equal(kv.numTokens, 6);
});

test('with the cache in the kernel arena, SIMD attention matches the reference too', () => {
  const { tensors, frequencies } = randomModel(13);
  const model = new LlamaModel(dims, tensors, frequencies, {
    kvCache: { numBlocks: 12, blockSize: 2 },
    maxPositions: 64,
  });
  const pool = model.pool!;
  // Scramble the free list so pages are far from contiguous.
  const taken = Array.from({ length: 12 }, () => pool.allocate()!);
  for (const b of [7, 2, 11, 0, 5, 9, 1, 4, 10, 3, 8, 6]) pool.release(taken[b]!);
  const tokens = [6, 1, 33, 12, 12, 7, 25, 0, 19];
  const expected = reference(tensors, frequencies, tokens);
  const kv = new SequenceKv(pool);
  assert.ok(kv.reserve(5));
  const [prefill] = model.forward([{ tokens: tokens.slice(0, 5), kv }], true);
  for (let p = 0; p < 5; p++)
    assertClose(
      prefill!.subarray(p * dims.vocabSize, (p + 1) * dims.vocabSize),
      expected[p]!,
      `prefill @${p}`,
    );
  for (let p = 5; p < tokens.length; p++) {
    assert.ok(kv.reserve(1));
    const [logits] = model.forward([{ tokens: [tokens[p]!], kv }]);
    assertClose(logits!, expected[p]!, `decode @${p}`);
  }
  kv.release();
  assert.equal(pool.freeBlocks, 12);
});
