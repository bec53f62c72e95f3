// The autoscaler on synthetic signal streams with an injected clock (one sample and one
// decision per second, replicas ready a few seconds after they are asked for): a ramp, a spike
// that panics, flapping load, rate limits, the scale-down delay, scale-to-zero and the wake,
// predictive, and signals the workers report (or do not). Counts and times are exact: each
// expected value is worked out in the comment above it from the windows' means.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  resolveAutoscalePolicy,
  type AutoscalePolicy,
} from '../../src/autoscale/autoscale-policy.ts';
import { Autoscaler } from '../../src/autoscale/autoscaler.ts';
import type { ScaleSample } from '../../src/autoscale/scale-signals.ts';
import { createRandom } from '../../src/core/random.ts';
import { erlangC } from '../../src/simulator/erlang-c.ts';
import { runStream } from './scale-stream.ts';

function policy(input: Record<string, unknown>): AutoscalePolicy {
  const check = resolveAutoscalePolicy(input);
  if (!check.ok) assert.fail(check.reason);
  return check.policy;
}

function sample(atMs: number, fields: Partial<ScaleSample> = {}): ScaleSample {
  return {
    atMs,
    readyReplicas: 1,
    startingReplicas: 0,
    concurrency: 0,
    qps: 0,
    completed: 0,
    held: 0,
    queueDepth: null,
    cpu: null,
    slotsPerReplica: null,
    accelerator: null,
    custom: {},
    ...fields,
  };
}

test('a ramp scales up step by step to demand / target and stays there', () => {
  // Concurrency rises 0.1 per second to 12 at t = 120 s, target 2 per replica, replicas ready
  // 5 s after they are asked for.
  const run = runStream(
    new Autoscaler(policy({ minReplicas: 1, maxReplicas: 20, target: 2 })),
    (t) => ({ concurrency: Math.min(t, 120) / 10 }),
    { seconds: 300, initialReplicas: 1, startupSeconds: 5 },
  );
  // t=41: stable mean of 0.1..4.1 = 2.1 → ceil(2.1 / 2) = 2.
  // t=43: the panic window's mean (3.8..4.3) is 4.05 ≥ 2 × the one ready replica's capacity 2
  //       → panic, ceil(4.05 / 2) = 3 (the replica asked at 41 is not ready until 46).
  // Panic (last over the threshold at 45, so until 105) then follows the panic window's mean:
  // t=63 mean 6.05 → 4, t=83 mean 8.05 → 5, t=103 mean 10.05 → 6 = 12 / 2, the plateau.
  assert.deepEqual(run.events, [
    { t: 41, from: 1, to: 2 },
    { t: 43, from: 2, to: 3 },
    { t: 63, from: 3, to: 4 },
    { t: 83, from: 4, to: 5 },
    { t: 103, from: 5, to: 6 },
  ]);
  assert.equal(run.steps.find((step) => step.t === 43)?.decision.mode, 'panic');
  assert.equal(run.steps.find((step) => step.t === 105)?.decision.mode, 'stable');
  assert.equal(run.at(299), 6);
});

