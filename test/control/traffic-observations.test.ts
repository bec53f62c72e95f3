// Gateway traffic reports on their way to canary analysis: checked field by field, cut into
// per-(version, slice) deltas, merged exactly (merge of parts == counts of the whole), and
// read back per version with slices keyed by value.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  mergeObservationData,
  mergeShadowCounts,
  mergeWindowCounts,
} from '../../src/control/traffic/observation-merge.ts';
import {
  bucketStartOf,
  nextBucketStart,
  observationsFromRows,
} from '../../src/control/traffic/observation-reader.ts';
import {
  checkTrafficReport,
  reportDeltas,
} from '../../src/control/traffic/traffic-report-check.ts';
import {
  reportSketchAccuracy,
  type ShadowCounts,
  type TrafficReport,
  type WindowCounts,
} from '../../src/protocol/traffic/traffic-report.ts';
import type { ObservationRow } from '../../src/store/traffic-records.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import { RunningMoments } from '../../src/traffic/running-moments.ts';
import { createRandom } from '../../src/core/random.ts';

function sketchOf(values: readonly number[]): HistogramSketch {
  const sketch = new HistogramSketch(reportSketchAccuracy);
  for (const value of values) sketch.add(value);
  return sketch;
}

function windowOf(
  latencies: readonly number[],
  errors: number,
  outputs: readonly number[],
): WindowCounts {
  return {
    requests: latencies.length,
    errors,
    latencyMs: sketchOf(latencies).snapshot(),
    outputs: sketchOf(outputs).snapshot(),
  };
}

function shadowOf(diffs: readonly number[], latencies: readonly number[]): ShadowCounts {
  return {
    offered: diffs.length + 1,
    sent: diffs.length,
    dropped: 1,
    errors: 0,
    compared: diffs.length,
    agreed: diffs.filter((d) => d < 1e-6).length,
    absDiff: RunningMoments.of(diffs).snapshot(),
    latencyMs: sketchOf(latencies).snapshot(),
    primaryLatencyMs: sketchOf(latencies.map((l) => l / 2)).snapshot(),
  };
}

function report(endpoints: TrafficReport['endpoints']): TrafficReport {
  return {
    gateway: 'gw-1@host',
    windowStart: '2026-01-01T00:00:00.000Z',
    windowEnd: '2026-01-01T00:00:01.000Z',
    endpoints,
  };
}

test('window counts merge exactly: the merge of parts is the counts of the whole', () => {
  const random = createRandom(7);
  const values = Array.from({ length: 600 }, () => Math.exp(random.next() * 6) - 1);
  const outputs = Array.from({ length: 600 }, () => random.next() * 2 - 1);
  const whole = windowOf(values, 9, outputs);
  const parts = [0, 100, 350, 600];
  let merged: unknown = null;
  for (let i = 0; i + 1 < parts.length; i++) {
    const [from, to] = [parts[i] ?? 0, parts[i + 1] ?? 0];
    const part = windowOf(values.slice(from, to), i === 0 ? 9 : 0, outputs.slice(from, to));
    merged = mergeObservationData(merged, part);
  }
  assert.deepEqual(merged, whole);
  const empty = windowOf([], 0, []);
  assert.deepEqual(mergeWindowCounts(whole, empty), whole);
  assert.deepEqual(mergeWindowCounts(empty, whole), whole);
});

test('shadow counts merge: counts added, |diff| moments and latency sketches merged', () => {
  const a = shadowOf([0, 0.5, 2], [3, 4, 5]);
  const b = shadowOf([1, 0], [10, 20]);
  const merged = mergeObservationData(a, b) as ShadowCounts;
  assert.deepEqual(merged, mergeShadowCounts(a, b));
  assert.equal(merged.offered, 7);
  assert.equal(merged.sent, 5);
  assert.equal(merged.dropped, 2);
  assert.equal(merged.compared, 5);
  assert.equal(merged.agreed, 2);
  const whole = RunningMoments.of([0, 0.5, 2, 1, 0]).snapshot();
  assert.equal(merged.absDiff.count, whole.count);
  assert.ok(Math.abs(merged.absDiff.mean - whole.mean) < 1e-12);
  assert.ok(Math.abs(merged.absDiff.m2 - whole.m2) < 1e-12);
  assert.equal(merged.absDiff.max, 2);
  assert.deepEqual(merged.latencyMs, sketchOf([3, 4, 5, 10, 20]).snapshot());
});

test('a report becomes one delta per version and slice (overall as slice ""), empty ones left out', () => {
  const checked = checkTrafficReport(
    report([
      {
        endpoint: 'fraud',
        versions: [
          {
            model: 'fraud',
            version: 1,
            overall: windowOf([1, 2, 3], 1, [0.1, 0.2]),
            slices: { de: windowOf([1], 1, []), fr: windowOf([], 0, []) },
          },
          { model: 'fraud', version: 2, overall: windowOf([], 0, []), slices: {} },
        ],
        shadows: [{ model: 'fraud', version: 3, counts: shadowOf([0], [1]) }],
      },
    ]),
  );
  assert.ok(checked.ok);
  const deltas = reportDeltas(checked.report, '2026-01-01T00:00:00.000Z');
  assert.deepEqual(
    deltas.map(({ kind, model, version, slice }) => `${kind} ${model}:${version} '${slice}'`),
    ["primary fraud:1 ''", "primary fraud:1 'de'", "shadow fraud:3 ''"],
  );
  assert.ok(deltas.every((delta) => delta.bucketStart === '2026-01-01T00:00:00.000Z'));
});

