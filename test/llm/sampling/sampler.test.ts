import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRandom } from '../../../src/core/random.ts';
import {
  checkSamplingParams,
  logSoftmax,
  Sampler,
  type SamplingParams,
} from '../../../src/llm/sampling/sampler.ts';

const logitsOf = (probabilities: number[]): Float32Array =>
  Float32Array.from(probabilities, (p) => Math.log(p));

function draws(params: SamplingParams, logits: Float32Array, n: number): number[] {
  const sampler = new Sampler(params, []);
  return Array.from({ length: n }, () => sampler.sample(logits).token);
}

function histogram(tokens: number[], size: number): number[] {
  const counts = new Array<number>(size).fill(0);
  for (const t of tokens) counts[t]! += 1;
  return counts;
}

test('the seeded random source is reproducible and roughly uniform', () => {
  const a = createRandom(42);
  const b = createRandom(42);
  const xs = Array.from({ length: 1000 }, () => a.next());
  assert.deepEqual(
    xs,
    Array.from({ length: 1000 }, () => b.next()),
  );
  assert.notDeepEqual(
    xs.slice(0, 10),
    (() => {
      const c = createRandom(43);
      return Array.from({ length: 10 }, () => c.next());
    })(),
  );
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
  assert.ok(Math.abs(mean - 0.5) < 0.05, `mean ${mean}`);
});

test('greedy takes the argmax, ties to the lowest id', () => {
  const logits = Float32Array.from([0.1, 2, -1, 2, 0.5]);
  assert.deepEqual(draws({ temperature: 0 }, logits, 3), [1, 1, 1]);
  // top_k 1 with any temperature is greedy too
  assert.deepEqual(draws({ temperature: 1.5, topK: 1, seed: 3 }, logits, 3), [1, 1, 1]);
});

test('same seed, same tokens; the distribution follows the probabilities', () => {
  const logits = logitsOf([0.5, 0.3, 0.15, 0.05]);
  const first = draws({ seed: 7 }, logits, 4000);
  assert.deepEqual(draws({ seed: 7 }, logits, 4000), first);
  assert.notDeepEqual(draws({ seed: 8 }, logits, 50), first.slice(0, 50));
  const share = histogram(first, 4).map((c) => c / first.length);
  [0.5, 0.3, 0.15, 0.05].forEach((p, i) =>
    assert.ok(Math.abs(share[i]! - p) < 0.03, share.join(', ')),
  );
});

test('top-p keeps the smallest set reaching p; min-p drops tokens below minP × the top one', () => {
  const logits = logitsOf([0.5, 0.3, 0.15, 0.05]);
  const topP = histogram(draws({ seed: 1, topP: 0.75 }, logits, 3000), 4);
  assert.equal(topP[2], 0);
  assert.equal(topP[3], 0);
  assert.ok(Math.abs(topP[0]! / 3000 - 0.625) < 0.03, topP.join(', '));
  const topP2 = histogram(draws({ seed: 1, topP: 0.81 }, logits, 3000), 4);
  assert.ok(topP2[2]! > 0 && topP2[3] === 0, topP2.join(', '));
  const minP = histogram(draws({ seed: 2, minP: 0.5 }, logits, 3000), 4);
  assert.deepEqual([minP[2], minP[3]], [0, 0]);
  const topK = histogram(draws({ seed: 3, topK: 3 }, logits, 3000), 4);
  assert.equal(topK[3], 0);
  assert.ok(topK[2]! > 0);
});

test('temperature sharpens or flattens the distribution', () => {
  const logits = logitsOf([0.6, 0.4]);
  const cold = histogram(draws({ seed: 4, temperature: 0.25 }, logits, 4000), 2)[0]! / 4000;
  const hot = histogram(draws({ seed: 4, temperature: 4 }, logits, 4000), 2)[0]! / 4000;
  // p0 ∝ 0.6^(1/T): T = 0.25 → 0.835, T = 4 → 0.525
  assert.ok(Math.abs(cold - 0.835) < 0.03, `${cold}`);
  assert.ok(Math.abs(hot - 0.525) < 0.03, `${hot}`);
});

test('penalties: repetition (Hugging Face), presence and frequency (OpenAI)', () => {
  // Token 0 leads by 0.5; after it is generated, the penalties must hand the lead to 1.
  const logits = Float32Array.from([2.5, 2, -1]);
  const repeated = new Sampler({ temperature: 0, repetitionPenalty: 1.3 }, [2]);
  assert.equal(repeated.sample(logits).token, 0);
  assert.equal(repeated.sample(logits).token, 1); // 2.5 / 1.3 = 1.92 < 2
  const presence = new Sampler({ temperature: 0, presencePenalty: 0.6 }, []);
  assert.deepEqual([presence.sample(logits).token, presence.sample(logits).token], [0, 1]);
  const frequency = new Sampler({ temperature: 0, frequencyPenalty: 0.3 }, []);
  // 0: 2.5, then 2.2 (> 2), then 1.9 (< 2): 0, 0, 1
  assert.deepEqual(
    [
      frequency.sample(logits).token,
      frequency.sample(logits).token,
      frequency.sample(logits).token,
    ],
    [0, 0, 1],
  );
  // A negative logit is multiplied by the repetition penalty (pushed further down).
  const negative = new Sampler({ temperature: 0, repetitionPenalty: 2 }, [0]);
  assert.equal(negative.sample(Float32Array.from([-1, -1.5])).token, 1); // -2 < -1.5
});

test('log-probabilities are the raw model distribution, top-N most likely first', () => {
  const logits = Float32Array.from([1, 3, 2, 3]);
  const sampler = new Sampler({ temperature: 0, logprobs: 3, repetitionPenalty: 2 }, []);
  const result = sampler.sample(logits);
  const expected = logSoftmax(logits);
  assert.equal(result.token, 1);
  assert.equal(result.logprob, expected[1]);
  assert.deepEqual(
    result.topLogprobs.map((t) => t.token),
    [1, 3, 2],
  );
  assert.equal(result.topLogprobs[2]!.logprob, expected[2]);
  // Not asked for: none computed.
  const quiet = new Sampler({ temperature: 0 }, []).sample(logits);
  assert.deepEqual([quiet.logprob, quiet.topLogprobs], [null, []]);
  const sum = [...expected].reduce((s, l) => s + Math.exp(l), 0);
  assert.ok(Math.abs(sum - 1) < 1e-12);
});

test('bad parameters are refused with the field named', () => {
  const cases: [SamplingParams, RegExp][] = [
    [{ temperature: -1 }, /temperature/],
    [{ topK: 1.5 }, /top_k/],
    [{ topP: 0 }, /top_p/],
    [{ minP: 2 }, /min_p/],
    [{ repetitionPenalty: 0 }, /repetition_penalty/],
    [{ presencePenalty: 3 }, /presence_penalty/],
    [{ frequencyPenalty: -3 }, /frequency_penalty/],
    [{ seed: 1.5 }, /seed/],
    [{ logprobs: 21 }, /logprobs/],
  ];
  for (const [params, message] of cases) {
    assert.match(checkSamplingParams(params) ?? '', message);
    assert.throws(() => new Sampler(params, []), message);
  }
  assert.equal(checkSamplingParams({ temperature: 0.7, topP: 0.9, seed: 1, logprobs: 5 }), null);
});