test('a spike panics: capacity follows the 6 s window at once and never drops in panic', () => {
  // Steady 3.5 in flight on 4 replicas (target 1), then 40 from t = 100 to 160.
  const run = runStream(
    new Autoscaler(policy({ minReplicas: 1, maxReplicas: 100, target: 1 })),
    (t) => ({ concurrency: t >= 100 && t < 160 ? 40 : 3.5 }),
    { seconds: 400, initialReplicas: 4, startupSeconds: 5 },
  );
  // t=100: panic mean (3.5×5 + 40) / 6 = 9.58 ≥ 2 × 4 ready → 10; then about +6 a second
  // until the window is all 40 at t=105. The stable window alone would want only 8 then.
  assert.deepEqual(run.events.slice(0, 6), [
    { t: 100, from: 4, to: 10 },
    { t: 101, from: 10, to: 16 },
    { t: 102, from: 16, to: 22 },
    { t: 103, from: 22, to: 28 },
    { t: 104, from: 28, to: 34 },
    { t: 105, from: 34, to: 40 },
  ]);
  const panicSteps = run.steps.filter((step) => step.decision.mode === 'panic');
  // Over the threshold last at t=106 (40 ≥ 2 × 16 ready); panic holds a stable window after.
  assert.equal(panicSteps[0]?.t, 100);
  assert.equal(panicSteps.at(-1)?.t, 165);
  for (let i = 1; i < panicSteps.length; i++) {
    assert.ok(
      panicSteps[i]!.replicas >= panicSteps[i - 1]!.replicas,
      `down in panic at ${panicSteps[i]!.t}`,
    );
  }
  // Held through the spike, then down without ever going back up, to exactly 4 again (from 5,
  // 3.5 in flight fits 4 replicas with the half replica of hysteresis to spare).
  const downs = run.events.slice(6);
  assert.ok(downs.every((event) => event.to < event.from));
  assert.ok(downs[0]!.t >= 190, `first scale-down at ${downs[0]!.t}`);
  assert.equal(run.at(399), 4);
});

test('flapping load does not flap the replicas', () => {
  // 6 in flight for a minute, then a square wave between 2 and 10 (mean 6) with half periods
  // of 3, 7, 10 and 30 s. While the window is part steady, part wave, its mean goes above 6:
  // 7 at once. Then the mean wanders around 6: never above 7 × target, never down to 6.5 ×
  // target (the hysteresis), so 7 it stays; the 30 s wave's swings reach 8 once.
  for (const half of [3, 7, 10, 30]) {
    const run = runStream(
      new Autoscaler(policy({ minReplicas: 1, maxReplicas: 100, target: 1 })),
      (t) => ({ concurrency: t < 60 ? 6 : Math.floor(t / half) % 2 === 0 ? 10 : 2 }),
      { seconds: 900, initialReplicas: 6, startupSeconds: 5 },
    );
    const expected =
      half === 30
        ? [
            { t: 60, from: 6, to: 7 },
            { t: 75, from: 7, to: 8 },
            { t: 141, from: 8, to: 7 },
          ]
        : [{ t: 60, from: 6, to: 7 }];
    assert.deepEqual(run.events, expected, `half period ${half}`);
    assert.ok(run.steps.every((step) => step.decision.mode === 'stable'));
    assert.equal(run.at(899), 7);
  }
});

test('noisy load around a boundary: the hysteresis keeps the count still', () => {
  // Per-second concurrency uniform in [2.8, 6.8] (mean 4.8) for an hour; the 60 s mean
  // wanders around 5 ± 0.3, crossing the 5-replica boundary again and again.
  const run = (scaleDownHysteresis: number) => {
    const random = createRandom(7);
    return runStream(
      new Autoscaler(policy({ minReplicas: 1, maxReplicas: 20, target: 1, scaleDownHysteresis })),
      () => ({ concurrency: 4.8 + (random.next() - 0.5) * 4 }),
      { seconds: 3600, initialReplicas: 5, startupSeconds: 5 },
    );
  };
  const steady = run(0.5);
  assert.deepEqual(steady.events, [
    { t: 83, from: 5, to: 6 },
    { t: 1673, from: 6, to: 5 },
    { t: 1709, from: 5, to: 6 },
  ]);
  // Without it, the scale-down delay alone lets the count follow the noise.
  assert.equal(run(0).events.length, 28);
});