test('a bad report is refused whole, every problem named by its field', () => {
  const good = windowOf([1, 2], 0, [1]);
  const checked = checkTrafficReport({
    gateway: 7,
    windowStart: 'yesterday',
    windowEnd: '2026-01-01T00:00:01Z',
    endpoints: [
      {
        endpoint: 'fraud',
        versions: [
          { model: 'fraud', version: 0, overall: good, slices: {} },
          { model: 'fraud', version: 2, overall: { ...good, errors: 3 }, slices: { '': good } },
          {
            model: 'fraud',
            version: 3,
            overall: { ...good, latencyMs: { ...good.latencyMs, relativeAccuracy: 0.02 } },
            slices: {
              de: {
                ...good,
                outputs: {
                  ...good.outputs,
                  positive: [
                    [2, 1],
                    [1, 1],
                  ],
                },
              },
            },
          },
        ],
        shadows: [
          {
            model: 'fraud',
            version: 4,
            counts: {
              ...shadowOf([0], [1]),
              agreed: 5,
              absDiff: { count: 1, mean: 0, m2: -1, min: 0, max: 0 },
            },
          },
        ],
      },
      { endpoint: 'fraud', versions: [], shadows: [] },
    ],
  });
  assert.equal(checked.ok, false);
  assert.ok(!checked.ok);
  const expected = [
    'gateway must be a string',
    'windowStart must be an ISO 8601 time',
    'endpoints[0].versions[0].version must be an integer >= 1',
    'endpoints[0].versions[1].overall.errors 3 exceeds requests 2',
    'endpoints[0].versions[1].slices has a slice value of length 0',
    'endpoints[0].versions[2].overall.latencyMs.relativeAccuracy must be 0.01',
    'endpoints[0].versions[2].slices["de"].outputs.positive[1] indexes must be strictly ascending',
    'endpoints[0].shadows[0].counts.agreed 5 exceeds compared 1',
    'endpoints[0].shadows[0].counts.absDiff.m2 must be finite and >= 0',
    'endpoints[1].endpoint fraud is listed more than once',
  ];
  for (const start of expected) {
    assert.ok(
      checked.problems.some((problem) => problem.startsWith(start)),
      `${start}\nin ${checked.problems.join('\n')}`,
    );
  }
  assert.equal(checked.problems.length, expected.length, checked.problems.join('\n'));
  for (const body of [null, [], 'report', { gateway: 'g' }]) {
    assert.equal(checkTrafficReport(body).ok, false, JSON.stringify(body));
  }
});

test('rows read back per version: overall and slices by value, shadows merged over buckets', () => {
  const row = (bucket: number, slice: string, data: unknown, version = 1): ObservationRow => ({
    endpoint: 'fraud',
    bucketStart: new Date(Date.parse('2026-01-01T00:00:00Z') + bucket * 10_000).toISOString(),
    kind: 'primary',
    model: 'fraud',
    version,
    slice,
    data,
  });
  const read = observationsFromRows([
    row(0, '', windowOf([10, 20], 0, [0.5])),
    row(1, '', windowOf([30], 1, [])),
    row(1, 'de', windowOf([30], 1, [])),
    row(0, 'fr', windowOf([10], 0, [0.5])),
    row(0, '', windowOf([5], 0, [0.9]), 2),
    { ...row(0, '', shadowOf([0, 1], [4, 6]), 3), kind: 'shadow' },
    { ...row(1, '', shadowOf([0], [5]), 3), kind: 'shadow' },
  ]);
  assert.deepEqual([...read.primary.keys()].sort(), ['fraud:1', 'fraud:2']);
  const v1 = read.primary.get('fraud:1');
  assert.ok(v1 !== undefined);
  assert.equal(v1.overall.requests, 3);
  assert.equal(v1.overall.errors, 1);
  assert.equal(v1.overall.latencyMs.count, 3);
  assert.equal(v1.overall.outputs.count, 1);
  assert.deepEqual(Object.keys(v1.slices ?? {}), ['de', 'fr']);
  assert.equal(v1.slices?.['de']?.errors, 1);
  assert.equal(v1.slices?.['fr']?.requests, 1);
  assert.equal(read.primary.get('fraud:2')?.overall.requests, 1);
  assert.deepEqual([...read.shadows.keys()], ['fraud:3']);
  assert.equal(read.shadows.get('fraud:3')?.sent, 3);
  assert.equal(read.shadows.get('fraud:3')?.offered, 5);
});

test('buckets are 10 s, aligned on the epoch', () => {
  const t = Date.parse('2026-01-01T00:00:07.500Z');
  assert.equal(new Date(bucketStartOf(t)).toISOString(), '2026-01-01T00:00:00.000Z');
  assert.equal(new Date(nextBucketStart(t)).toISOString(), '2026-01-01T00:00:10.000Z');
  assert.equal(nextBucketStart(bucketStartOf(t)), bucketStartOf(t));
});
