// The rollout controller over the real SQLite store, with a fake clock: gateway reports go in
// through TrafficService.ingestReport (merged into 10 s observation rows) and the controller
// reads them back per step. Replicas and the golden runner are fakes; ticks are called
// directly, so nothing here waits on time.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { KilnError } from '../../src/core/errors.ts';
import { createRandom } from '../../src/core/random.ts';
import { ArtifactStore } from '../../src/registry/artifact-store.ts';
import { Registry } from '../../src/registry/registry.ts';
import type { Reconciler, ReplicaStatus } from '../../src/control/reconciler.ts';
import type { GoldenOutcome, GoldenRunner } from '../../src/control/traffic/golden-check.ts';
import {
  RolloutController,
  type ReplicaSource,
} from '../../src/control/traffic/rollout-controller.ts';
import { TrafficService } from '../../src/control/traffic/traffic-service.ts';
import {
  reportSketchAccuracy,
  type TrafficReport,
  type WindowCounts,
} from '../../src/protocol/traffic/traffic-report.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import type { GoldenSet, RolloutRecord, TrafficEvent } from '../../src/store/traffic-records.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';
import { placeholderVersion } from '../helpers/stored-version.ts';

const graceMs = 600_000;
const intervalMs = 60_000;

/** Replicas as the reconciler would report them; tests flip them ready. */
class FakeReplicas implements ReplicaSource {
  readonly ready = new Set<string>();
  replicaStatus(
    endpoint: string,
  ): Pick<ReplicaStatus, 'model' | 'version' | 'state' | 'url' | 'reason'>[] {
    void endpoint;
    // Two replicas per version: the endpoint's count.
    return [1, 1, 2, 2, 3, 3].map((version) => ({
      model: 'fraud',
      version,
      state: this.ready.has(`fraud:${version}`) ? 'ready' : 'starting',
      url: this.ready.has(`fraud:${version}`) ? `http://replica-v${version}` : null,
      reason: null,
    }));
  }
}

interface Harness {
  readonly store: SqliteStore;
  readonly path: string;
  readonly clock: FakeClock;
  readonly traffic: TrafficService;
  readonly replicas: FakeReplicas;
  readonly golden: { outcome: GoldenOutcome; calls: string[] };
  controller: RolloutController;
}

async function harness(options: { readyTimeoutMs?: number } = {}): Promise<Harness> {
  const dir = await tempDir();
  const clock = new FakeClock();
  const path = join(dir, 'kiln.db');
  const store = SqliteStore.open(path, { clock });
  const registry = new Registry(store, new ArtifactStore(join(dir, 'artifacts'), clock));
  const reconciler = { trigger: () => Promise.resolve() } as unknown as Reconciler;
  const traffic = new TrafficService(registry, reconciler, clock, { warmGraceMs: graceMs });
  await store.createModel({ name: 'fraud', team: 'default', description: '' });
  for (let i = 0; i < 3; i++) await store.createVersion('fraud', placeholderVersion());
  await store.putEndpoint({
    name: 'fraud',
    team: 'default',
    model: 'fraud',
    version: 1,
    ref: '1',
    replicas: 2,
    config: {},
  });
  const replicas = new FakeReplicas();
  replicas.ready.add('fraud:1');
  const golden = { outcome: { ok: true, cases: 1 } as GoldenOutcome, calls: [] as string[] };
  const h: Harness = {
    store,
    path,
    clock,
    traffic,
    replicas,
    golden,
    controller: controllerFor(store, traffic, replicas, golden, clock, options.readyTimeoutMs),
  };
  return h;
}

function controllerFor(
  store: SqliteStore,
  traffic: TrafficService,
  replicas: ReplicaSource,
  golden: { outcome: GoldenOutcome; calls: string[] },
  clock: FakeClock,
  readyTimeoutMs?: number,
): RolloutController {
  const runner: GoldenRunner = (url, endpoint, set) => {
    golden.calls.push(`${url} ${endpoint} ${set.model}:${set.version}`);
    return Promise.resolve(golden.outcome);
  };
  return new RolloutController({
    store,
    traffic,
    observations: traffic,
    replicas,
    golden: runner,
    clock,
    warmGraceMs: graceMs,
    ...(readyTimeoutMs === undefined ? {} : { readyTimeoutMs }),
  });
}

