// The autoscale controller with a fake clock, a real SQLite store and Kiln's Autoscaler:
// gateway reports in, counts and events out; wake from zero; policy changes; worker load.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { KilnError } from '../../src/core/errors.ts';
import {
  resolveAutoscalePolicy,
  type AutoscalePolicy,
} from '../../src/autoscale/autoscale-policy.ts';
import {
  AutoscaleController,
  type ScaledReplicas,
} from '../../src/control/autoscale/autoscale-controller.ts';
import type { WorkerLoadSource } from '../../src/control/autoscale/worker-load-source.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import type { LoadReport } from '../../src/protocol/scaling/load-report.ts';
import type { EndpointRecord } from '../../src/store/serving-records.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';
import { placeholderVersion } from '../helpers/stored-version.ts';

function policyOf(input: Record<string, unknown>): AutoscalePolicy {
  const check = resolveAutoscalePolicy(input);
  assert.ok(check.ok, check.ok ? '' : check.reason);
  return check.policy;
}

/** Replicas as the reconciler would have them: `ready` follows the stored count at once. */
class FakeReplicas implements ScaledReplicas {
  ready = new Map<string, number>();
  triggers = 0;
  replicaCounts(endpoint: EndpointRecord): { ready: number; starting: number } {
    return { ready: this.ready.get(endpoint.name) ?? 0, starting: 0 };
  }
  trigger(): Promise<void> {
    this.triggers += 1;
    return Promise.resolve();
  }
}

async function setup(
  policy: Record<string, unknown>,
  options: { replicas?: number; workerLoad?: WorkerLoadSource } = {},
) {
  const dir = await tempDir();
  const clock = new FakeClock();
  const store = SqliteStore.open(join(dir, 'kiln.db'), { clock });
  await store.createModel({ name: 'iris', team: 'default', description: '' });
  await store.createVersion('iris', placeholderVersion());
  await store.putEndpoint({
    name: 'iris',
    team: 'default',
    model: 'iris',
    version: 1,
    ref: '1',
    replicas: options.replicas ?? 1,
    config: { autoscale: policyOf(policy) },
  });
  const replicas = new FakeReplicas();
  const logs: string[] = [];
  const controller = new AutoscaleController({
    store,
    clock,
    replicas,
    log: (m) => logs.push(m),
    ...(options.workerLoad === undefined ? {} : { workerLoad: options.workerLoad }),
  });
  /** One second: a gateway report (unless idle), then a tick; ready follows the count. */
  const second = async (
    load: { concurrency?: number; arrivals?: number; held?: number } | null,
  ) => {
    clock.advance(1000);
    if (load !== null) controller.ingest(report(clock.ms, load));
    await controller.tick();
    const scale = await store.getEndpointScale('iris');
    replicas.ready.set('iris', scale?.replicas ?? 0);
    return scale?.replicas ?? null;
  };
  return { store, clock, controller, replicas, second, logs };
}

function report(
  nowMs: number,
  load: { concurrency?: number; arrivals?: number; held?: number; latencies?: number[] },
  gateway = 'gw-1',
): LoadReport {
  const latency = new HistogramSketch();
  for (const ms of load.latencies ?? []) latency.add(ms);
  return {
    gateway,
    windowStart: new Date(nowMs - 1000).toISOString(),
    windowEnd: new Date(nowMs).toISOString(),
    endpoints: [
      {
        endpoint: 'iris',
        arrivals: load.arrivals ?? 0,
        completed: load.arrivals ?? 0,
        concurrencyMean: load.concurrency ?? 0,
        concurrencyMax: Math.ceil(load.concurrency ?? 0),
        held: load.held ?? 0,
        latencyMs: latency.snapshot(),
      },
    ],
  };
}

