// The simulator's queueing model against closed forms. One replica with c slots and
// exponential service times is exactly the M/M/c queue, so its mean wait must match Erlang C;
// a run of 2 simulated hours (~200 000 requests at a fixed seed) lands within the stated
// tolerances (measured error at these seeds: about 2 %). Several one-slot replicas behind
// least-outstanding routing sit between one shared queue (M/M/c) and random routing
// (c separate M/M/1 queues).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { erlangC } from '../../src/simulator/erlang-c.ts';
import { FixedReplicas } from '../../src/simulator/fixed-replicas.ts';
import { simulate } from '../../src/simulator/simulate.ts';
import { traceExpectedRequests } from '../../src/simulator/trace.ts';
import { modelOf, traceOf } from './helpers.ts';

const twoHours = traceOf([
  [0, 0],
  [7200, 0],
]);

function run(rps: number, meanMs: number, slots: number, replicas: number, seed = 7) {
  const report = simulate({
    trace: traceOf([
      [0, rps],
      [7200, rps],
    ]),
    model: modelOf({ kind: 'exponential', meanMs }, { slots }),
    policies: [
      { name: 'fixed', createRunner: () => new FixedReplicas(replicas), initialReplicas: replicas },
    ],
    sloMs: 1000,
    seed,
  });
  const policy = report.policies[0];
  assert.ok(policy !== undefined);
  return policy;
}

test('erlangC: M/M/1 reduces to rho / (mu - lambda); no steady state at rho >= 1', () => {
  const mm1 = erlangC(1, 6, 10);
  assert.ok(mm1 !== null);
  assert.ok(Math.abs(mm1.waitProbability - 0.6) < 1e-12);
  assert.ok(Math.abs(mm1.meanWait - 0.6 / 4) < 1e-12);
  assert.equal(erlangC(2, 20, 10), null);
  assert.equal(erlangC(0, 1, 10), null);
});

test('one replica with 4 slots is M/M/4: mean wait and P(wait) match Erlang C', () => {
  const expected = erlangC(4, 30, 10); // rho 0.75
  assert.ok(expected !== null);
  const policy = run(30, 100, 4, 1);
  assert.ok(policy.meanWaitMs !== null && policy.meanLatencyMs !== null);
  const waitMs = expected.meanWait * 1000;
  assert.ok(
    Math.abs(policy.meanWaitMs - waitMs) / waitMs < 0.1,
    `mean wait ${policy.meanWaitMs} ms vs Erlang C ${waitMs} ms (tolerance 10 %)`,
  );
  assert.ok(
    Math.abs(policy.waitedShare - expected.waitProbability) < 0.03,
    `P(wait) ${policy.waitedShare} vs ${expected.waitProbability} (tolerance 0.03)`,
  );
  const responseMs = expected.meanResponse * 1000;
  assert.ok(Math.abs(policy.meanLatencyMs - responseMs) / responseMs < 0.05);
});

test('one replica with 1 slot is M/M/1: mean wait within 10 % of rho / (mu - lambda)', () => {
  const policy = run(6, 100, 1, 1, 11);
  assert.ok(policy.meanWaitMs !== null);
  const waitMs = (0.6 / 4) * 1000;
  assert.ok(
    Math.abs(policy.meanWaitMs - waitMs) / waitMs < 0.1,
    `${policy.meanWaitMs} vs ${waitMs}`,
  );
});

test('three one-slot replicas, least outstanding: wait between M/M/3 and 3 × M/M/1', () => {
  const shared = erlangC(3, 24, 10);
  const separate = erlangC(1, 8, 10);
  assert.ok(shared !== null && separate !== null);
  const policy = run(24, 100, 1, 3);
  assert.ok(policy.meanWaitMs !== null);
  assert.ok(policy.meanWaitMs > shared.meanWait * 1000 * 0.95, `${policy.meanWaitMs}`);
  assert.ok(policy.meanWaitMs < separate.meanWait * 1000 * 0.7, `${policy.meanWaitMs}`);
});

test('arrivals follow the trace: the count is within 4 sd of the expected Poisson count', () => {
  const trace = traceOf([
    [0, 5],
    [600, 50],
    [900, 0],
    [1200, 20],
  ]);
  const expected = traceExpectedRequests(trace);
  const report = simulate({
    trace,
    model: modelOf({ kind: 'constant', ms: 10 }, { slots: 8 }),
    policies: [{ name: 'fixed', createRunner: () => new FixedReplicas(2), initialReplicas: 2 }],
    sloMs: 100,
  });
  assert.ok(
    Math.abs(report.requests - expected) < 4 * Math.sqrt(expected),
    `${report.requests} vs ${expected}`,
  );
  // A silent trace has no requests and full attainment.
  const silent = simulate({
    trace: twoHours,
    model: modelOf({ kind: 'constant', ms: 10 }),
    policies: [{ name: 'fixed', createRunner: () => new FixedReplicas(1) }],
    sloMs: 100,
  });
  assert.equal(silent.requests, 0);
  assert.equal(silent.policies[0]?.sloAttainment, 1);
  assert.equal(silent.policies[0]?.p99Ms, null);
});
