// Invariants of the Autoscaler over random policies and random signal streams (seeded, so a
// failure repeats): every count within [minReplicas, maxReplicas] (0 only for scale-to-zero
// after a full idle period), each change within the rate limits, never down in panic, and the
// same answer when asked twice at the same time.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { resolveAutoscalePolicy } from '../../src/autoscale/autoscale-policy.ts';
import { Autoscaler } from '../../src/autoscale/autoscaler.ts';
import { createRandom, type Random } from '../../src/core/random.ts';
import type { ScaleSample } from '../../src/autoscale/scale-signals.ts';

function randomPolicy(random: Random): Record<string, unknown> {
  const minReplicas = random.int(3);
  const stableWindowMs = 2000 + random.int(60) * 1000;
  return {
    minReplicas,
    maxReplicas: Math.max(1, minReplicas) + random.int(30),
    target: 0.25 + random.next() * 4,
    stableWindowMs,
    panicWindowMs: 1000 + random.int(Math.max(1, stableWindowMs / 1000 - 1)) * 1000,
    panicThreshold: 1 + random.next() * 3,
    maxScaleUpRate: 1 + random.next() * 10,
    maxScaleDownRate: 1 + random.next() * 4,
    scaleDownDelayMs: random.int(40) * 1000,
    scaleDownHysteresis: random.next(),
    ...(minReplicas === 0 ? { scaleToZero: { idleMs: 1000 + random.int(30) * 1000 } } : {}),
  };
}

test('random policies and streams keep every invariant', () => {
  const random = createRandom(14);
  for (let run = 0; run < 150; run++) {
    const check = resolveAutoscalePolicy(randomPolicy(random));
    if (!check.ok) assert.fail(check.reason);
    const policy = check.policy;
    const scaler = new Autoscaler(policy);
    let replicas = policy.minReplicas;
    let ready = replicas;
    let lastDemandMs = 0;
    let level = random.next() * 20;
    for (let t = 0; t < 300; t++) {
      // A random walk with bursts and silences.
      if (random.next() < 0.05) level = random.next() < 0.3 ? 0 : random.next() * 40;
      const concurrency = Math.max(0, level + (random.next() - 0.5) * level * 0.5);
      const held = replicas === 0 && concurrency > 0 ? 1 : 0;
      if (concurrency > 0 || held > 0) lastDemandMs = t * 1000;
      const sample: ScaleSample = {
        atMs: t * 1000,
        readyReplicas: ready,
        startingReplicas: replicas - ready,
        concurrency,
        qps: concurrency * 10,
        completed: concurrency * 10,
        held,
        queueDepth: null,
        cpu: null,
        slotsPerReplica: null,
        accelerator: null,
        custom: {},
      };
      scaler.observe(sample);
      const decision = scaler.decide(t * 1000, replicas);
      const context = `run ${run} t ${t} ${JSON.stringify(policy)} from ${replicas}`;
      assert.deepEqual(scaler.decide(t * 1000, replicas), decision, context);
      const next = decision.replicas;
      assert.ok(Number.isInteger(next) && next <= policy.maxReplicas, context);
      if (next === 0) {
        assert.equal(policy.minReplicas, 0, context);
        assert.ok(t * 1000 - lastDemandMs >= policy.scaleToZero!.idleMs, context);
      } else {
        assert.ok(next >= Math.max(1, policy.minReplicas), context);
      }
      if (next > replicas) {
        assert.ok(next <= Math.ceil(policy.maxScaleUpRate * Math.max(1, replicas)), context);
      }
      if (next < replicas && next > 0) {
        assert.ok(next >= Math.floor(replicas / policy.maxScaleDownRate), context);
        assert.equal(decision.mode, 'stable', `${context}: down in panic`);
      }
      if (concurrency > 0 && policy.minReplicas === 0) assert.ok(next >= 1, context);
      // Replicas become ready a second after they are asked for; removals at once.
      ready = Math.min(next, replicas);
      replicas = next;
    }
  }
});
