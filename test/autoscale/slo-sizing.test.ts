// Replicas sized to a latency objective: the count sloReplicas gives meets the M/M/c bound and
// one replica fewer does not, checked against the closed form the simulator's queueing model
// is tested with (src/simulator/erlang-c.ts: Erlang C from its sums, not the recurrence the
// sizing uses); the backlog term; the edges (no arrivals, no slack, max replicas).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  backlogReplicas,
  sloReplicas,
  waitSlackSeconds,
  type LatencyObjective,
} from '../../src/autoscale/slo-sizing.ts';
import { erlangC } from '../../src/simulator/erlang-c.ts';

/** P(wait > slack) in M/M/c by the closed form; 1 where the queue has no steady state. */
function lateShare(servers: number, lambda: number, service: number, slack: number): number {
  const queue = erlangC(servers, lambda, 1 / service);
  if (queue === null) return 1;
  return queue.waitProbability * Math.exp(-(servers / service - lambda) * slack);
}

test('the count is the fewest replicas whose wait beyond the slack is within 1 - objective', () => {
  const slos: LatencyObjective[] = [
    { latencyMs: 1000, objective: 0.999 },
    { latencyMs: 300, objective: 0.99 },
    { latencyMs: 50, objective: 0.9999 },
  ];
  for (const slo of slos) {
    for (const service of [0.005, 0.02, 0.1]) {
      if (waitSlackSeconds(slo, service) <= 0) continue;
      for (const lambda of [0.3, 4, 25, 80, 400]) {
        const replicas = sloReplicas(
          { arrivalsPerSecond: lambda, meanServiceSeconds: service, slotsPerReplica: 1 },
          slo,
          10_000,
        );
        const slack = waitSlackSeconds(slo, service);
        const what = `λ ${lambda}/s, service ${service * 1000} ms, ${slo.objective} within ${slo.latencyMs} ms → ${replicas}`;
        assert.ok(replicas >= 1, what);
        assert.ok(lateShare(replicas, lambda, service, slack) <= 1 - slo.objective + 1e-12, what);
        if (replicas > 1)
          assert.ok(lateShare(replicas - 1, lambda, service, slack) > 1 - slo.objective, what);
      }
    }
  }
});

test('worked figures: 100 ms service, 99.9 % within 1 s (0.7 s of slack)', () => {
  const slo = { latencyMs: 1000, objective: 0.999 };
  const at = (lambda: number, slots = 1): number =>
    sloReplicas(
      { arrivalsPerSecond: lambda, meanServiceSeconds: 0.1, slotsPerReplica: slots },
      slo,
      80,
    );
  // 20/s is an offered load of 2: with 3 servers P(wait) = 4/9 and the wait beyond 0.7 s
  // 4/9 × e^-7 = 4.1e-4 <= 1e-3; with 2 the queue has no steady state.
  assert.equal(at(20), 3);
  assert.equal(lateShare(3, 20, 0.1, 0.7).toFixed(6), ((4 / 9) * Math.exp(-7)).toFixed(6));
  // 30/s (load 3): 4 servers, P(wait) = 0.509, × e^-7 = 4.6e-4.
  assert.equal(at(30), 4);
  // Slots: replicas of 4 slots each hold the servers the load needs, rounded up.
  assert.equal(at(30, 4), 1);
  assert.equal(at(250, 4), Math.ceil(at(250) / 4));
  // No arrivals: none needed; a load beyond max replicas: max.
  assert.equal(at(0), 0);
  assert.equal(
    sloReplicas({ arrivalsPerSecond: 5000, meanServiceSeconds: 0.1, slotsPerReplica: 1 }, slo, 80),
    80,
  );
});

test('with no slack (service alone near the objective), waiting at all stays within 1 - objective', () => {
  const slo = { latencyMs: 1000, objective: 0.999 };
  // 0.5 s service: 3 × 0.5 s > 1 s, so no slack; load 10.
  const replicas = sloReplicas(
    { arrivalsPerSecond: 20, meanServiceSeconds: 0.5, slotsPerReplica: 1 },
    slo,
    80,
  );
  assert.ok(erlangC(replicas, 20, 2)!.waitProbability <= 0.001);
  assert.ok(erlangC(replicas - 1, 20, 2)!.waitProbability > 0.001);
});

test('a backlog takes the replicas that clear it within the slack', () => {
  const slo = { latencyMs: 1000, objective: 0.999 };
  const load = { meanServiceSeconds: 0.1, slotsPerReplica: 1 };
  // 14 queued × 0.1 s = 1.4 slot-seconds, over 0.7 s of slack: 2 replicas.
  assert.equal(backlogReplicas(14, load, slo), 2);
  assert.equal(backlogReplicas(15, load, slo), 3);
  assert.equal(backlogReplicas(15, { ...load, slotsPerReplica: 4 }, slo), 1);
  assert.equal(backlogReplicas(0, load, slo), 0);
  // No slack: at least one service time to clear it.
  assert.equal(backlogReplicas(10, { meanServiceSeconds: 0.5, slotsPerReplica: 1 }, slo), 10);
});