test('scales up under load and back down after the delay, with bounded events that never flap', async () => {
  const { store, second, replicas } = await setup({
    minReplicas: 1,
    maxReplicas: 10,
    signal: 'concurrency',
    target: 2,
    stableWindowMs: 10_000,
    panicWindowMs: 2_000,
    scaleDownDelayMs: 5_000,
  });
  // A steady load of 8 in flight wants 4 replicas (target 2 each).
  const counts: (number | null)[] = [];
  for (let i = 0; i < 15; i++) counts.push(await second({ concurrency: 8, arrivals: 40 }));
  assert.equal(counts.at(-1), 4);
  assert.ok(replicas.triggers >= 1);
  // Load stops: held at 4 through the delay and the window, then down to 1 (the minimum).
  for (let i = 0; i < 40; i++) counts.push(await second({ concurrency: 0, arrivals: 0 }));
  assert.equal(counts.at(-1), 1);
  const events = await store.listScaleEvents({ endpoint: 'iris' });
  const kinds = events.map((e) => e.kind).reverse();
  // created from the deploy, up (maybe in two steps through panic), down (rate-limited ÷2).
  assert.equal(kinds[0], 'manual');
  assert.ok(kinds.filter((k) => k === 'scale-up').length <= 2, kinds.join());
  // Down as the window's mean falls (4 → 3 → 2 → 1 at most), each step held by the delay.
  assert.ok(kinds.filter((k) => k === 'scale-down').length <= 3, kinds.join());
  const downs = events.filter((e) => e.kind === 'scale-down').reverse();
  for (const [i, e] of downs.entries()) assert.ok(e.to < (downs[i - 1]?.to ?? 4) || i === 0);
  // Never flapped: every scale-up precedes every scale-down.
  assert.ok(kinds.lastIndexOf('scale-up') < kinds.indexOf('scale-down'), kinds.join());
  const last = events[0];
  assert.ok(last !== undefined);
  assert.deepEqual([last.kind, last.to], ['scale-down', 1]);
  assert.match(last.reason, /concurrency/);
});

test('goes to zero after the idle period, a wake brings one replica at once, idempotently', async () => {
  const { store, clock, controller, second, replicas } = await setup({
    minReplicas: 0,
    maxReplicas: 3,
    target: 1,
    stableWindowMs: 4_000,
    panicWindowMs: 1_000,
    scaleDownDelayMs: 0,
    scaleToZero: { idleMs: 10_000 },
  });
  assert.equal(await second({ concurrency: 1, arrivals: 1 }), 1);
  let count: number | null = 1;
  let seconds = 0;
  while (count !== 0 && seconds < 30) {
    count = await second(null);
    seconds += 1;
  }
  assert.equal(count, 0);
  // Idle for 10 s after the last request (at 1 s; its report counts for 2 s): zero then.
  assert.ok(seconds >= 10 && seconds <= 12, `went to zero after ${seconds} s`);
  const toZero = (await store.listScaleEvents({ endpoint: 'iris', limit: 1 }))[0];
  assert.deepEqual([toZero?.kind, toZero?.mode, toZero?.to], ['to-zero', 'idle', 0]);

  // More idle seconds: stays at zero, no more events.
  for (let i = 0; i < 3; i++) assert.equal(await second(null), 0);

  clock.advance(500);
  const woken = await controller.wake('iris');
  assert.equal(woken.replicas, 1);
  const again = await controller.wake('iris');
  assert.equal(again.replicas, 1);
  const wakes = (await store.listScaleEvents({ endpoint: 'iris' })).filter(
    (e) => e.kind === 'wake',
  );
  assert.equal(wakes.length, 1, 'a second wake changes nothing');
  assert.deepEqual([wakes[0]?.from, wakes[0]?.to, wakes[0]?.mode], [0, 1, 'wake']);

  // The gateway's report may come a tick later: the woken endpoint is not sent back to zero.
  replicas.ready.set('iris', 0);
  clock.advance(1500);
  controller.replicaReady('iris', 1500);
  assert.equal(await second(null), 1);
  assert.equal(await second({ held: 0, concurrency: 1, arrivals: 3 }), 1);
  const metrics = await controller.metrics.text();
  assert.match(metrics, /kiln_autoscale_cold_start_seconds_count\{endpoint="iris"\} 1/);
  assert.match(metrics, /kiln_autoscale_scale_events_total\{endpoint="iris",kind="wake"\} 1/);
  assert.match(metrics, /kiln_autoscale_desired_replicas\{endpoint="iris"\} 1/);

  await assert.rejects(controller.wake('nope'), (error: unknown) => {
    assert.ok(error instanceof KilnError);
    assert.equal(error.code, 'KILN_ENDPOINT_NOT_FOUND');
    return true;
  });
});

