// Choosing the next token from a step's logits, per request. The order is vLLM's:
//
//   logits ─► penalties (repetition over prompt + output; presence and frequency over the
//             output) ─► temperature (0 = greedy: argmax, ties to the lowest id)
//          ─► top-k ─► top-p (smallest set reaching p) ─► min-p (≥ minP · the top probability)
//          ─► draw with the request's seeded random source
//
// Log-probabilities reported (chosen token, top-N) are those of the model's own distribution:
// log-softmax of the raw logits, before any of the above, as vLLM and OpenAI report them.

import { createRandom, type Random } from '../../core/random.ts';

export interface SamplingParams {
  /** 0 = greedy. Default 1. */
  readonly temperature?: number;
  /** Keep the k most likely tokens; 0 or absent = all. */
  readonly topK?: number;
  /** Keep the smallest set of tokens whose probabilities sum to ≥ topP; 1 = all. */
  readonly topP?: number;
  /** Drop tokens below minP × the most likely token's probability; 0 = none. */
  readonly minP?: number;
  /** Hugging Face's: seen logits > 0 divided by it, < 0 multiplied; 1 = off. */
  readonly repetitionPenalty?: number;
  /** OpenAI's: subtracted once from every token already generated; 0 = off. */
  readonly presencePenalty?: number;
  /** OpenAI's: subtracted per occurrence in the generated tokens; 0 = off. */
  readonly frequencyPenalty?: number;
  /** Same seed, same prompt, same parameters → the same tokens. Absent: a random seed. */
  readonly seed?: number;
  /**
   * Report log-probabilities: the chosen token's, and the top N (0–20) with each token.
   * Absent = none (and no log-softmax over the vocabulary is computed).
   */
  readonly logprobs?: number;
}

export interface SampledToken {
  readonly token: number;
  /** log P(token) under the model (raw logits); null unless `logprobs` was asked for. */
  readonly logprob: number | null;
  /** The N most likely tokens and their log-probabilities, most likely first. */
  readonly topLogprobs: readonly { readonly token: number; readonly logprob: number }[];
}

/** A problem with the parameters, as a sentence naming the field; null when they are fine. */
export function checkSamplingParams(params: SamplingParams): string | null {
  const { temperature = 1, topK = 0, topP = 1, minP = 0, repetitionPenalty = 1 } = params;
  const { presencePenalty = 0, frequencyPenalty = 0, seed, logprobs } = params;
  if (!(temperature >= 0 && temperature <= 100))
    return `temperature must be 0–100, not ${temperature}`;
  if (!Number.isInteger(topK) || topK < 0) return `top_k must be a whole number ≥ 0, not ${topK}`;
  if (!(topP > 0 && topP <= 1)) return `top_p must be in (0, 1], not ${topP}`;
  if (!(minP >= 0 && minP <= 1)) return `min_p must be in [0, 1], not ${minP}`;
  if (!(repetitionPenalty > 0 && repetitionPenalty <= 10))
    return `repetition_penalty must be in (0, 10], not ${repetitionPenalty}`;
  if (!(presencePenalty >= -2 && presencePenalty <= 2))
    return `presence_penalty must be in [-2, 2], not ${presencePenalty}`;
  if (!(frequencyPenalty >= -2 && frequencyPenalty <= 2))
    return `frequency_penalty must be in [-2, 2], not ${frequencyPenalty}`;
  if (seed !== undefined && !Number.isSafeInteger(seed))
    return `seed must be an integer, not ${seed}`;
  if (logprobs !== undefined && !(Number.isInteger(logprobs) && logprobs >= 0 && logprobs <= 20))
    return `logprobs must be a whole number 0–20, not ${logprobs}`;
  return null;
}

export class Sampler {
  private readonly random: Random;
  /** Occurrences of each token in the output so far (presence/frequency penalties). */
  private readonly outputCounts = new Map<number, number>();
  /** Tokens seen in the prompt or the output (repetition penalty). */
  private readonly seen = new Set<number>();

  constructor(
    private readonly params: SamplingParams,
    promptTokens: readonly number[],
  ) {
    const problem = checkSamplingParams(params);
    if (problem !== null) throw new RangeError(problem);
    this.random = createRandom(params.seed ?? Math.floor(Math.random() * 2 ** 32));
    for (const token of promptTokens) this.seen.add(token);
  }