test('a new autoscaler does not scale down before one scale-down delay', () => {
  // A restarted controller: 8 replicas running, the first samples show little load.
  const scaler = new Autoscaler(policy({ minReplicas: 1, maxReplicas: 10, target: 1 }));
  let replicas = 8;
  const counts: number[] = [];
  for (let t = 0; t <= 60; t++) {
    scaler.observe(sample(t * 1000, { readyReplicas: replicas, concurrency: 1 }));
    replicas = scaler.decide(t * 1000, replicas).replicas;
    counts.push(replicas);
  }
  // Held at 8 for the 30 s delay, then down by at most half (maxScaleDownRate 2) per delay:
  // the 4 wanted from 8 stays in the delay window until t = 60.
  assert.deepEqual(counts.slice(28, 32), [8, 8, 4, 4]);
  assert.deepEqual(counts.slice(58), [4, 4, 2]);
});

test('rate limits: up by at most × maxScaleUpRate, down by at most ÷ maxScaleDownRate', () => {
  const scaler = new Autoscaler(
    policy({
      minReplicas: 1,
      maxReplicas: 100,
      target: 1,
      maxScaleUpRate: 2,
      maxScaleDownRate: 2,
      scaleDownDelayMs: 0,
      panicThreshold: 100,
    }),
  );
  let replicas = 1;
  const ups: number[] = [];
  for (let t = 0; t < 6; t++) {
    scaler.observe(sample(t * 1000, { readyReplicas: replicas, concurrency: 50 }));
    replicas = scaler.decide(t * 1000, replicas).replicas;
    ups.push(replicas);
  }
  assert.deepEqual(ups, [2, 4, 8, 16, 32, 50]);
  // Demand gone for a whole stable window: floor(n / 2) each time, down to minReplicas.
  const downs: number[] = [];
  for (let t = 100; t < 107; t++) {
    scaler.observe(sample(t * 1000, { readyReplicas: replicas, concurrency: 0 }));
    replicas = scaler.decide(t * 1000, replicas).replicas;
    downs.push(replicas);
  }
  assert.deepEqual(downs, [25, 12, 6, 3, 1, 1, 1]);
});

test('the scale-down delay keeps the highest count wanted over the delay', () => {
  const scaler = new Autoscaler(
    policy({
      minReplicas: 1,
      maxReplicas: 10,
      target: 1,
      stableWindowMs: 2000,
      panicWindowMs: 1000,
      scaleDownDelayMs: 10_000,
      maxScaleDownRate: 100,
    }),
  );
  let replicas = 5;
  const counts: number[] = [];
  for (let t = 0; t < 20; t++) {
    scaler.observe(sample(t * 1000, { readyReplicas: replicas, concurrency: t < 5 ? 5 : 1 }));
    replicas = scaler.decide(t * 1000, replicas).replicas;
    counts.push(replicas);
  }
  // Wanted 5 through t=4, 3 at t=5 (the 2 s window holds 5 and 1), 1 from t=6 (both far
  // enough below 5 to pass the hysteresis). The 10 s delay window keeps the 5 of t=4 through
  // t=13, the 3 of t=5 at t=14, then 1.
  assert.deepEqual(counts, [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 3, 1, 1, 1, 1, 1]);
});

test('scale to zero after the idle period, wake at once on a held request', () => {
  const run = runStream(
    new Autoscaler(
      policy({ minReplicas: 0, maxReplicas: 5, target: 1, scaleToZero: { idleMs: 10_000 } }),
    ),
    (t) => {
      if (t < 20) return { concurrency: 2, qps: 4 };
      if (t === 50) return { held: 2 };
      if (t > 50 && t < 55) return { concurrency: 2, qps: 2 };
      return {};
    },
    { seconds: 120, initialReplicas: 2, startupSeconds: 3 },
  );
  // Last demand at t=19 → zero at t=29 exactly (though the 60 s mean still remembers load);
  // the held request at t=50 wakes it to 1 in the same tick; last demand at 54 → zero at 64.
  assert.deepEqual(run.events, [
    { t: 29, from: 2, to: 0 },
    { t: 50, from: 0, to: 1 },
    { t: 64, from: 1, to: 0 },
  ]);
  assert.match(run.steps.find((step) => step.t === 29)!.decision.reason, /no requests for 10 s/);
});