test('held requests at zero wake the endpoint from a report too', async () => {
  const { store, second } = await setup(
    {
      minReplicas: 0,
      maxReplicas: 3,
      target: 1,
      stableWindowMs: 4_000,
      panicWindowMs: 1_000,
      scaleDownDelayMs: 0,
      scaleToZero: { idleMs: 2_000 },
    },
    { replicas: 1 },
  );
  let count: number | null = 1;
  for (let i = 0; i < 15 && count !== 0; i++) count = await second(null);
  assert.equal(count, 0);
  assert.equal(await second({ held: 3, arrivals: 3 }), 1);
  const last = (await store.listScaleEvents({ endpoint: 'iris', limit: 1 }))[0];
  assert.deepEqual([last?.kind, last?.from, last?.to], ['wake', 0, 1]);
});

test('demand is merged into the store per minute; status shows signals, events and latency', async () => {
  const { store, clock, controller } = await setup({ minReplicas: 1, maxReplicas: 4, target: 5 });
  for (let i = 0; i < 12; i++) {
    clock.advance(1000);
    controller.ingest(report(clock.ms, { concurrency: 2, arrivals: 10, latencies: [10, 20] }));
    controller.ingest(report(clock.ms, { concurrency: 1, arrivals: 5, latencies: [30] }, 'gw-2'));
    await controller.tick();
  }
  const rows = await store.listDemand({ endpoint: 'iris', since: '2026-01-01T00:00:00Z' });
  const arrivals = rows.reduce((n, r) => n + r.arrivals, 0);
  // Flushed every 10 s: the 10 reports' seconds so far, from both gateways.
  assert.ok(arrivals >= 150 && arrivals <= 180, `arrivals ${arrivals}`);
  await controller.close();
  const all = await store.listDemand({ endpoint: 'iris', since: '2026-01-01T00:00:00Z' });
  assert.equal(
    all.reduce((n, r) => n + r.arrivals, 0),
    180,
  );
  assert.equal(
    all.reduce((n, r) => n + r.seconds, 0),
    24,
  );
  assert.equal(
    all.reduce((n, r) => n + r.concurrencySeconds, 0),
    36,
  );

  const status = await controller.status('iris', { latencySince: '2026-01-01T00:00:00Z' });
  assert.equal(status.replicas, 1);
  assert.equal(status.mode, 'stable');
  assert.equal(status.signals?.concurrency, 3);
  assert.equal(status.signals?.qps, 15);
  assert.equal(status.latencyMs.count, 36);
  assert.ok(status.latencyMs.p50 !== null && Math.abs(status.latencyMs.p50 - 20) < 0.5);
  assert.ok(status.latencyMs.p99 !== null && Math.abs(status.latencyMs.p99 - 30) < 0.7);
  assert.equal(status.events[0]?.kind, 'manual');
  assert.equal(status.startup.usedMs, 30_000);
  assert.match(status.lastDecision?.reason ?? '', /concurrency 3/);
});

test('a policy change rebuilds the runner and clamps the count; clear returns to a fixed count', async () => {
  const { store, controller, second } = await setup(
    { minReplicas: 1, maxReplicas: 8, target: 1, stableWindowMs: 5_000, panicWindowMs: 1_000 },
    { replicas: 6 },
  );
  assert.equal(await second({ concurrency: 6, arrivals: 6 }), 6);
  const set = await controller.setPolicy('iris', { minReplicas: 1, maxReplicas: 3, target: 1 });
  assert.equal(set.replicas, 3);
  assert.equal(set.autoscale?.maxReplicas, 3);
  assert.equal((await store.getEndpoint('iris'))?.config.autoscale?.maxReplicas, 3);
  assert.equal(await second({ concurrency: 6, arrivals: 6 }), 3);

  await assert.rejects(
    controller.setPolicy('iris', { minReplicas: 4, maxReplicas: 2, signal: 'latency' }),
    (error: unknown) => {
      assert.ok(error instanceof KilnError);
      assert.equal(error.code, 'KILN_AUTOSCALE_INVALID');
      assert.match(error.message, /minReplicas \(4\) > maxReplicas \(2\)/);
      assert.match(error.message, /unknown signal/);
      return true;
    },
  );
  await assert.rejects(
    controller.setPolicy('iris', { minReplicas: 1, maxReplicas: 65, target: 1 }),
    /maxReplicas must be at most 64/,
  );

  const cleared = await controller.clearPolicy('iris');
  assert.equal(cleared.autoscale, null);
  assert.equal(cleared.mode, 'fixed');
  const endpoint = await store.getEndpoint('iris');
  assert.equal(endpoint?.config.autoscale, undefined);
  assert.equal(endpoint?.replicas, 3, 'the count it ran when cleared');
  const before = (await store.listScaleEvents({ endpoint: 'iris' })).length;
  await second({ concurrency: 50, arrivals: 50 });
  assert.equal((await store.listScaleEvents({ endpoint: 'iris' })).length, before);
});

