// simulate(): repeatable runs, one arrival stream for every policy, replicas ready only after
// their start-up time, scale-to-zero and wake, the samples a policy sees, and bad options.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isKilnError } from '../../src/core/errors.ts';
import { FixedReplicas } from '../../src/simulator/fixed-replicas.ts';
import { simulate, type SimulatedForecaster } from '../../src/simulator/simulate.ts';
import { modelOf, ToyReactive, traceOf } from './helpers.ts';

const busyHour = traceOf([
  [0, 20],
  [1200, 60],
  [2400, 10],
  [3600, 10],
]);
const model = modelOf(
  { kind: 'exponential', meanMs: 50 },
  { slots: 2, startupMs: 5000, usdPerHour: 0.5 },
);

test('the same seed gives the same report; another seed another arrival stream', () => {
  const options = {
    trace: busyHour,
    model,
    sloMs: 100,
    policies: [{ name: 'toy', createRunner: () => new ToyReactive(1) }],
  };
  const first = simulate({ ...options, seed: 42 });
  const again = simulate({ ...options, seed: 42 });
  assert.deepEqual(again, first);
  const other = simulate({ ...options, seed: 43 });
  assert.notEqual(other.requests, first.requests);
});

test('policies side by side see the same requests; more replicas, better SLO, more replica-seconds', () => {
  const report = simulate({
    trace: busyHour,
    model,
    sloMs: 100,
    policies: [
      { name: 'two', createRunner: () => new FixedReplicas(2), initialReplicas: 2 },
      { name: 'four', createRunner: () => new FixedReplicas(4), initialReplicas: 4 },
    ],
  });
  const [two, four] = report.policies;
  assert.ok(two !== undefined && four !== undefined);
  assert.equal(two.requests, report.requests);
  assert.equal(four.requests, report.requests);
  assert.ok(four.sloAttainment > two.sloAttainment);
  // Fixed counts: replica-seconds are exactly count × duration, cost follows the price.
  assert.ok(Math.abs(two.replicaSeconds - 2 * 3600) < 1e-6, `${two.replicaSeconds}`);
  assert.ok(Math.abs(four.replicaSeconds - 4 * 3600) < 1e-6);
  assert.ok(Math.abs(four.costUsd - (4 * 3600 * 0.5) / 3600) < 1e-9);
  assert.equal(two.meanReplicas, 2);
  assert.equal(two.scaleUps + two.scaleDowns, 0);
  assert.equal(report.durationSeconds, 3600);
});

test('replicas serve only after their start-up time; every tick the policy sees a full sample', () => {
  const runners: ToyReactive[] = [];
  const report = simulate({
    trace: busyHour,
    model,
    sloMs: 100,
    timelinePoints: 3600, // one point a second
    policies: [
      {
        name: 'toy',
        createRunner: () => {
          const runner = new ToyReactive(1, { minReplicas: 1 });
          runners.push(runner);
          return runner;
        },
      },
    ],
  });
  const policy = report.policies[0];
  const runner = runners[0];
  assert.ok(policy !== undefined && runner !== undefined);
  assert.equal(runner.samples.length, 3600);
  const first = runner.samples[0];
  assert.ok(first !== undefined);
  assert.equal(first.atMs, Date.UTC(2026, 10, 23) + 1000);
  assert.equal(first.accelerator, null);
  assert.ok(first.queueDepth !== null && first.cpu !== null);
  assert.ok(policy.scaleUps > 0 && policy.scaleDowns > 0);
  assert.ok(policy.maxReplicas >= 3);
  for (const sample of runner.samples) {
    assert.ok(sample.cpu !== null && sample.cpu >= 0 && sample.cpu <= sample.readyReplicas + 1e-9);
    assert.equal(sample.slotsPerReplica, model.concurrencyPerReplica);
  }
  // Answers per tick add up to the answered requests, and busy slot-seconds per answer (what
  // the slo signal sizes with) come out at the model's mean service time.
  const answered = runner.samples.reduce((sum, s) => sum + s.completed, 0);
  const served = policy.requests - policy.failedRequests; // a few still in flight at the end
  assert.ok(answered <= served && answered >= served * 0.99, `${answered} of ${served}`);
  const busy = runner.samples.reduce(
    (sum, s) => sum + (s.cpu ?? 0) * model.concurrencyPerReplica,
    0,
  );
  const meanMs = (busy / answered) * 1000;
  assert.ok(Math.abs(meanMs - report.meanServiceMs) < report.meanServiceMs * 0.05, `${meanMs}`);
});

