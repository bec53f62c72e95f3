// The arithmetic under bench/llm-serving.ts: seeded workloads (same seed, same requests;
// Poisson gaps at the asked rate; lengths in range; one shared system prompt), the KV waste
// meter on hand-computed cases, and the client-side summary (TTFT percentiles, throughput).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { mergeRuns, summarize, type RequestTiming } from '../../bench/_llm-drive.ts';
import { KvWasteMeter } from '../../bench/_llm-kv-waste.ts';
import {
  mixedWorkload,
  sharedPrefixWorkload,
  skewedWorkload,
  type Corpus,
  type WorkloadRequest,
} from '../../bench/_llm-workload.ts';

const corpus: Corpus = {
  tokens: Array.from({ length: 5000 }, (_, i) => (i * 7919) % 1000),
  bosTokenId: 1019,
};

void test('a mixed workload is the same for a seed, Poisson at the rate, lengths in range', () => {
  const options = {
    seed: 5,
    count: 4000,
    ratePerS: 50,
    promptTokens: { min: 16, max: 320 },
    outputTokens: { min: 16, max: 160 },
  };
  const a = mixedWorkload(corpus, options);
  assert.deepEqual(a, mixedWorkload(corpus, options));
  assert.notDeepEqual(a.slice(0, 5), mixedWorkload(corpus, { ...options, seed: 6 }).slice(0, 5));
  assert.equal(a[0]!.arrivalMs, 0);
  const gaps = a.slice(1).map((r, i) => r.arrivalMs - a[i]!.arrivalMs);
  const mean = gaps.reduce((s, g) => s + g, 0) / gaps.length;
  assert.ok(Math.abs(mean - 20) < 1, `mean gap ${mean} ms at 50 req/s`);
  // Exponential gaps: the standard deviation is the mean.
  const sd = Math.sqrt(gaps.reduce((s, g) => s + (g - mean) ** 2, 0) / gaps.length);
  assert.ok(Math.abs(sd / mean - 1) < 0.1, `sd/mean ${sd / mean}`);
  for (const r of a) {
    assert.ok(r.promptTokens.length >= 16 && r.promptTokens.length <= 320);
    assert.ok(r.maxTokens >= 16 && r.maxTokens <= 160);
    assert.equal(r.promptTokens[0], 1019);
  }
  const lengths = new Set(a.map((r) => r.promptTokens.length));
  assert.ok(lengths.has(16) && lengths.has(320), 'both ends of the range drawn');
});

void test('a shared-prefix workload starts every prompt with the same system prompt', () => {
  const w = sharedPrefixWorkload(corpus, {
    seed: 1,
    count: 50,
    ratePerS: 10,
    systemPromptTokens: 200,
    promptTokens: { min: 16, max: 64 },
    outputTokens: { min: 1, max: 2 },
  });
  const system = w[0]!.promptTokens.slice(0, 200);
  for (const r of w) {
    assert.deepEqual(r.promptTokens.slice(0, 200), system);
    assert.ok(r.promptTokens.length >= 216 && r.promptTokens.length <= 264);
    assert.ok(!r.promptTokens.slice(200).includes(1019), 'BOS only at the start');
  }
});

void test('a skewed workload has about the long share asked for, short ones on few prefixes', () => {
  const w = skewedWorkload(corpus, {
    seed: 3,
    count: 2000,
    ratePerS: 10,
    longFraction: 0.15,
    longPromptTokens: { min: 320, max: 440 },
    shortPromptTokens: { min: 40, max: 80 },
    outputTokens: { min: 16, max: 64 },
    systemPrompts: 4,
    systemPromptTokens: 32,
  });
  const long = w.filter((r) => r.kind === 'long');
  assert.ok(Math.abs(long.length / w.length - 0.15) < 0.03, `${long.length} long`);
  for (const r of long) assert.ok(r.promptTokens.length >= 320 && r.promptTokens.length <= 440);
  const short = w.filter((r) => r.kind === 'short');
  assert.equal(new Set(short.map((r) => r.promptTokens.slice(0, 32).join())).size, 4);
  for (const r of short) assert.ok(r.promptTokens.length >= 40 && r.promptTokens.length <= 80);
});

void test('the KV waste meter: unused over reserved, weighted by duration', () => {
  const meter = new KvWasteMeter(512);
  // 20 positions in 2 blocks of 16 (12 unused) and 32 in 2 (none): paged 12 / 64.
  // Contiguous prompt + max_tokens: 10 + 30 and 30 + 10 reserved → (80 − 52) / 80.
  const sequences = [
    { numTokens: 20, promptTokens: 10, maxTokens: 30 },
    { numTokens: 32, promptTokens: 30, maxTokens: 10 },
  ];
  meter.add({ pagedReservedSlots: 64, pagedFilledSlots: 52, sequences }, 1);
  meter.add({ pagedReservedSlots: 0, pagedFilledSlots: 0, sequences: [] }, 5); // not a sample
  let r = meter.result();
  assert.equal(r.samples, 1);
  assert.equal(r.pagedPct, (100 * 12) / 64);
  assert.equal(r.contiguousMaxTokensPct, (100 * 28) / 80);
  assert.equal(r.contiguousContextPct, (100 * (1024 - 52)) / 1024);
  assert.equal(r.meanSequences, 2);
  // Held three times as long: two sequences sharing one full prefix block (16 slots, all
  // filled) and each a block of its own with 4 positions: paged (16 + 32) slots, 24 unused.
  meter.add(
    {
      pagedReservedSlots: 48,
      pagedFilledSlots: 24,
      sequences: [
        { numTokens: 20, promptTokens: 20, maxTokens: 8 },
        { numTokens: 20, promptTokens: 20, maxTokens: 8 },
      ],
    },
    3,
  );
  r = meter.result();
  assert.equal(r.pagedPct, (100 * (12 + 3 * 24)) / (64 + 3 * 48));
  assert.equal(r.contiguousMaxTokensPct, (100 * (28 + 3 * 16)) / (80 + 3 * 56));
  assert.equal(r.meanSequences, 2);
  assert.equal(r.pagedWorstPct, 50);
});

void test('summaries: TTFT percentiles over answered requests, throughput over the run', () => {
  const request = (index: number): WorkloadRequest => ({
    index,
    arrivalMs: 0,
    promptTokens: [1],
    maxTokens: 4,
    kind: index % 2 === 0 ? 'long' : 'short',
  });
  const timing = (index: number, ttftMs: number, error: string | null): RequestTiming => ({
    request: request(index),
    sentMs: 0,
    ttftMs,
    doneMs: ttftMs + 30,
    outputTokens: error === null ? 4 : 0,
    error,
  });
  const timings = Array.from({ length: 100 }, (_, i) => timing(i, i + 1, null));
  timings.push(timing(100, Number.NaN, 'queue_full'));
  const run = { timings, durationMs: 2000, outputTokens: 400, failed: 1 };
  const s = summarize(run);
  assert.equal(s.requests, 101);
  assert.equal(s.failed, 1);
  assert.equal(s.ttftP50Ms, 50);
  assert.equal(s.ttftP99Ms, 99);
  assert.equal(s.outputTokensPerS, 200);
  assert.equal(s.itlP50Ms, 10);
  assert.equal(summarize(run, (t) => t.request.kind === 'long').requests, 51);
  const both = mergeRuns([run, run]);
  assert.equal(summarize(both).outputTokensPerS, 200);
  assert.equal(summarize(both).requests, 202);
});