test('a policy is refused on an endpoint served by a pool, as at deploy', async () => {
  // Fails without the check in setPolicy: the policy was stored and the controller then
  // "scaled" an endpoint whose replicas are the pool's workers.
  const dir = await tempDir();
  const clock = new FakeClock();
  const store = SqliteStore.open(join(dir, 'kiln.db'), { clock });
  await store.createModel({ name: 'iris', team: 'default', description: '' });
  await store.createVersion('iris', placeholderVersion());
  await store.putPool({ name: 'small', team: 'default', workers: 2, memoryBudgetBytes: 1 << 20 });
  await store.putEndpoint({
    name: 'iris',
    team: 'default',
    model: 'iris',
    version: 1,
    ref: '1',
    replicas: 1,
    config: { pool: 'small' },
  });
  const controller = new AutoscaleController({ store, clock, replicas: new FakeReplicas() });
  await assert.rejects(
    controller.setPolicy('iris', { minReplicas: 0, maxReplicas: 3, target: 1 }),
    (error: unknown) => {
      assert.ok(error instanceof KilnError);
      assert.equal(error.code, 'KILN_AUTOSCALE_INVALID');
      assert.match(error.message, /pool small/);
      return true;
    },
  );
  assert.equal((await store.getEndpoint('iris'))?.config.autoscale, undefined);
  assert.equal(await store.getEndpointScale('iris'), null);
});

test('a count changed meanwhile wins over the tick; the next tick decides from it', async () => {
  const { store, clock, controller, replicas } = await setup({
    minReplicas: 1,
    maxReplicas: 10,
    target: 1,
    stableWindowMs: 3_000,
    panicWindowMs: 1_000,
  });
  clock.advance(1000);
  controller.ingest(report(clock.ms, { concurrency: 5, arrivals: 5 }));
  await controller.tick();
  assert.equal((await store.getEndpointScale('iris'))?.replicas, 5);
  replicas.ready.set('iris', 5);
  // Someone sets 7 by hand between two ticks; the tick's write expected 5 and loses, quietly.
  const racing = store.setEndpointScale({ endpoint: 'iris', replicas: 7, reason: 'by hand' });
  clock.advance(1000);
  controller.ingest(report(clock.ms, { concurrency: 5, arrivals: 5 }));
  await racing;
  await controller.tick();
  const after = await store.getEndpointScale('iris');
  assert.ok(after !== null && (after.replicas === 7 || after.replicas === 5));
});

test('worker load: endpoints on worker signals are watched, and their load reaches the decision', async () => {
  const watched: string[][] = [];
  const source: WorkerLoadSource = {
    watch: (names) => watched.push([...names]),
    latest: (name) =>
      name === 'iris'
        ? {
            atMs: 0,
            replicas: 1,
            queueDepth: 12,
            cpu: 0.5,
            threads: 1,
            accelerator: null,
            custom: { x: 1 },
          }
        : null,
  };
  const { second, controller } = await setup(
    {
      minReplicas: 1,
      maxReplicas: 10,
      signal: 'queue-depth',
      target: 4,
      stableWindowMs: 3_000,
      panicWindowMs: 1_000,
    },
    { workerLoad: source },
  );
  let count: number | null = null;
  for (let i = 0; i < 4; i++) count = await second(null);
  assert.equal(count, 3);
  assert.deepEqual(watched.at(-1), ['iris']);
  const status = await controller.status('iris');
  assert.equal(status.signals?.queueDepth, 12);
  assert.deepEqual(status.signals?.custom, { x: 1 });
});