test('a wake with nothing measured in the windows still asks for one replica', () => {
  const scaler = new Autoscaler(
    policy({ minReplicas: 0, maxReplicas: 5, signal: 'cpu', scaleToZero: { idleMs: 5000 } }),
  );
  for (let t = 0; t <= 5; t++) scaler.observe(sample(t * 1000, { readyReplicas: 0 }));
  assert.equal(scaler.decide(5000, 1).replicas, 0);
  scaler.observe(sample(6000, { readyReplicas: 0, held: 1, concurrency: 1, qps: 1 }));
  const wake = scaler.decide(6000, 0);
  assert.equal(wake.replicas, 1);
  assert.match(wake.reason, /wake to 1/);
});

test('a restarted controller carries the idle period on from the stored last demand', () => {
  const scaler = new Autoscaler(
    policy({ minReplicas: 0, maxReplicas: 5, scaleToZero: { idleMs: 60_000 } }),
    { lastDemandAtMs: 0 },
  );
  scaler.observe(sample(59_000));
  assert.equal(scaler.decide(59_000, 1).replicas, 1);
  scaler.observe(sample(60_000));
  assert.equal(scaler.decide(60_000, 1).replicas, 0);
  assert.equal(scaler.lastDemandMs, 0);
});

test('predictive: the larger of reactive and the forecast, within max', () => {
  const scaler = new Autoscaler(policy({ minReplicas: 1, maxReplicas: 8, target: 2 }));
  scaler.observe(sample(0, { concurrency: 3 }));
  const ahead = scaler.decide(0, 2, { signalAhead: 9 });
  assert.equal(ahead.replicas, 5);
  assert.equal(ahead.reactive, 2);
  assert.equal(ahead.predictive, 5);
  assert.match(ahead.reason, /predictive 5 \(forecast 9\)/);
  assert.equal(scaler.decide(0, 2, { signalAhead: 100 }).replicas, 8);
  const reactive = new Autoscaler(policy({ minReplicas: 1, maxReplicas: 8, target: 2 }));
  reactive.observe(sample(0, { concurrency: 11 }));
  assert.equal(reactive.decide(0, 6, { signalAhead: 1 }).replicas, 6);
});

test('a forecast keeps an idle endpoint from going to zero before a predicted peak', () => {
  const scaler = new Autoscaler(
    policy({ minReplicas: 0, maxReplicas: 8, scaleToZero: { idleMs: 5000 } }),
  );
  for (let t = 0; t <= 10; t++) scaler.observe(sample(t * 1000));
  assert.equal(scaler.decide(10_000, 1).replicas, 0);
  assert.equal(scaler.decide(10_000, 1, { signalAhead: 2.5 }).replicas, 3);
});

test('deciding twice at the same time gives the same answer', () => {
  const scaler = new Autoscaler(policy({ minReplicas: 1, maxReplicas: 50, target: 1 }));
  for (let t = 0; t < 10; t++)
    scaler.observe(sample(t * 1000, { readyReplicas: 2, concurrency: 2 }));
  scaler.observe(sample(10_000, { readyReplicas: 2, concurrency: 30 }));
  const first = scaler.decide(10_000, 2);
  assert.equal(first.mode, 'panic');
  assert.deepEqual(scaler.decide(10_000, 2), first);
});

test('worker signals: held while unreported, custom metrics by name', () => {
  const cpu = new Autoscaler(
    policy({ minReplicas: 1, maxReplicas: 10, signal: 'cpu', target: 0.5 }),
  );
  cpu.observe(sample(0, { readyReplicas: 3 }));
  const held = cpu.decide(0, 3);
  assert.equal(held.replicas, 3);
  assert.match(held.reason, /no cpu measured/);
  // 3 replicas at 0.9 each: 2.7 / 0.5 → 6.
  cpu.observe(sample(1000, { readyReplicas: 3, cpu: 2.7 }));
  assert.equal(cpu.decide(1000, 3).replicas, 6);

  const tokens = new Autoscaler(
    policy({
      minReplicas: 1,
      maxReplicas: 10,
      signal: 'custom',
      customMetric: 'tokens_per_second',
      target: 400,
    }),
  );
  tokens.observe(sample(0, { readyReplicas: 2, custom: { tokens_per_second: 1000, other: 5 } }));
  assert.equal(tokens.decide(0, 2).replicas, 3);
});