function sketchOf(values: readonly number[]): HistogramSketch {
  const sketch = new HistogramSketch(reportSketchAccuracy);
  for (const value of values) sketch.add(value);
  return sketch;
}

interface Answers {
  readonly latencies: number[];
  readonly outputs: number[];
  readonly requests: number;
  readonly errors: number;
}

/**
 * `requests` answers: latencies around 10 ms, outputs uniform in [shift, shift + 1), `errors`
 * of them 5xx (no output).
 */
function answers(seed: number, requests: number, errors: number, shift = 0): Answers {
  const random = createRandom(seed);
  const latencies = Array.from({ length: requests }, () => 5 + 10 * random.next());
  const outputs = Array.from({ length: requests - errors }, () => shift + random.next());
  return { latencies, outputs, requests, errors };
}

function windowOf(parts: readonly Answers[]): WindowCounts {
  return {
    requests: parts.reduce((sum, part) => sum + part.requests, 0),
    errors: parts.reduce((sum, part) => sum + part.errors, 0),
    latencyMs: sketchOf(parts.flatMap((part) => part.latencies)).snapshot(),
    outputs: sketchOf(parts.flatMap((part) => part.outputs)).snapshot(),
  };
}

interface VersionTraffic {
  readonly version: number;
  /** Per slice value: [requests, errors, output shift (default 0)]. */
  readonly slices: Readonly<Record<string, readonly [number, number, number?]>>;
}

let seed = 1;

/** One gateway report, as the gateway would POST it, through the real ingestion. */
async function report(h: Harness, versions: readonly VersionTraffic[]): Promise<void> {
  const now = new Date(h.clock.now()).toISOString();
  const body: TrafficReport = {
    gateway: 'gw-test',
    windowStart: now,
    windowEnd: now,
    endpoints: [
      {
        endpoint: 'fraud',
        versions: versions.map(({ version, slices }) => {
          // The overall window is the slices' answers together, as a gateway counts them.
          const parts = Object.entries(slices).map(
            ([value, [requests, errors, shift]]) =>
              [value, answers(seed++, requests, errors, shift)] as const,
          );
          return {
            model: 'fraud',
            version,
            overall: windowOf(parts.map(([, part]) => part)),
            slices: Object.fromEntries(parts.map(([value, part]) => [value, windowOf([part])])),
          };
        }),
        shadows: [],
      },
    ],
  };
  await h.traffic.ingestReport(body);
}

/** Healthy traffic on both versions at the step's split (10 000 requests). */
async function healthy(h: Harness, canaryPercent: number): Promise<void> {
  const canary = Math.max(3000, canaryPercent * 100);
  await report(h, [
    { version: 1, slices: { de: [1000, 1], us: [9000, 9] } },
    { version: 2, slices: { de: [canary / 10, 0], us: [(canary * 9) / 10, 1] } },
  ]);
}

async function active(h: Harness): Promise<RolloutRecord> {
  const rollout = await h.store.getActiveRollout('fraud');
  assert.ok(rollout !== null, 'an active rollout');
  return rollout;
}

async function events(h: Harness): Promise<TrafficEvent[]> {
  const page = await h.store.listTrafficEvents('fraud', { limit: 100 });
  return [...page.items].reverse();
}