test('a scale-up is ready exactly the start-up time later', () => {
  const startMs = Date.UTC(2026, 10, 23);
  const step = {
    observe: () => undefined,
    decide: (nowMs: number) => {
      const replicas = nowMs >= startMs + 1_200_000 ? 3 : 1;
      return {
        replicas,
        mode: 'stable' as const,
        reactive: replicas,
        predictive: 0,
        reason: 'step',
      };
    },
  };
  const report = simulate({
    trace: busyHour,
    model,
    sloMs: 100,
    timelinePoints: 3600,
    policies: [{ name: 'step', createRunner: () => step }],
  });
  const timeline = report.policies[0]?.timeline;
  assert.ok(timeline !== undefined);
  // Timeline point i is the tick at (i + 1) s: wanted 3 from the tick at 1200 s, ready from 1205 s.
  assert.equal(timeline.replicas.indexOf(3), 1199);
  assert.equal(timeline.readyReplicas.indexOf(3), 1204);
  assert.equal(timeline.readyReplicas[1203], 1);
  assert.equal(report.policies[0]?.scaleUps, 1);
});

test('scale to zero: the first request after idle wakes it, waits the start-up, and is counted', () => {
  // Idle 60 s, a short burst, idle again: the toy scaler goes to zero whenever demand is 0.
  const trace = traceOf([
    [0, 0],
    [60, 2],
    [90, 0],
    [300, 0],
  ]);
  const report = simulate({
    trace,
    // 10 slots: requests released together are served together, none waits for another.
    model: modelOf({ kind: 'constant', ms: 100 }, { startupMs: 5000, slots: 10 }),
    sloMs: 1000,
    policies: [{ name: 'to-zero', createRunner: () => new ToyReactive(10), initialReplicas: 0 }],
  });
  const policy = report.policies[0];
  assert.ok(policy !== undefined);
  assert.ok(report.requests > 30);
  assert.ok(policy.coldStarts >= 1);
  assert.ok(policy.heldRequests >= 1);
  // A cold start's first request waits the whole start-up then its service: 5000 + 100 ms.
  assert.ok(policy.maxMs !== null && Math.abs(policy.maxMs - 5100) < 1e-6, `${policy.maxMs}`);
  // Zero replicas before the burst and after it (point i is the tick at i + 1 s).
  const replicas = policy.timeline.replicas;
  assert.equal(policy.timeline.bucketSeconds, 1);
  assert.ok(replicas.slice(0, 59).every((r) => r === 0));
  assert.ok(replicas.slice(120).every((r) => r === 0));
  assert.ok(policy.replicaSeconds > 0 && policy.replicaSeconds < 60, `${policy.replicaSeconds}`);
});

test('a wake asks for wakeReplicas and holds a zero decision for wakeHoldMs', () => {
  const trace = traceOf([
    [0, 0],
    [10, 5],
    [11, 0],
    [120, 0],
  ]);
  const report = simulate({
    trace,
    model: modelOf({ kind: 'constant', ms: 10 }, { startupMs: 1000 }),
    sloMs: 1000,
    timelinePoints: 1000,
    seed: 3,
    policies: [
      {
        name: 'held',
        // Any demand → 1 replica, none → 0.
        createRunner: () => new ToyReactive(100),
        initialReplicas: 0,
        wakeReplicas: 2,
        wakeHoldMs: 30_000,
      },
    ],
  });
  const policy = report.policies[0];
  assert.ok(policy !== undefined);
  assert.ok(report.requests >= 1, 'the seed gives at least one request');
  assert.equal(policy.maxReplicas, 2);
  assert.equal(policy.coldStarts, 1);
  const replicas = policy.timeline.replicas;
  // Woken to 2 by the first request (10 s to 11 s), the policy's 1 next, its 0 ignored until
  // 30 s after the wake, then zero. Point i is the tick at (i + 1) s.
  assert.equal(replicas[20], 1);
  assert.equal(replicas[38], 1);
  assert.equal(replicas[45], 0);
  assert.equal(replicas[100], 0);
});

test('a forecaster learns each finished minute of demand and its forecast reaches the policy', () => {
  const rows: { arrivals: number; minuteStart: string }[] = [];
  const runners: ToyReactive[] = [];
  const forecaster: SimulatedForecaster = {
    learn: (row) => rows.push({ arrivals: row.arrivals, minuteStart: row.minuteStart }),
    forecast: (nowMs) => ({ signalAhead: nowMs % 7 }),
  };
  simulate({
    trace: traceOf([
      [0, 10],
      [300, 10],
    ]),
    model: modelOf({ kind: 'constant', ms: 10 }),
    sloMs: 100,
    policies: [
      {
        name: 'predictive',
        createRunner: () => {
          const runner = new ToyReactive(1, { minReplicas: 1 });
          runners.push(runner);
          return runner;
        },
        createForecaster: () => forecaster,
      },
    ],
  });
  assert.equal(rows.length, 5);
  assert.equal(rows[0]?.minuteStart, '2026-11-23T00:00:00.000Z');
  assert.equal(rows[1]?.minuteStart, '2026-11-23T00:01:00.000Z');
  const total = rows.reduce((sum, row) => sum + row.arrivals, 0);
  assert.ok(total > 2500 && total < 3500, `${total}`);
  const runner = runners[0];
  assert.ok(runner !== undefined);
  assert.equal(runner.forecasts.length, 300);
  assert.deepEqual(runner.forecasts[0], { signalAhead: (Date.UTC(2026, 10, 23) + 1000) % 7 });
});