test("signal slo: sized from the gateways' arrivals and answers and the workers' busy CPU", async () => {
  // The workers report 2 busy cores (threads 1 each) while the gateways see 20 requests a
  // second answered: 100 ms a request. 99.9 % within 1 s at 20/s takes 3 replicas, at 30/s
  // (3 cores busy) 4 (M/M/c, test/autoscale/slo-sizing.test.ts).
  let busyCores = 2;
  const watched: string[][] = [];
  const source: WorkerLoadSource = {
    watch: (names) => watched.push([...names]),
    latest: () => ({
      atMs: 0,
      replicas: 1,
      queueDepth: 0,
      cpu: busyCores,
      threads: 1,
      accelerator: null,
      custom: {},
    }),
  };
  const { second, controller } = await setup(
    {
      minReplicas: 1,
      maxReplicas: 10,
      signal: 'slo',
      slo: { latencyMs: 1000 },
      stableWindowMs: 3_000,
      panicWindowMs: 1_000,
    },
    { workerLoad: source, replicas: 3 },
  );
  let count: number | null = null;
  for (let i = 0; i < 4; i++) count = await second({ arrivals: 20, concurrency: 2 });
  assert.equal(count, 3);
  assert.deepEqual(watched.at(-1), ['iris']);
  busyCores = 3;
  for (let i = 0; i < 4; i++) count = await second({ arrivals: 30, concurrency: 3 });
  assert.equal(count, 4);
  const status = await controller.status('iris');
  assert.match(
    status.lastDecision?.reason ?? '',
    /30 requests\/s .* × 100 ms service → 4 for 99\.90 % within 1000 ms/,
  );
});

test('predictive: replicas are added before a learned daily peak, by the start-up time', async () => {
  const { store, clock, controller, second } = await setup({
    minReplicas: 1,
    maxReplicas: 10,
    signal: 'qps',
    target: 10,
    stableWindowMs: 10_000,
    panicWindowMs: 2_000,
    scaleDownDelayMs: 0,
    predictive: { startupMs: 120_000, historyDays: 7, bucketMs: 600_000 },
  });
  // A week of history: 50 requests/s from 12:00 to 12:30 each day, 1/s otherwise.
  const dayMs = 86_400_000;
  const start = Date.parse('2026-01-01T00:00:00Z');
  const rows = [];
  for (let day = 0; day < 7; day++) {
    for (let minute = 11 * 60; minute < 13 * 60; minute++) {
      const qps = minute >= 12 * 60 && minute < 12 * 60 + 30 ? 50 : 1;
      rows.push({
        endpoint: 'iris',
        minuteStart: new Date(start + day * dayMs + minute * 60_000).toISOString(),
        arrivals: qps * 60,
        concurrencySeconds: qps * 6,
        seconds: 60,
        latencyMs: new HistogramSketch().snapshot(),
      });
    }
  }
  await store.mergeDemand(rows);
  // Day 8, 11:40: the peak is 20 min away, more than the start-up time: reactive only.
  clock.ms = start + 7 * dayMs + (11 * 60 + 40) * 60_000;
  for (let i = 0; i < 6; i++) assert.equal(await second({ arrivals: 1 }), 1);
  // 11:58:30: the peak starts within the start-up time (2 min): 50/s ÷ 10 → 5 replicas, now.
  clock.ms = start + 7 * dayMs + (11 * 60 + 58) * 60_000 + 30_000;
  let count: number | null = null;
  for (let i = 0; i < 3; i++) count = await second({ arrivals: 1 });
  assert.equal(count, 5);
  const up = (await store.listScaleEvents({ endpoint: 'iris', limit: 1 }))[0];
  assert.deepEqual([up?.kind, up?.mode, up?.to], ['scale-up', 'predictive', 5]);
  assert.equal((await controller.status('iris')).lastDecision?.predictive, 5);
});