/** A one-slot endpoint answering everything at `qps`, each request taking 100 ms of a slot. */
function served(qps: number, fields: Partial<ScaleSample> = {}): Partial<ScaleSample> {
  return { qps, completed: qps, cpu: qps * 0.1, slotsPerReplica: 1, ...fields };
}

/** M/M/c: the share of requests that wait beyond `slack` s (closed form, erlang-c.ts). */
function lateShare(servers: number, lambda: number, service: number, slack: number): number {
  const queue = erlangC(servers, lambda, 1 / service);
  return queue === null
    ? 1
    : queue.waitProbability * Math.exp(-(servers / service - lambda) * slack);
}

/** 99.9 % within 1 s, 1..maxReplicas, the defaults otherwise. */
function sloPolicy(maxReplicas: number): AutoscalePolicy {
  return policy({
    minReplicas: 1,
    maxReplicas,
    signal: 'slo',
    slo: { latencyMs: 1000, objective: 0.999 },
  });
}

test('slo: the count holds 99.9 % within the objective by the queueing model, with hysteresis', () => {
  // 100 ms of service, 99.9 % within 1 s: 0.7 s of slack (1 s - 3 × 0.1 s). 20/s needs 3
  // replicas (4/9 × e^-7 = 4.1e-4 of requests wait past it), 30/s needs 4 (0.509 × e^-7).
  const slo = sloPolicy(50);
  const rate = (t: number): number => (t < 100 ? 20 : t < 200 ? 30 : t < 300 ? 20 : 10);
  const run = runStream(new Autoscaler(slo), (t) => served(rate(t)), {
    seconds: 420,
    initialReplicas: 3,
    startupSeconds: 5,
  });
  // Up once the 60 s mean, 20 + 10 (k + 1) / 60 at t = 100 + k, is more than 3 replicas hold.
  let k = 0;
  while (lateShare(3, 20 + (10 * (k + 1)) / 60, 0.1, 0.7) <= 0.001) k++;
  // Down from 4 only once 4 - 1 would hold the demand × 3 / 2.5 (half a replica to spare):
  // back at 20/s it would not (24/s needs 4), so 4 holds; at 10/s (12/s needs 3) it goes to
  // 3, a scale-down delay (30 s) after the mean last did not fit; and 3 holds at 10/s (13.3/s needs
  // 3), where a fresh start would have 2.
  let d = 0;
  while (lateShare(3, (20 - (10 * (d + 1)) / 60) * 1.2, 0.1, 0.7) > 0.001) d++;
  assert.deepEqual(run.events, [
    { t: 100 + k, from: 3, to: 4 },
    // The last decision that wanted 4 was at 300 + d - 1: 30 s later it is out of the delay.
    { t: 300 + d - 1 + 30, from: 4, to: 3 },
  ]);
  assert.ok(k > 0 && k < 60 && d < 60, `up ${k} s, down ${d} s after the change`);
  const last = run.steps.at(-1)!.decision;
  assert.equal(last.mode, 'stable');
  assert.match(
    last.reason,
    /10 requests\/s \(60 s mean\) × 100 ms service → 2 for 99\.90 % within 1000 ms/,
  );
  assert.match(last.reason, /kept 3/);
});