  /** Picks the next token from `logits` [vocab] and records it as generated. */
  sample(logits: Float32Array): SampledToken {
    const p = this.params;
    const vocab = logits.length;
    const repetition = p.repetitionPenalty ?? 1;
    const presence = p.presencePenalty ?? 0;
    const frequency = p.frequencyPenalty ?? 0;
    const temperature = p.temperature ?? 1;
    const penalized = repetition !== 1 || presence !== 0 || frequency !== 0;
    let token: number;
    if (temperature === 0 && !penalized) {
      token = argmax(logits); // plain greedy: nothing to adjust, nothing to copy
    } else {
      const scores = Float64Array.from(logits);
      if (repetition !== 1) {
        for (const seen of this.seen) {
          const s = scores[seen]!;
          scores[seen] = s > 0 ? s / repetition : s * repetition;
        }
      }
      if (presence !== 0 || frequency !== 0) {
        for (const [seen, count] of this.outputCounts)
          scores[seen] = scores[seen]! - presence - frequency * count;
      }
      if (temperature === 0) {
        token = argmax(scores);
      } else {
        for (let i = 0; i < vocab; i++) scores[i] = scores[i]! / temperature;
        token = this.draw(scores);
      }
    }
    this.outputCounts.set(token, (this.outputCounts.get(token) ?? 0) + 1);
    this.seen.add(token);
    if (p.logprobs === undefined) return { token, logprob: null, topLogprobs: [] };
    const raw = logSoftmax(logits);
    return { token, logprob: raw[token]!, topLogprobs: topN(raw, p.logprobs) };
  }

  /** Top-k, top-p, min-p over softmax(scores), then one draw. */
  private draw(scores: Float64Array): number {
    const p = this.params;
    const probabilities = softmax(scores);
    // Candidates by probability, most likely first (ties: lower id first).
    let order = Array.from(probabilities.keys()).sort(
      (a, b) => probabilities[b]! - probabilities[a]! || a - b,
    );
    const topK = p.topK ?? 0;
    if (topK > 0 && topK < order.length) order = order.slice(0, topK);
    const topP = p.topP ?? 1;
    if (topP < 1) {
      let mass = 0;
      let keep = 0;
      let kept = 0;
      for (const index of order) kept += probabilities[index]!;
      for (const index of order) {
        mass += probabilities[index]! / kept;
        keep += 1;
        if (mass >= topP) break;
      }
      order = order.slice(0, keep);
    }
    const minP = p.minP ?? 0;
    if (minP > 0) {
      const floor = minP * probabilities[order[0]!]!;
      order = order.filter((index) => probabilities[index]! >= floor);
    }
    let total = 0;
    for (const index of order) total += probabilities[index]!;
    let target = this.random.next() * total;
    for (const index of order) {
      target -= probabilities[index]!;
      if (target < 0) return index;
    }
    return order[order.length - 1]!;
  }
}

function argmax(values: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

function softmax(scores: Float64Array): Float64Array {
  let max = Number.NEGATIVE_INFINITY;
  for (const s of scores) if (s > max) max = s;
  const out = new Float64Array(scores.length);
  let sum = 0;
  for (let i = 0; i < scores.length; i++) {
    const e = Math.exp(scores[i]! - max);
    out[i] = e;
    sum += e;
  }
  for (let i = 0; i < out.length; i++) out[i] = out[i]! / sum;
  return out;
}

/** log-softmax in float64. */
export function logSoftmax(logits: ArrayLike<number>): Float64Array {
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < logits.length; i++) if (logits[i]! > max) max = logits[i]!;
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i]! - max);
  const shift = max + Math.log(sum);
  const out = new Float64Array(logits.length);
  for (let i = 0; i < logits.length; i++) out[i] = logits[i]! - shift;
  return out;
}

function topN(logprobs: Float64Array, n: number): { token: number; logprob: number }[] {
  if (n === 0) return [];
  const best: { token: number; logprob: number }[] = [];
  for (let token = 0; token < logprobs.length; token++) {
    const logprob = logprobs[token]!;
    if (best.length === n && logprob <= best[n - 1]!.logprob) continue;
    let at = best.length;
    while (at > 0 && best[at - 1]!.logprob < logprob) at--;
    best.splice(at, 0, { token, logprob });
    if (best.length > n) best.pop();
  }
  return best;
}