test('a restarted controller carries the stored count and idle period on: no drop, no wake of its own', async () => {
  const { store, clock, controller, second, replicas } = await setup(
    {
      minReplicas: 0,
      maxReplicas: 5,
      target: 1,
      stableWindowMs: 4_000,
      panicWindowMs: 1_000,
      scaleDownDelayMs: 5_000,
      scaleToZero: { idleMs: 20_000 },
    },
    { replicas: 3 },
  );
  for (let i = 0; i < 12; i++) assert.equal(await second({ concurrency: 3, arrivals: 3 }), 3);
  await controller.close();

  // The control plane restarts: its gateways' first reports are not in yet.
  const restarted = new AutoscaleController({ store, clock, replicas, log: () => undefined });
  const tick = async (load: { concurrency: number; arrivals: number } | null) => {
    clock.advance(1000);
    if (load !== null) restarted.ingest(report(clock.ms, load));
    await restarted.tick();
    return (await store.getEndpointScale('iris'))?.replicas ?? null;
  };
  for (let i = 0; i < 3; i++) assert.equal(await tick(null), 3, 'held through the silence');
  for (let i = 0; i < 10; i++) assert.equal(await tick({ concurrency: 3, arrivals: 3 }), 3);
  // Idle from here: to zero once idleMs has passed since the last demand, not before.
  let count: number | null = 3;
  let seconds = 0;
  while (count !== 0 && seconds < 60) {
    count = await tick(null);
    seconds += 1;
  }
  assert.equal(count, 0);
  assert.ok(seconds >= 20, `to zero after ${seconds} s idle`);
  await restarted.close();

  // Restarted again at zero: it stays there until a request comes.
  const third = new AutoscaleController({ store, clock, replicas, log: () => undefined });
  replicas.ready.set('iris', 0);
  for (let i = 0; i < 10; i++) {
    clock.advance(1000);
    await third.tick();
  }
  assert.equal((await store.getEndpointScale('iris'))?.replicas, 0);
  clock.advance(1000);
  third.ingest(report(clock.ms, { held: 2, concurrency: 2, arrivals: 2 }));
  await third.tick();
  assert.ok(((await store.getEndpointScale('iris'))?.replicas ?? 0) >= 1, 'woken by demand');
  await third.close();
});

test('two gateways holding requests at zero: both wake it, one wake event, their demand summed', async () => {
  const { store, clock, controller, second, replicas } = await setup({
    minReplicas: 0,
    maxReplicas: 6,
    target: 1,
    stableWindowMs: 4_000,
    panicWindowMs: 1_000,
    scaleDownDelayMs: 0,
    scaleToZero: { idleMs: 5_000 },
  });
  await store.setEndpointScale({ endpoint: 'iris', replicas: 0, reason: 'idle' });
  replicas.ready.set('iris', 0);
  for (let i = 0; i < 8; i++) assert.equal(await second(null), 0);

  clock.advance(200);
  const [a, b] = await Promise.all([controller.wake('iris'), controller.wake('iris')]);
  assert.deepEqual([a.replicas, b.replicas], [1, 1]);
  const wakes = (await store.listScaleEvents({ endpoint: 'iris' })).filter(
    (e) => e.kind === 'wake',
  );
  assert.equal(wakes.length, 1, 'one wake for both gateways');

  // Each gateway reports what it holds: the controller sees the sum and scales for it.
  clock.advance(1000);
  controller.ingest(report(clock.ms, { held: 2, concurrency: 2, arrivals: 2 }, 'gw-1'));
  controller.ingest(report(clock.ms, { held: 3, concurrency: 3, arrivals: 3 }, 'gw-2'));
  await controller.tick();
  const status = await controller.status('iris');
  assert.equal(status.signals?.held, 5);
  assert.equal(status.signals?.concurrency, 5);
  assert.equal(status.replicas, 5, 'ceil(5 / target 1)');
});

test('a pool endpoint takes no policy: its pool workers are its capacity', async () => {
  const { store, controller } = await setup({ minReplicas: 1, maxReplicas: 3, target: 1 });
  await store.putEndpoint({
    name: 'pooled',
    team: 'default',
    model: 'iris',
    version: 1,
    ref: '1',
    replicas: 1,
    config: { pool: 'small' },
  });
  await assert.rejects(
    controller.setPolicy('pooled', { minReplicas: 1, maxReplicas: 3 }),
    (error: unknown) => {
      assert.ok(error instanceof KilnError);
      assert.equal(error.code, 'KILN_AUTOSCALE_INVALID');
      assert.match(error.message, /served by the workers of pool small, which has no autoscaling/);
      return true;
    },
  );
  assert.equal((await store.getEndpoint('pooled'))?.config.autoscale, undefined);
});