test('slo: a spike with a backlog panics, sized for the backlog too; no service time: hold', () => {
  const slo = sloPolicy(100);
  // 20/s on 3 replicas, then 200/s from t = 100: the 3 replicas answer 30/s (busy), the rest
  // queues, 170 more each second.
  const run = runStream(
    new Autoscaler(slo),
    (t) =>
      t < 100 ? served(20) : served(200, { completed: 30, cpu: 3, queueDepth: 170 * (t - 99) }),
    { seconds: 103, initialReplicas: 3, startupSeconds: 5 },
  );
  const at100 = run.steps.find((step) => step.t === 100)!.decision;
  // The panic window's mean (5 × 20 + 200) / 6 = 50/s needs 6 replicas (closed form below),
  // and 170 queued × 0.1 s over 0.7 s of slack 25 more: 31 >= 2 × 3 ready → panic.
  assert.ok(lateShare(6, 50, 0.1, 0.7) <= 0.001 && lateShare(5, 50, 0.1, 0.7) > 0.001);
  assert.equal(at100.mode, 'panic');
  assert.equal(at100.replicas, 31);
  assert.match(at100.reason, /and 170 queued → 31, never down in panic/);
  // The service time measured under saturation is still 100 ms (3 busy slots / 30 answers).
  assert.match(run.steps.find((step) => step.t === 102)!.decision.reason, /× 100 ms service/);

  // No worker CPU reported (or nothing answered yet): nothing to size with, so it holds.
  const blind = new Autoscaler(slo);
  blind.observe(sample(0, { readyReplicas: 2, qps: 50, completed: 50 }));
  const held = blind.decide(0, 2);
  assert.equal(held.replicas, 2);
  assert.match(
    held.reason,
    /no service time \(worker CPU per answer\) measured in 60 s; holding 2/,
  );
});

test('the reason names what decided: the window, the hysteresis, the rate limit, the delay', () => {
  const scaler = new Autoscaler(
    policy({ minReplicas: 1, maxReplicas: 20, target: 1, scaleDownDelayMs: 0 }),
  );
  scaler.observe(sample(0, { readyReplicas: 6, concurrency: 5.8 }));
  assert.equal(
    scaler.decide(0, 7).reason,
    'concurrency 5.80 (60 s mean) / target 1 → 6; kept 7 (down once concurrency ≤ 5.50)',
  );
  assert.equal(
    scaler.decide(0, 16).reason,
    'concurrency 5.80 (60 s mean) / target 1 → 6; rate-limited to 8 (from 16)',
  );
});

test('the reason never names a level the signal cannot reach (one replica, or the minimum)', () => {
  const toZero = new Autoscaler(
    policy({ minReplicas: 0, maxReplicas: 3, target: 4, scaleToZero: { idleMs: 300_000 } }),
  );
  toZero.observe(sample(0, { concurrency: 0.2, qps: 1 }));
  assert.equal(
    toZero.decide(0, 1).reason,
    'concurrency 0.20 (60 s mean) / target 4 → 1',
    'one replica wanted: nothing kept',
  );
  toZero.observe(sample(1000));
  toZero.observe(sample(70_000));
  assert.equal(
    toZero.decide(70_000, 1).reason,
    'concurrency 0 (60 s mean) / target 4 → 0; kept 1 until idle 300 s (then to zero)',
  );
  const atMin = new Autoscaler(policy({ minReplicas: 2, maxReplicas: 5, target: 4 }));
  atMin.observe(sample(0, { readyReplicas: 2, concurrency: 2.5 }));
  assert.equal(atMin.decide(0, 2).reason, 'concurrency 2.50 (60 s mean) / target 4 → 1');
  const margin = new Autoscaler(
    policy({ minReplicas: 1, maxReplicas: 5, target: 4, scaleDownHysteresis: 3 }),
  );
  margin.observe(sample(0, { readyReplicas: 3 }));
  assert.equal(
    margin.decide(0, 3).reason,
    'concurrency 0 (60 s mean) / target 4 → 0; kept 3 (scaleDownHysteresis 3 leaves no lower count)',
  );
});
