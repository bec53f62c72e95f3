// The gateway's demand counter for the autoscaler (load-counter.ts), on an injected clock:
// exact arrivals, completions, time-averaged and peak concurrency, held requests and the
// latency of 200s per window; idle windows report nothing.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LoadCounter } from '../../src/gateway/load-counter.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';

function clock(startMs = 1_000_000): { now: () => number; set: (ms: number) => void } {
  let nowMs = startMs;
  return { now: () => nowMs, set: (ms) => (nowMs = ms) };
}

test('one window: arrivals, completions, time-averaged and peak concurrency, 200 latencies', () => {
  const time = clock(0);
  const held = new Map<string, number>();
  const counter = new LoadCounter((endpoint) => held.get(endpoint) ?? 0, time.now);
  const fraud = counter.endpoint('fraud');
  assert.equal(counter.endpoint('fraud'), fraud, 'one counter per endpoint, kept');
  // in flight: 0..100 ms: 1; 100..300: 2; 300..600: 3; 600..1000: 2 → area 100+400+900+800
  time.set(0);
  fraud.arrive();
  time.set(100);
  fraud.arrive();
  time.set(300);
  fraud.arrive();
  time.set(600);
  fraud.complete(200, 600);
  held.set('fraud', 2);
  time.set(1_000);
  const report = counter.take('gw-1');
  assert.ok(report !== null);
  assert.equal(report.gateway, 'gw-1');
  assert.equal(report.windowStart, new Date(0).toISOString());
  assert.equal(report.windowEnd, new Date(1_000).toISOString());
  assert.equal(report.endpoints.length, 1);
  const load = report.endpoints[0]!;
  assert.equal(load.endpoint, 'fraud');
  assert.equal(load.arrivals, 3);
  assert.equal(load.completed, 1);
  assert.equal(load.concurrencyMean, 2.2);
  assert.equal(load.concurrencyMax, 3);
  assert.equal(load.held, 2);
  const sketch = HistogramSketch.fromSnapshot(load.latencyMs);
  assert.ok(sketch.ok);
  assert.equal(sketch.sketch.count, 1);
});

test('the next window starts where the last ended: requests still in flight count from there', () => {
  const time = clock(0);
  const counter = new LoadCounter(() => 0, time.now);
  const fraud = counter.endpoint('fraud');
  fraud.arrive();
  fraud.arrive();
  time.set(500);
  assert.ok(counter.take('gw') !== null);
  // Two still in flight: 500..1000 at 2, then one answers (a 503: no latency), 1000..1500 at 1.
  time.set(1_000);
  fraud.complete(503, 1_000);
  time.set(1_500);
  const load = counter.take('gw')!.endpoints[0]!;
  assert.equal(load.arrivals, 0);
  assert.equal(load.completed, 1);
  assert.equal(load.concurrencyMean, 1.5);
  assert.equal(load.concurrencyMax, 2, 'the peak of the window includes what it began with');
  assert.equal(load.latencyMs.zeroCount + load.latencyMs.positive.length, 0, 'only 200s');
  // Still one in flight, nothing else: the endpoint is not idle.
  time.set(2_500);
  const busy = counter.take('gw')!.endpoints[0]!;
  assert.equal(busy.concurrencyMean, 1);
  assert.equal(busy.concurrencyMax, 1);
});

test('an idle gateway reports nothing; an endpoint with only held requests is reported', () => {
  const time = clock(0);
  const held = new Map<string, number>();
  const counter = new LoadCounter((endpoint) => held.get(endpoint) ?? 0, time.now);
  assert.equal(counter.take('gw'), null, 'no endpoint at all');
  const a = counter.endpoint('a');
  counter.endpoint('b');
  a.arrive();
  time.set(10);
  a.complete(200, 10);
  time.set(1_000);
  const first = counter.take('gw')!;
  assert.deepEqual(
    first.endpoints.map((e) => e.endpoint),
    ['a'],
    'b had nothing: not listed',
  );
  time.set(2_000);
  assert.equal(counter.take('gw'), null, 'every endpoint idle: no report');
  held.set('b', 1);
  time.set(3_000);
  const heldOnly = counter.take('gw')!;
  assert.deepEqual(
    heldOnly.endpoints.map((e) => [e.endpoint, e.held]),
    [['b', 1]],
  );
  assert.equal(heldOnly.windowStart, new Date(2_000).toISOString());
});

test('a clock that steps back adds no negative area', () => {
  const time = clock(1_000);
  const counter = new LoadCounter(() => 0, time.now);
  const fraud = counter.endpoint('fraud');
  fraud.arrive();
  time.set(900);
  fraud.complete(200, 1);
  time.set(2_000);
  const load = counter.take('gw')!.endpoints[0]!;
  assert.ok(load.concurrencyMean >= 0);
  assert.equal(load.concurrencyMax, 1);
});
