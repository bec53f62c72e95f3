// Seeded LLM serving workloads for bench/llm-serving.ts: requests with prompt and output
// lengths drawn from ranges, arriving as a Poisson process (exponential gaps), prompts cut from
// real text run through the model's own tokenizer (Debian's licence texts, what the tiny
// model was trained on). The same seed gives the same requests, token for token, on every
// machine and for every peer of a comparison.

import { readdirSync, readFileSync, lstatSync } from 'node:fs';
import { join } from 'node:path';

import { createRandom, type Random } from '../src/core/random.ts';
import type { Tokenizer } from '../src/llm/tokenizer/tokenizer.ts';

export interface WorkloadRequest {
  /** Index in arrival order. */
  readonly index: number;
  /** When it is sent, ms after the run starts. */
  readonly arrivalMs: number;
  readonly promptTokens: readonly number[];
  /** Output tokens it asks for, and gets: stop tokens are ignored (as vLLM's benchmarks do). */
  readonly maxTokens: number;
  /** A label for tables ('long', 'short', …). */
  readonly kind: string;
}

export interface LengthRange {
  readonly min: number;
  readonly max: number;
}

/** Token ids of a text corpus, and the model's BOS id to start prompts with. */
export interface Corpus {
  readonly tokens: readonly number[];
  readonly bosTokenId: number | null;
}

const licenses = '/usr/share/common-licenses';

/**
 * The corpus: every regular file of Debian's licence texts, tokenized; where that folder is
 * missing, the fixture's reference prompts (short, so prompts overlap more).
 */
export function loadCorpus(
  tokenizer: Tokenizer,
  fallbackIds: readonly number[],
  bosTokenId: number | null,
): Corpus {
  let files: string[] = [];
  try {
    files = readdirSync(licenses)
      .sort()
      .map((name) => join(licenses, name))
      .filter((path) => lstatSync(path).isFile());
  } catch {
    files = [];
  }
  const tokens: number[] = [];
  for (const path of files) {
    const ids = tokenizer.encode(readFileSync(path, 'utf8'), { addSpecialTokens: false });
    for (const id of ids) tokens.push(id);
  }
  if (tokens.length < 4096) {
    while (tokens.length < 4096) tokens.push(...fallbackIds);
  }
  return { tokens, bosTokenId };
}

function uniformInt(random: Random, range: LengthRange): number {
  return range.min + random.int(range.max - range.min + 1);
}

/** `count` tokens of the corpus from a random offset (BOS first when the model has one). */
export function corpusWindow(corpus: Corpus, random: Random, count: number): number[] {
  const bos = corpus.bosTokenId === null ? [] : [corpus.bosTokenId];
  const length = count - bos.length;
  const start = random.int(corpus.tokens.length - length);
  return [...bos, ...corpus.tokens.slice(start, start + length)];
}

/** Exponential gaps at `ratePerS` requests a second: the Poisson process's arrival times. */
function poissonArrivals(random: Random, count: number, ratePerS: number): number[] {
  const times: number[] = [];
  let t = 0;
  for (let i = 0; i < count; i++) {
    times.push(t);
    t += (-Math.log(1 - random.next()) / ratePerS) * 1000;
  }
  return times;
}

export interface MixedWorkloadOptions {
  readonly seed: number;
  readonly count: number;
  readonly ratePerS: number;
  readonly promptTokens: LengthRange;
  readonly outputTokens: LengthRange;
}

/** Independent prompts (random corpus windows), uniform prompt and output lengths. */
export function mixedWorkload(corpus: Corpus, options: MixedWorkloadOptions): WorkloadRequest[] {
  const random = createRandom(options.seed);
  const arrivals = poissonArrivals(random, options.count, options.ratePerS);
  return arrivals.map((arrivalMs, index) => ({
    index,
    arrivalMs,
    promptTokens: corpusWindow(corpus, random, uniformInt(random, options.promptTokens)),
    maxTokens: uniformInt(random, options.outputTokens),
    kind: 'mixed',
  }));
}

export interface SharedPrefixWorkloadOptions extends MixedWorkloadOptions {
  /** Tokens of the system prompt every request starts with. */
  readonly systemPromptTokens: number;
}

/**
 * Every prompt is one shared system prompt (`systemPromptTokens`, BOS included) followed by
 * its own user part (`promptTokens` long, from another random window).
 */
export function sharedPrefixWorkload(
  corpus: Corpus,
  options: SharedPrefixWorkloadOptions,
): WorkloadRequest[] {
  const random = createRandom(options.seed);
  const system = corpusWindow(corpus, random, options.systemPromptTokens);
  const noBos: Corpus = { tokens: corpus.tokens, bosTokenId: null };
  const arrivals = poissonArrivals(random, options.count, options.ratePerS);
  return arrivals.map((arrivalMs, index) => ({
    index,
    arrivalMs,
    promptTokens: [
      ...system,
      ...corpusWindow(noBos, random, uniformInt(random, options.promptTokens)),
    ],
    maxTokens: uniformInt(random, options.outputTokens),
    kind: 'shared-prefix',
  }));
}

export interface SkewedWorkloadOptions {
  readonly seed: number;
  readonly count: number;
  readonly ratePerS: number;
  /** Share of long requests (0–1), drawn independently for each request. */
  readonly longFraction: number;
  readonly longPromptTokens: LengthRange;
  readonly shortPromptTokens: LengthRange;
  readonly outputTokens: LengthRange;
  /** Distinct system prompts (each `systemPromptTokens`) the short requests start with. */
  readonly systemPrompts: number;
  readonly systemPromptTokens: number;
}

/**
 * A skewed mix: a few long prompts among many short ones. Short requests start with one of a
 * few system prompts (several applications behind one endpoint), so prefix affinity has
 * something to find; long ones are independent documents.
 */
export function skewedWorkload(corpus: Corpus, options: SkewedWorkloadOptions): WorkloadRequest[] {
  const random = createRandom(options.seed);
  const systems = Array.from({ length: options.systemPrompts }, () =>
    corpusWindow(corpus, random, options.systemPromptTokens),
  );
  const noBos: Corpus = { tokens: corpus.tokens, bosTokenId: null };
  const arrivals = poissonArrivals(random, options.count, options.ratePerS);
  return arrivals.map((arrivalMs, index) => {
    const long = random.next() < options.longFraction;
    const maxTokens = uniformInt(random, options.outputTokens);
    if (long)
      return {
        index,
        arrivalMs,
        promptTokens: corpusWindow(corpus, random, uniformInt(random, options.longPromptTokens)),
        maxTokens,
        kind: 'long',
      };
    const system = systems[random.int(systems.length)]!;
    const user = corpusWindow(
      noBos,
      random,
      Math.max(1, uniformInt(random, options.shortPromptTokens) - system.length),
    );
    return { index, arrivalMs, promptTokens: [...system, ...user], maxTokens, kind: 'short' };
  });
}

/** Mean of a numeric field over a workload (for the description lines). */
export function meanOf(requests: readonly WorkloadRequest[], f: (r: WorkloadRequest) => number) {
  return requests.reduce((sum, r) => sum + f(r), 0) / Math.max(1, requests.length);
}