test('panic seconds count the ticks the policy decided in panic', () => {
  const report = simulate({
    trace: busyHour,
    model,
    sloMs: 100,
    policies: [{ name: 'toy', createRunner: () => new ToyReactive(1, { panicAbove: 2 }) }],
  });
  const policy = report.policies[0];
  assert.ok(policy !== undefined);
  assert.ok(policy.panicSeconds > 0 && policy.panicSeconds < 3600);
});

test('bad options are KILN_SIMULATION_INVALID naming the problem', () => {
  const base = {
    trace: busyHour,
    model,
    sloMs: 100,
    policies: [{ name: 'a', createRunner: () => new FixedReplicas(1) }],
  };
  const refused = (options: Parameters<typeof simulate>[0], pattern: RegExp): void => {
    assert.throws(
      () => simulate(options),
      (error: unknown) =>
        isKilnError(error) &&
        error.code === 'KILN_SIMULATION_INVALID' &&
        pattern.test(error.message),
    );
  };
  refused({ ...base, sloMs: 0 }, /sloMs must be > 0/);
  refused({ ...base, policies: [] }, /no policies/);
  refused({ ...base, policies: [...base.policies, ...base.policies] }, /two policies are named a/);
  refused(
    { ...base, policies: [{ ...base.policies[0]!, instanceType: 'gpu' }] },
    /instance type gpu is not in the model \(small\)/,
  );
});

test('reportDelayMs: the policy sees the load of that many seconds ago, replica counts of now', () => {
  const seen = (reportDelayMs: number) => {
    const runners: ToyReactive[] = [];
    simulate({
      trace: busyHour,
      model,
      sloMs: 100,
      reportDelayMs,
      policies: [
        {
          name: 'fixed',
          // A fixed count, so the replicas and requests are the same in both runs.
          createRunner: () => {
            const runner = new ToyReactive(1);
            runners.push(runner);
            return {
              observe: (s) => runner.observe(s),
              decide: () => new FixedReplicas(2).decide(0, 2),
            };
          },
          initialReplicas: 2,
        },
      ],
    });
    return runners[0]?.samples ?? [];
  };
  const now = seen(0);
  const late = seen(3000);
  assert.equal(late.length, now.length);
  assert.deepEqual(late[0], { ...late[0], concurrency: 0, qps: 0, held: 0, readyReplicas: 2 });
  for (const i of [3, 100, 1500, 3599]) {
    const delayed = late[i];
    const source = now[i - 3];
    assert.ok(delayed !== undefined && source !== undefined);
    assert.equal(delayed.concurrency, source.concurrency);
    assert.equal(delayed.qps, source.qps);
    assert.equal(delayed.cpu, source.cpu);
    assert.equal(delayed.atMs, now[i]?.atMs);
    assert.equal(delayed.readyReplicas, now[i]?.readyReplicas);
  }
});

test('the activator bounds held requests: beyond its limit or past its timeout they fail', () => {
  // From zero, 20 rps for one second; replicas take 5 s to start.
  const trace = traceOf([
    [0, 0],
    [10, 20],
    [11, 0],
    [60, 0],
  ]);
  const run = (activator?: { limit: number; timeoutMs: number }) =>
    simulate({
      trace,
      model: modelOf({ kind: 'constant', ms: 10 }, { startupMs: 5000, slots: 100 }),
      sloMs: 10_000,
      seed: 4,
      policies: [
        {
          name: 'zero',
          createRunner: () => new ToyReactive(100),
          initialReplicas: 0,
          ...(activator === undefined ? {} : { activator }),
        },
      ],
    }).policies[0];
  const unbounded = run();
  assert.ok(unbounded !== undefined && unbounded.requests > 10);
  assert.equal(unbounded.failedRequests, 0);
  assert.equal(unbounded.withinSlo, unbounded.requests);
  // A limit of 3: the rest are refused at once; the 3 held are answered after the start-up.
  const limited = run({ limit: 3, timeoutMs: 30_000 });
  assert.ok(limited !== undefined);
  assert.equal(limited.heldRequests, 3);
  assert.equal(limited.failedRequests, limited.requests - 3);
  assert.equal(limited.withinSlo, 3);
  // A 2 s timeout, shorter than the start-up: every held request fails.
  const timedOut = run({ limit: 100, timeoutMs: 2000 });
  assert.ok(timedOut !== undefined);
  assert.equal(timedOut.failedRequests, timedOut.requests);
  assert.equal(timedOut.withinSlo, 0);
  assert.equal(timedOut.sloAttainment, 0);
  assert.equal(timedOut.p99Ms, null);
});
