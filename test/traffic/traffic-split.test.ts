// The traffic split: observed shares within binomial bounds (keyed and unkeyed, seeded:
// never flaky), stickiness across fresh instances (a gateway restart), monotone canary
// growth, shadow sampling apart from the primary, and every validation problem named.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRandom } from '../../src/core/random.ts';
import {
  compileTrafficSplit,
  type SplitVersion,
  type TrafficSplit,
  type TrafficSplitSpec,
} from '../../src/traffic/traffic-split.ts';

function compiled(spec: TrafficSplitSpec, seed = 1): TrafficSplit {
  const result = compileTrafficSplit(spec, createRandom(seed).next);
  if (!result.ok) assert.fail(JSON.stringify(result.problems));
  return result.split;
}

function canary(weight: number, salt = 'rollout-1'): TrafficSplitSpec {
  return {
    endpoint: 'fraud',
    salt,
    versions: [
      { model: 'fraud', version: 3, weight: 100 - weight },
      { model: 'fraud', version: 4, weight },
    ],
  };
}

/** |observed − expected| ≤ 4.5 σ of Binomial(n, p). */
function assertBinomial(observed: number, n: number, p: number, what: string): void {
  const sigma = Math.sqrt(n * p * (1 - p));
  const expected = n * p;
  assert.ok(
    Math.abs(observed - expected) <= 4.5 * sigma,
    `${what}: ${observed} of ${n}, expected ${expected.toFixed(0)} ± ${(4.5 * sigma).toFixed(0)}`,
  );
}

const threeWay: TrafficSplitSpec = {
  endpoint: 'fraud',
  salt: 'exp-7',
  versions: [
    { model: 'fraud', version: 1, weight: 70 },
    { model: 'fraud', version: 2, weight: 20 },
    { model: 'fraud-xl', version: 1, weight: 10 },
  ],
};

function shares(split: TrafficSplit, keys: readonly (string | null)[]): Map<SplitVersion, number> {
  const counts = new Map<SplitVersion, number>(split.versions.map((v) => [v, 0]));
  for (const key of keys) {
    const v = split.pick(key);
    counts.set(v, (counts.get(v) ?? 0) + 1);
  }
  return counts;
}

test('keyed requests: each version’s share is within 4.5 σ of its weight', () => {
  const n = 50_000;
  const split = compiled(threeWay);
  const keys = Array.from({ length: n }, (_, i) => `user-${i}`);
  for (const [v, count] of shares(split, keys)) {
    assertBinomial(count, n, v.weight / 100, `${v.model}:${v.version}`);
  }
});

test('unkeyed requests: random draws from the injected source, within 4.5 σ', () => {
  const n = 50_000;
  const split = compiled(threeWay, 12345);
  const keys = new Array<null>(n).fill(null);
  for (const [v, count] of shares(split, keys)) {
    assertBinomial(count, n, v.weight / 100, `${v.model}:${v.version}`);
  }
  // The same seed gives the same draws: the source is the only randomness.
  const again = compiled(threeWay, 12345);
  const other = compiled(threeWay, 12345);
  for (let i = 0; i < 1000; i++) assert.equal(again.pick(null), other.pick(null));
});

test('stickiness: the same key gets the same version from a fresh instance (a restart)', () => {
  const before = compiled(threeWay, 1);
  // A restarted gateway: a new instance, another random source, the spec rebuilt from JSON.
  const after = compiled(JSON.parse(JSON.stringify(threeWay)) as TrafficSplitSpec, 999);
  for (let i = 0; i < 20_000; i++) {
    const key = `user-${i}`;
    const a = before.pick(key);
    const b = after.pick(key);
    assert.deepEqual([b.model, b.version], [a.model, a.version], key);
    assert.equal(before.pick(key), a, `${key} twice on one instance`);
  }
});

test('a pinned assignment: known keys land on known buckets and versions (golden)', () => {
  const split = compiled(canary(25));
  // fraud + rollout-1 at 75/25: fraud:3 holds buckets [0, 7500), fraud:4 [7500, 10000).
  const golden: [string, number, number][] = [
    ['alice', 3079, 3],
    ['bob', 3148, 3],
    ['carol', 1544, 3],
    ['dave', 4059, 3],
    ['user-1', 3155, 3],
    ['user-2', 9082, 4],
  ];
  for (const [key, bucket, version] of golden) {
    assert.equal(split.bucketOf(key), bucket, key);
    assert.equal(split.pick(key).version, version, key);
  }
});

test('monotone growth 5 → 25 → 50 → 100: the canary keeps every user it had', () => {
  const keys = Array.from({ length: 20_000 }, (_, i) => `user-${i}`);
  for (const canaryFirst of [false, true]) {
    let previous = new Set<string>();
    let previousWeight = 0;
    for (const weight of [5, 25, 50, 100]) {
      const spec = canary(weight);
      const split = compiled(
        canaryFirst ? { ...spec, versions: [...spec.versions].reverse() } : spec,
      );
      const onCanary = new Set(keys.filter((k) => split.pick(k).version === 4));
      for (const k of previous) assert.ok(onCanary.has(k), `${k} left the canary at ${weight}%`);
      // Only users whose bucket crossed the moved boundary changed: ≈ the weight added.
      assertBinomial(
        onCanary.size - previous.size,
        keys.length,
        (weight - previousWeight) / 100,
        `moved at ${weight}%`,
      );
      previous = onCanary;
      previousWeight = weight;
    }
    assert.equal(previous.size, keys.length);
  }
});