function kilnCode(code: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof KilnError, `expected KilnError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  };
}

/** Past the step's interval and into a fresh 10 s bucket. */
function nextStepTime(h: Harness): void {
  h.clock.advance(intervalMs + 10_000);
}

test('canary: starts staged, waits for its replicas, then steps 1→5→25→50 and completes; the baseline stays warm', async () => {
  const h = await harness();
  const started = await h.controller.startRollout(
    'fraud',
    {
      model: 'fraud',
      version: 2,
      steps: [1, 5, 25, 50, 100],
      intervalMs,
      thresholds: { maxErrorRate: 0.01, maxP99Ms: 50, minRequests: 200 },
      sliceKey: 'country',
      slicePath: '$.parameters.country',
    },
    'token "ci" (admin)',
  );
  assert.equal(started.state, 'starting');
  assert.equal(started.stepIndex, -1);
  let traffic = await h.store.getEndpointTraffic('fraud');
  assert.deepEqual(traffic?.staged, [{ model: 'fraud', version: 2 }]);
  assert.equal(traffic?.policy ?? null, null);

  await h.controller.tick();
  assert.equal((await active(h)).state, 'starting');
  h.replicas.ready.add('fraud:2');
  await h.controller.tick();
  let rollout = await active(h);
  assert.equal(rollout.state, 'running');
  assert.equal(rollout.stepIndex, 0);
  traffic = await h.store.getEndpointTraffic('fraud');
  assert.deepEqual(traffic?.staged, []);
  assert.deepEqual(traffic?.policy, {
    versions: [
      { model: 'fraud', version: 1, weight: 99 },
      { model: 'fraud', version: 2, weight: 1 },
    ],
    shadows: [],
    salt: started.id,
    keyPath: null,
    sliceKey: 'country',
    slicePath: '$.parameters.country',
  });

  for (const [index, percent] of [1, 5, 25, 50].entries()) {
    rollout = await active(h);
    assert.equal(rollout.stepIndex, index, `at step ${index + 1}`);
    // Healthy traffic, but before the interval: no promotion.
    h.clock.advance(10_000);
    await healthy(h, percent);
    await h.controller.tick();
    assert.equal((await active(h)).stepIndex, index, 'no promotion before the interval');
    const view = await h.controller.status('fraud');
    assert.equal(
      view?.analysis?.decision,
      'promote-step',
      JSON.stringify(view?.analysis?.reasons.map((r) => r.message)),
    );
    assert.equal(view?.percent, percent);
    // The window the analysis reads: the step's first whole 10 s bucket on.
    const stepStartedMs = Date.parse(rollout.stepStartedAt ?? '');
    assert.equal(
      view?.analysisSince,
      new Date(Math.ceil(stepStartedMs / 10_000) * 10_000).toISOString(),
    );
    nextStepTime(h);
    await healthy(h, percent);
    await h.controller.tick();
  }
  assert.equal(await h.store.getActiveRollout('fraud'), null);
  const done = await h.store.getRollout(started.id);
  assert.equal(done?.state, 'succeeded');
  assert.notEqual(done?.finishedAt, null);
  const endpoint = await h.store.getEndpoint('fraud');
  assert.equal(endpoint?.version, 2);
  traffic = await h.store.getEndpointTraffic('fraud');
  assert.equal(traffic?.policy, null);
  assert.deepEqual(traffic?.previous, { model: 'fraud', version: 1 });
  assert.deepEqual(traffic?.warm, [
    { model: 'fraud', version: 1, until: new Date(h.clock.now() + graceMs).toISOString() },
  ]);
  assert.deepEqual(
    (await events(h)).map((e) => [e.action, e.actor]),
    [
      ['rollout-start', 'token "ci" (admin)'],
      ['rollout-step', 'rollout-controller'],
      ['rollout-step', 'rollout-controller'],
      ['rollout-step', 'rollout-controller'],
      ['rollout-step', 'rollout-controller'],
      ['rollout-complete', 'rollout-controller'],
    ],
  );
});

test('canary worse on one slice only: rolled back at once with the slice named, traffic back on the baseline', async () => {
  const h = await harness();
  h.replicas.ready.add('fraud:2');
  const started = await h.controller.startRollout(
    'fraud',
    {
      model: 'fraud',
      version: 2,
      steps: [10, 50, 100],
      intervalMs,
      thresholds: { maxErrorRate: 0.02, maxP99Ms: 50, minRequests: 200, minSliceRequests: 100 },
      sliceKey: 'country',
    },
    'token "ci" (admin)',
  );
  await h.controller.tick();
  assert.equal((await active(h)).stepIndex, 0);
  h.clock.advance(10_000);
  // Overall the canary fails 1.2 % (within 2 %); on de it fails 12 %.
  await report(h, [
    { version: 1, slices: { de: [1000, 1], us: [9000, 9] } },
    { version: 2, slices: { de: [100, 12], us: [900, 0] } },
  ]);
  await h.controller.tick(); // long before the interval: a breach does not wait for it
  const rolled = await h.store.getRollout(started.id);
  assert.equal(rolled?.state, 'rolled-back');
  assert.match(rolled?.reason ?? '', /slice country=de: canary error rate 0\.1200 \(12\/100\)/);
  assert.doesNotMatch(rolled?.reason ?? '', /overall: canary error rate/);
  const verdict = rolled?.lastAnalysis as { decision: string; reasons: { scope: string }[] };
  assert.equal(verdict.decision, 'rollback');
  assert.deepEqual(
    verdict.reasons.map((r) => r.scope),
    ['slice country=de'],
  );
  const traffic = await h.store.getEndpointTraffic('fraud');
  assert.equal(traffic?.policy, null);
  assert.deepEqual(traffic?.staged, []);
  assert.deepEqual(traffic?.warm, [], 'a rolled-back canary is dropped, not kept warm');
  assert.equal((await h.store.getEndpoint('fraud'))?.version, 1);
  const last = (await events(h)).at(-1);
  assert.equal(last?.action, 'rollout-rollback');
  assert.equal(last?.actor, 'rollout-controller');
  assert.match(last?.reason ?? '', /slice country=de/);
});

test("canary whose outputs shift on one slice only: rolled back on that slice's PSI while the overall PSI passes", async () => {
  const h = await harness();
  h.replicas.ready.add('fraud:2');
  const started = await h.controller.startRollout(
    'fraud',
    {
      model: 'fraud',
      version: 2,
      steps: [10, 50, 100],
      intervalMs,
      thresholds: { maxErrorRate: 0.02, maxP99Ms: 50, minRequests: 200, minSliceRequests: 100 },
      sliceKey: 'country',
    },
    'ci',
  );
  await h.controller.tick();
  h.clock.advance(10_000);
  // No errors anywhere; the canary's de outputs sit half a unit higher.
  await report(h, [
    { version: 1, slices: { de: [1000, 0], us: [9000, 0] } },
    { version: 2, slices: { de: [300, 0, 0.5], us: [2700, 0] } },
  ]);
  await h.controller.tick();
  const rolled = await h.store.getRollout(started.id);
  assert.equal(rolled?.state, 'rolled-back');
  const verdict = rolled?.lastAnalysis as {
    reasons: { check: string; scope: string }[];
    checks: { check: string; scope: string; outcome: string; psi?: number }[];
  };
  assert.deepEqual(
    verdict.reasons.map((r) => [r.check, r.scope]),
    [['output-psi', 'slice country=de']],
  );
  const overallPsi = verdict.checks.find((c) => c.check === 'output-psi' && c.scope === 'overall');
  assert.equal(overallPsi?.outcome, 'pass', 'the whole-traffic figures stay within bounds');
  assert.match(
    rolled?.reason ?? '',
    /slice country=de: PSI of canary outputs vs baseline [\d.]+ above maxPsi 0\.2/,
  );
});

test('pause holds the step past its interval, resume carries on, promote skips ahead, abort drops the canary', async () => {
  const h = await harness();
  h.replicas.ready.add('fraud:2');
  await h.controller.startRollout(
    'fraud',
    {
      model: 'fraud',
      version: 2,
      steps: [5, 25, 100],
      intervalMs,
      thresholds: { minRequests: 200 },
    },
    'token "ci" (admin)',
  );
  await h.controller.tick();
  const paused = await h.controller.pause('fraud', 'token "ops" (admin)', 'looking at dashboards');
  assert.equal(paused.state, 'paused');
  assert.equal(paused.pausedAt, new Date(h.clock.now()).toISOString());
  nextStepTime(h);
  await healthy(h, 5);
  await h.controller.tick();
  assert.equal((await active(h)).stepIndex, 0, 'a paused rollout is not promoted');

  const stepStartedMs = Date.parse((await active(h)).stepStartedAt ?? '');
  const pausedForMs = intervalMs + 10_000;
  const resumed = await h.controller.resume('fraud', 'token "ops" (admin)');
  assert.equal(resumed.state, 'running');
  assert.equal(resumed.pausedAt, null);
  // The step's clock stood still while paused.
  assert.equal(Date.parse(resumed.stepStartedAt ?? ''), stepStartedMs + pausedForMs);

  const promoted = await h.controller.promote('fraud', 'token "ops" (admin)');
  assert.equal(promoted.stepIndex, 1);
  assert.equal(promoted.state, 'running');
  const weights = (await h.store.getEndpointTraffic('fraud'))?.policy?.versions.map(
    (v) => v.weight,
  );
  assert.deepEqual(weights, [75, 25]);

  const aborted = await h.controller.abort('fraud', 'token "ops" (admin)', 'wrong build');
  assert.equal(aborted.state, 'aborted');
  assert.equal(aborted.reason, 'wrong build');
  const traffic = await h.store.getEndpointTraffic('fraud');
  assert.equal(traffic?.policy, null);
  assert.equal((await h.store.getEndpoint('fraud'))?.version, 1);
  assert.deepEqual(
    (await events(h)).map((e) => e.action),
    [
      'rollout-start',
      'rollout-step',
      'rollout-pause',
      'rollout-resume',
      'rollout-step',
      'rollout-abort',
    ],
  );
  await assert.rejects(h.controller.promote('fraud', 'x'), kilnCode('KILN_NO_ACTIVE_ROLLOUT'));
  await assert.rejects(h.controller.abort('fraud', 'x'), kilnCode('KILN_NO_ACTIVE_ROLLOUT'));
  await assert.rejects(h.controller.pause('nope', 'x'), kilnCode('KILN_ENDPOINT_NOT_FOUND'));
});

test('bad starts: one per endpoint, known versions, steps and thresholds checked field by field', async () => {
  const h = await harness();
  const actor = 'token "ci" (admin)';
  await assert.rejects(
    h.controller.startRollout('fraud', { model: 'fraud', version: 9 }, actor),
    kilnCode('KILN_VERSION_NOT_FOUND'),
  );
  await assert.rejects(
    h.controller.startRollout('nope', { model: 'fraud', version: 2 }, actor),
    kilnCode('KILN_ENDPOINT_NOT_FOUND'),
  );
  await assert.rejects(
    h.controller.startRollout('fraud', { model: 'fraud', version: 1 }, actor),
    kilnCode('KILN_VALIDATION_FAILED'),
  );
  await assert.rejects(
    h.controller.startRollout(
      'fraud',
      {
        model: 'fraud',
        version: 2,
        steps: [5, 5, 120, 50],
        intervalMs: 10,
        thresholds: { maxErrorRate: 2, maxP99Ms: -1 },
        slicePath: '$..bad',
      },
      actor,
    ),
    (error: unknown) => {
      assert.ok(error instanceof KilnError);
      assert.equal(error.code, 'KILN_VALIDATION_FAILED');
      const fields = (error.details as { problems: { field: string }[] }).problems.map(
        (p) => p.field,
      );
      assert.deepEqual(fields, [
        'steps[1]',
        'steps[2]',
        'steps[3]',
        'steps',
        'intervalMs',
        'thresholds.maxErrorRate',
        'thresholds.maxP99Ms',
        'slicePath',
        'sliceKey',
      ]);
      return true;
    },
  );
  const first = await h.controller.startRollout('fraud', { model: 'fraud', version: 2 }, actor);
  await assert.rejects(
    h.controller.startRollout('fraud', { model: 'fraud', version: 3 }, actor),
    (error: unknown) => {
      assert.ok(error instanceof KilnError);
      assert.equal(error.code, 'KILN_ROLLOUT_IN_PROGRESS');
      assert.match(error.message, new RegExp(first.id));
      return true;
    },
  );
  // Still starting: nothing to promote yet.
  await assert.rejects(h.controller.promote('fraud', actor), kilnCode('KILN_ROLLOUT_IN_PROGRESS'));
});

test('a canary whose replicas never get ready is rolled back after the ready timeout', async () => {
  const h = await harness({ readyTimeoutMs: 120_000 });
  const started = await h.controller.startRollout('fraud', { model: 'fraud', version: 2 }, 'ci');
  h.clock.advance(119_000);
  await h.controller.tick();
  assert.equal((await active(h)).state, 'starting');
  h.clock.advance(1000);
  await h.controller.tick();
  const ended = await h.store.getRollout(started.id);
  assert.equal(ended?.state, 'rolled-back');
  assert.match(ended?.reason ?? '', /fraud:2: 0\/2 replicas ready after 120 s/);
  assert.deepEqual((await h.store.getEndpointTraffic('fraud'))?.staged, []);
});

const goldenSet: Omit<GoldenSet, 'createdAt'> = {
  model: 'fraud',
  version: 2,
  tolerance: { absolute: 1e-6, relative: 1e-4 },
  cases: [{ request: { inputs: [] }, outputs: [{ name: 'y', data: [1] }] }],
};

test('blue-green: candidate staged, all replicas ready, golden set reproduced, then 100 % at once; the old version warm', async () => {
  const h = await harness();
  await h.store.setGoldenSet(goldenSet);
  const started = await h.controller.startRollout(
    'fraud',
    { model: 'fraud', version: 2, strategy: 'blue-green' },
    'token "ci" (admin)',
  );
  assert.deepEqual(started.steps, [100]);
  assert.deepEqual((await h.store.getEndpointTraffic('fraud'))?.staged, [
    { model: 'fraud', version: 2 },
  ]);
  await h.controller.tick();
  assert.deepEqual(h.golden.calls, [], 'no golden check before the replicas are ready');
  h.replicas.ready.add('fraud:2');
  await h.controller.tick();
  assert.deepEqual(h.golden.calls, ['http://replica-v2 fraud fraud:2']);
  const done = await h.store.getRollout(started.id);
  assert.equal(done?.state, 'succeeded');
  assert.match(done?.reason ?? '', /golden set reproduced \(1 cases\)/);
  assert.equal((await h.store.getEndpoint('fraud'))?.version, 2);
  const traffic = await h.store.getEndpointTraffic('fraud');
  assert.equal(traffic?.policy, null, 'the whole switch is the stable version moving');
  assert.deepEqual(traffic?.staged, []);
  assert.deepEqual(traffic?.previous, { model: 'fraud', version: 1 });
  assert.deepEqual(
    traffic?.warm.map((w) => w.version),
    [1],
  );
  assert.deepEqual(
    (await events(h)).map((e) => [e.action, e.actor]),
    [
      ['blue-green-stage', 'token "ci" (admin)'],
      ['blue-green-switch', 'blue-green'],
    ],
  );
});

test('blue-green: a golden failure rolls back with the reason and never moves traffic', async () => {
  const h = await harness();
  await h.store.setGoldenSet(goldenSet);
  h.golden.outcome = { ok: false, caseIndex: 0, reason: 'case 0: output y[0]: got 2, want 1' };
  h.replicas.ready.add('fraud:2');
  const started = await h.controller.startRollout(
    'fraud',
    { model: 'fraud', version: 2, strategy: 'blue-green' },
    'ci',
  );
  await h.controller.tick();
  const ended = await h.store.getRollout(started.id);
  assert.equal(ended?.state, 'rolled-back');
  assert.equal(
    ended?.reason,
    'golden set of fraud:2 not reproduced: case 0: output y[0]: got 2, want 1',
  );
  assert.equal((await h.store.getEndpoint('fraud'))?.version, 1);
  const traffic = await h.store.getEndpointTraffic('fraud');
  assert.deepEqual(traffic?.staged, []);
  assert.equal(traffic?.policy, null);
  assert.equal(traffic?.previous, null);
  const last = (await events(h)).at(-1);
  assert.equal(last?.action, 'blue-green-fail');
  assert.equal(last?.actor, 'blue-green');
});

test('a new controller on the same store carries on the rollout the last one left (control-plane restart)', async () => {
  const h = await harness();
  h.replicas.ready.add('fraud:2');
  const started = await h.controller.startRollout(
    'fraud',
    {
      model: 'fraud',
      version: 2,
      steps: [10, 50, 100],
      intervalMs,
      thresholds: { minRequests: 200 },
    },
    'ci',
  );
  await h.controller.tick();
  assert.equal((await active(h)).stepIndex, 0);
  await h.controller.close();
  await h.store.close();

  // What a restarted platform does: open the home's store again, start a fresh controller.
  const store = SqliteStore.open(h.path, { clock: h.clock });
  const registry = new Registry(store, new ArtifactStore(join(h.path, '..', 'artifacts'), h.clock));
  const reconciler = { trigger: () => Promise.resolve() } as unknown as Reconciler;
  const traffic = new TrafficService(registry, reconciler, h.clock, { warmGraceMs: graceMs });
  const restarted: Harness = { ...h, store, traffic, controller: h.controller };
  restarted.controller = controllerFor(store, traffic, h.replicas, h.golden, h.clock);
  nextStepTime(restarted);
  await healthy(restarted, 10);
  await restarted.controller.tick();
  const rollout = await store.getRollout(started.id);
  assert.equal(rollout?.state, 'running');
  assert.equal(rollout?.stepIndex, 1);
  await restarted.controller.close();
  await store.close();
});