test('a new salt reshuffles users; the same salt on another endpoint is independent too', () => {
  const keys = Array.from({ length: 20_000 }, (_, i) => `user-${i}`);
  const a = compiled(canary(50, 'exp-a'));
  const b = compiled(canary(50, 'exp-b'));
  const c = compiled({ ...canary(50, 'exp-a'), endpoint: 'fraud-eu' });
  for (const other of [b, c]) {
    const same = keys.filter((k) => a.pick(k).version === other.pick(k).version);
    // Independent halves agree half the time.
    assertBinomial(same.length, keys.length, 0.5, 'agreement');
  }
});

test('weight 0 versions are never picked, wherever they are listed', () => {
  const split = compiled({
    endpoint: 'fraud',
    salt: '',
    versions: [
      { model: 'fraud', version: 1, weight: 0 },
      { model: 'fraud', version: 2, weight: 100 },
      { model: 'fraud', version: 3, weight: 0 },
    ],
  });
  for (let b = 0; b < 10_000; b++) assert.equal(split.versionAt(b).version, 2);
  for (let i = 0; i < 1000; i++) assert.equal(split.pick(`u${i}`).version, 2);
});

test('shadow: sampled at its rate, apart from the primary’s bucket', () => {
  const split = compiled(
    {
      ...canary(5),
      shadows: [
        { model: 'fraud', version: 5, sampleRate: 0.1 },
        { model: 'fraud-xl', version: 1, sampleRate: 0 },
      ],
    },
    77,
  );
  const n = 50_000;
  let shadowed = 0;
  let canaryRequests = 0;
  let canaryShadowed = 0;
  for (let i = 0; i < n; i++) {
    const primary = split.pick(`user-${i}`);
    const shadows = split.pickShadows();
    assert.ok(
      shadows.every((s) => s.version === 5),
      'a rate-0 shadow is never chosen',
    );
    if (primary.version === 4) canaryRequests += 1;
    if (shadows.length > 0) {
      shadowed += 1;
      if (primary.version === 4) canaryShadowed += 1;
    }
  }
  assertBinomial(shadowed, n, 0.1, 'shadowed');
  // Had the shadow used the primary's bucket, the canary's requests would be all or none.
  assertBinomial(canaryShadowed, canaryRequests, 0.1, 'shadowed among canary requests');
  const always = compiled({
    ...canary(5),
    shadows: [{ model: 'fraud', version: 9, sampleRate: 1 }],
  });
  for (let i = 0; i < 100; i++) assert.equal(always.pickShadows().length, 1);
  assert.equal(compiled(canary(5)).pickShadows().length, 0);
});

test('validation: every problem is named, as a value', () => {
  const problems = (spec: unknown): string[] => {
    const result = compileTrafficSplit(spec as TrafficSplitSpec);
    assert.equal(result.ok, false);
    return result.ok ? [] : result.problems.map((p) => `${p.field}: ${p.message}`);
  };
  assert.deepEqual(problems({ endpoint: 'fraud', salt: '', versions: [] }), [
    'versions: must list at least one version',
  ]);
  assert.deepEqual(
    problems({ ...canary(5), versions: [{ model: 'fraud', version: 3, weight: 90 }] }),
    ['versions: weights must sum to 100, got 90'],
  );
  assert.deepEqual(
    problems({
      endpoint: '',
      salt: 1,
      versions: [
        { model: 'fraud', version: 3, weight: 50.5 },
        { model: 'fraud', version: 3, weight: -1 },
        { model: '', version: 0, weight: 50 },
      ],
      shadows: [
        { model: 'fraud', version: 3, sampleRate: 0.1 },
        { model: 'fraud', version: 8, sampleRate: 1.5 },
        { model: 'fraud', version: 8, sampleRate: Number.NaN },
      ],
    }),
    [
      'endpoint: must be a non-empty string',
      'salt: must be a string',
      'versions[0].weight: must be a whole percent >= 0, got 50.5',
      'versions[1]: fraud:3 is listed more than once',
      'versions[1].weight: must be a whole percent >= 0, got -1',
      'versions[2].model: must be a non-empty string',
      'versions[2].version: must be an integer >= 1, got 0',
      'shadows[0]: fraud:3 already serves primary traffic',
      'shadows[1].sampleRate: must be a number in [0, 1], got 1.5',
      'shadows[2]: fraud:8 is listed more than once',
      'shadows[2].sampleRate: must be a number in [0, 1], got NaN',
    ],
  );
  assert.deepEqual(
    problems({
      ...canary(5),
      versions: [
        { model: 'fraud', version: 3, weight: 101 },
        { model: 'fraud', version: 4, weight: -1 },
      ],
    }),
    ['versions[1].weight: must be a whole percent >= 0, got -1'],
  );
  // Straight from JSON: wrong types are named too.
  assert.deepEqual(
    problems({
      endpoint: 'fraud',
      salt: 's',
      versions: [null, { model: 'fraud', version: '2', weight: '100' }],
      shadows: {},
    }),
    [
      'versions[0]: must be an object {model, version, weight}',
      'versions[1].version: must be an integer >= 1, got "2"',
      'versions[1].weight: must be a whole percent >= 0, got "100"',
      'shadows: must be a list',
    ],
  );
  assert.equal(compileTrafficSplit(canary(0)).ok, true);
});
