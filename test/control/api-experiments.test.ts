// /api/v1/experiments end to end on a real platform (SQLite store, no workers: replicas 0):
// bad input answered with the right 4xx, the experiment's split written as the endpoint's
// policy, outcomes attributed by the same sticky hash as the gateway's, the report's
// statistics against two textbook examples worked by hand (textbook-examples.ts), and stop.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ExperimentReport } from '../../src/control/traffic/experiment-report.ts';
import type { ExperimentRecord } from '../../src/store/traffic-records.ts';
import { reportSketchAccuracy } from '../../src/protocol/traffic/traffic-report.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import { compileTrafficSplit } from '../../src/traffic/traffic-split.ts';
import {
  call,
  errorCode,
  readArtifact,
  register,
  registerFixture,
  registryFixtures,
  testPlatform,
} from '../helpers/platform.ts';
import { assertClose } from '../traffic/statistics-reference.ts';
import { aspirin, binaryOutcomes, sleep } from './traffic/textbook-examples.ts';

const variants = [
  { model: 'm', version: 1, weight: 50 },
  { model: 'm', version: 2, weight: 50 },
];

async function platformWithEndpoints(names: readonly string[], dev = true) {
  const platform = await testPlatform({ dev });
  const admin = platform.admin;
  await registerFixtureAs(platform.url, admin);
  await registerFixtureAs(platform.url, admin);
  for (const name of names) {
    const deployed = await call(
      platform.url,
      'PUT',
      `/api/v1/endpoints/${name}`,
      { model: 'm', version: 1, replicas: 0 },
      admin,
    );
    assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  }
  return platform;
}

async function registerFixtureAs(url: string, headers: Record<string, string>): Promise<void> {
  const registered = await register(
    url,
    'm',
    'onnx',
    await readArtifact(registryFixtures + 'mlp.onnx'),
    {},
    headers,
  );
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
}

function problemsOf(body: unknown): string[] {
  const details = (body as { error?: { details?: { problems?: { field: string }[] } } }).error
    ?.details;
  return (details?.problems ?? []).map((p) => p.field);
}

void test('bad experiments and outcomes get a 4xx naming the problem', async () => {
  const platform = await platformWithEndpoints(['heart', 'busy']);
  const { url } = platform;
  const create = (body: unknown) => call(url, 'POST', '/api/v1/experiments', body);

  const weights = await create({
    endpoint: 'heart',
    name: 'bad weights',
    variants: [
      { model: 'm', version: 1, weight: 50 },
      { model: 'm', version: 2, weight: 40 },
    ],
  });
  assert.equal(weights.status, 400);
  assert.equal(errorCode(weights), 'KILN_TRAFFIC_POLICY_INVALID');
  assert.match(JSON.stringify(weights.body), /weights must sum to 100, got 90/);

  const several = await create({
    endpoint: 'heart',
    name: 'several problems',
    variants: [{ model: '', version: 0, weight: 'x' }],
    keyPath: 'a..b',
  });
  assert.equal(several.status, 400);
  assert.deepEqual(problemsOf(several.body), [
    'versions[0].model',
    'versions[0].version',
    'versions[0].weight',
    'variants',
    'keyPath',
  ]);

  const unknownVersion = await create({
    endpoint: 'heart',
    name: 'unknown version',
    variants: [
      { model: 'm', version: 1, weight: 50 },
      { model: 'm', version: 9, weight: 50 },
    ],
  });
  assert.equal(unknownVersion.status, 404);
  assert.equal(errorCode(unknownVersion), 'KILN_VERSION_NOT_FOUND');
  assert.match(JSON.stringify(unknownVersion.body), /model m has no version 9/);

  // The variants become the endpoint's policy: checked as a policy's versions are (here a
  // format Kiln does not serve), not routed to and answered with errors.
  const external = await register(url, 'ext', 'external', [], {
    external: { url: 'http://127.0.0.1:9', protocol: 'v2' },
  });
  assert.equal(external.status, 201, JSON.stringify(external.body));
  const notServable = await create({
    endpoint: 'heart',
    name: 'not servable',
    variants: [
      { model: 'm', version: 1, weight: 50 },
      { model: 'ext', version: 1, weight: 50 },
    ],
  });
  assert.equal(notServable.status, 422, JSON.stringify(notServable.body));
  assert.equal(errorCode(notServable), 'KILN_FORMAT_NOT_SERVABLE');
  await registerFixture(url, 'llm', 'hf-llm', 'tiny-llm');
  const otherProtocol = await create({
    endpoint: 'heart',
    name: 'other protocol',
    variants: [
      { model: 'm', version: 1, weight: 50 },
      { model: 'llm', version: 1, weight: 50 },
    ],
  });
  assert.equal(otherProtocol.status, 400, JSON.stringify(otherProtocol.body));
  assert.equal(errorCode(otherProtocol), 'KILN_TRAFFIC_POLICY_INVALID');
  assert.match(JSON.stringify(otherProtocol.body), /llm:1 is hf-llm, endpoint heart serves onnx/);

  const unknownEndpoint = await create({ endpoint: 'nowhere', name: 'x', variants });
  assert.equal(unknownEndpoint.status, 404);
  assert.equal(errorCode(unknownEndpoint), 'KILN_ENDPOINT_NOT_FOUND');

  const missingName = await create({ endpoint: 'heart', variants });
  assert.equal(missingName.status, 400);
  assert.equal(errorCode(missingName), 'KILN_VALIDATION_FAILED');

  // An experiment while a rollout runs: refused before anything is written.
  await platform.traffic.change('busy', {
    rollout: {
      create: {
        id: 'ro-1',
        endpoint: 'busy',
        strategy: 'canary',
        baseline: { model: 'm', version: 1 },
        canary: { model: 'm', version: 2 },
        steps: [5, 100],
        stepIndex: -1,
        intervalMs: 60_000,
        thresholds: { maxErrorRate: 0.01, maxP99Ms: 50, minRequests: 100 },
        sliceKey: null,
        slicePath: null,
        state: 'starting',
        stepStartedAt: null,
        createdBy: 'test',
      },
    },
    event: { endpoint: 'busy', actor: 'test', action: 'rollout-start', reason: '', detail: null },
  });
  const duringRollout = await create({ endpoint: 'busy', name: 'too early', variants });
  assert.equal(duringRollout.status, 409);
  assert.equal(errorCode(duringRollout), 'KILN_ROLLOUT_IN_PROGRESS');
  assert.equal((await platform.registry.store.listExperiments({})).length, 0);

  const noSuch = await call(url, 'POST', '/api/v1/experiments/exp-nope/outcomes', {
    outcomes: [{ metric: 'converted', kind: 'rate', value: 1, user: 'u1' }],
  });
  assert.equal(noSuch.status, 404);
  assert.equal(errorCode(noSuch), 'KILN_EXPERIMENT_NOT_FOUND');
  for (const path of ['/api/v1/experiments/exp-nope', '/api/v1/experiments/exp-nope/report']) {
    assert.equal(errorCode(await call(url, 'GET', path)), 'KILN_EXPERIMENT_NOT_FOUND');
  }
  const stopNone = await call(url, 'POST', '/api/v1/experiments/exp-nope/stop', {});
  assert.equal(errorCode(stopNone), 'KILN_EXPERIMENT_NOT_FOUND');

  // Outcomes checked whole: every bad entry named, nothing merged.
  const started = await create({ endpoint: 'heart', name: 'ok', variants });
  assert.equal(started.status, 201);
  const id = (started.body as ExperimentRecord).id;
  const bad = await call(url, 'POST', `/api/v1/experiments/${id}/outcomes`, {
    outcomes: [
      { metric: 'converted', kind: 'rate', value: 1, user: 'u1' },
      { metric: 'converted', kind: 'rate', value: 2, user: 'u2' },
      { metric: 'converted', kind: 'rate', value: 1, variant: 'm:3' },
      { metric: 'converted', kind: 'ratio', value: 1, variant: 'm:1' },
      { metric: 'converted', kind: 'rate', value: 1 },
      { metric: 'bad name!', kind: 'mean', value: 1, variant: 'm:1' },
    ],
  });
  assert.equal(bad.status, 400);
  assert.equal(errorCode(bad), 'KILN_VALIDATION_FAILED');
  assert.deepEqual(problemsOf(bad.body), [
    'outcomes[1].value',
    'outcomes[2].variant',
    'outcomes[3].kind',
    'outcomes[4]',
    'outcomes[5].metric',
  ]);
  assert.deepEqual(await platform.registry.store.listOutcomes(id), []);
  const mixed = await call(url, 'POST', `/api/v1/experiments/${id}/outcomes`, {
    outcomes: [
      { metric: 'converted', kind: 'rate', value: 1, variant: 'm:1' },
      { metric: 'converted', kind: 'mean', value: 7.5, variant: 'm:2' },
    ],
  });
  assert.equal(mixed.status, 400);
  const badMde = await call(url, 'GET', `/api/v1/experiments/${id}/report?mde=converted=abc`);
  assert.equal(badMde.status, 400);
  assert.match(JSON.stringify(badMde.body), /mde: expected a non-zero number/);
});

void test('an experiment end to end: split, sticky outcomes, textbook report, stop', async () => {
  const platform = await platformWithEndpoints(['heart']);
  const { url } = platform;
  const store = platform.registry.store;

  const created = await call(url, 'POST', '/api/v1/experiments', {
    endpoint: 'heart',
    name: 'aspirin',
    variants,
    keyPath: '$.parameters.user',
    reason: 'does v2 help',
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const experiment = created.body as ExperimentRecord;
  assert.match(experiment.id, /^exp-[0-9a-f]{12}$/);
  assert.equal(experiment.state, 'running');
  assert.equal(experiment.salt, experiment.id);

  const traffic = await store.getEndpointTraffic('heart');
  assert.deepEqual(traffic?.policy, {
    versions: variants,
    shadows: [],
    salt: experiment.id,
    keyPath: '$.parameters.user',
    sliceKey: null,
    slicePath: null,
  });
  const again = await call(url, 'POST', '/api/v1/experiments', {
    endpoint: 'heart',
    name: 'second',
    variants,
  });
  assert.equal(again.status, 409);
  assert.equal(errorCode(again), 'KILN_EXPERIMENT_IN_PROGRESS');

  const listed = await call(url, 'GET', '/api/v1/experiments?endpoint=heart&state=running');
  assert.deepEqual(
    (listed.body as { items: ExperimentRecord[] }).items.map((e) => e.id),
    [experiment.id],
  );
  const shown = await call(url, 'GET', `/api/v1/experiments/${experiment.id}`);
  assert.deepEqual(shown.body, experiment);

  // By user: each lands on the variant the gateway's sticky split picks for that user.
  const split = compileTrafficSplit({ endpoint: 'heart', salt: experiment.id, versions: variants });
  assert.ok(split.ok);
  const users = Array.from({ length: 40 }, (_, i) => `user-${i}`);
  const expected: Record<string, number> = {};
  for (const user of users) {
    const v = split.split.pick(user);
    expected[`${v.model}:${v.version}`] = (expected[`${v.model}:${v.version}`] ?? 0) + 1;
  }
  const byUser = await call(url, 'POST', `/api/v1/experiments/${experiment.id}/outcomes`, {
    outcomes: users.map((user) => ({ metric: 'clicked', kind: 'rate', value: 1, user })),
  });
  assert.equal(byUser.status, 200, JSON.stringify(byUser.body));
  assert.deepEqual(byUser.body, { experiment: experiment.id, accepted: 40, variants: expected });
  assert.ok(Object.keys(expected).length === 2, 'both variants drew users');

  // The textbook data, by variant: placebo = control m:1, aspirin = m:2; Student's sleep data.
  const outcomes = [
    ...binaryOutcomes(aspirin.placebo.events, aspirin.placebo.total).map((value) => ({
      metric: 'infarction',
      kind: 'rate',
      value,
      variant: 'm:1',
    })),
    ...binaryOutcomes(aspirin.aspirin.events, aspirin.aspirin.total).map((value) => ({
      metric: 'infarction',
      kind: 'rate',
      value,
      variant: 'm:2',
    })),
    ...sleep.group1.map((value) => ({ metric: 'sleep', kind: 'mean', value, variant: 'm:1' })),
    ...sleep.group2.map((value) => ({ metric: 'sleep', kind: 'mean', value, variant: 'm:2' })),
  ];
  for (let at = 0; at < outcomes.length; at += 10_000) {
    const posted = await call(url, 'POST', `/api/v1/experiments/${experiment.id}/outcomes`, {
      outcomes: outcomes.slice(at, at + 10_000),
    });
    assert.equal(posted.status, 200, JSON.stringify(posted.body));
  }

  // What the gateways observed, as they report it.
  const sketch = (value: number, count: number) => {
    const s = new HistogramSketch(reportSketchAccuracy);
    s.add(value, count);
    return s.snapshot();
  };
  const now = new Date().toISOString();
  const report = await call(url, 'POST', '/api/v1/traffic/reports', {
    gateway: 'test',
    windowStart: now,
    windowEnd: now,
    endpoints: [
      {
        endpoint: 'heart',
        versions: [
          {
            model: 'm',
            version: 1,
            overall: {
              requests: 300,
              errors: 3,
              latencyMs: sketch(10, 300),
              outputs: sketch(1, 297),
            },
            slices: {},
          },
          {
            model: 'm',
            version: 2,
            overall: {
              requests: 100,
              errors: 0,
              latencyMs: sketch(40, 100),
              outputs: sketch(1, 100),
            },
            slices: {},
          },
        ],
        shadows: [],
      },
    ],
  });
  assert.ok(report.status < 300, JSON.stringify(report.body));

  const answered = await call(url, 'GET', `/api/v1/experiments/${experiment.id}/report`);
  assert.equal(answered.status, 200, JSON.stringify(answered.body));
  const result = answered.body as ExperimentReport;
  assert.equal(result.control, 'm:1');
  assert.deepEqual([result.alpha, result.power], [0.05, 0.8]);
  assert.deepEqual(
    result.variants.map((v) => [v.variant, v.requests, v.share, v.errors, v.errorRate]),
    [
      ['m:1', 300, 0.75, 3, 0.01],
      ['m:2', 100, 0.25, 0, 0],
    ],
  );
  assertClose(result.variants[1]?.latencyMs?.p99 ?? NaN, 40, 0.01, 'p99');
  const comparison = (metric: string) => {
    const c = result.metrics.find((m) => m.metric === metric)?.comparisons[0];
    assert.ok(c?.ok === true, JSON.stringify(c));
    return c;
  };
  const rate = comparison('infarction');
  assert.equal(rate.test, 'two-proportion-z');
  assertClose(rate.effect, aspirin.effect, 1e-6, 'effect');
  assertClose(rate.statistic, aspirin.z, 1e-5, 'z');
  assertClose(rate.standardizedEffect, aspirin.cohenH, 1e-5, 'h');
  assertClose(rate.pValue, aspirin.pValue, 2e-3, 'p');
  assertClose(rate.interval[0], aspirin.interval[0], 1e-5, 'low');
  assertClose(rate.interval[1], aspirin.interval[1], 1e-5, 'high');
  assert.ok(rate.sampleSize.ok);
  assert.deepEqual(
    [rate.sampleSize.perGroup, rate.sampleSize.remainingPerGroup],
    [aspirin.perGroup, aspirin.remainingPerGroup],
  );
  const mean = comparison('sleep');
  assert.equal(mean.test, 'welch-t');
  assertClose(mean.effect, sleep.effect, 1e-12, 'effect');
  assertClose(mean.statistic, sleep.t, 5e-5, 't');
  assertClose(mean.standardizedEffect, sleep.cohenD, 1e-5, 'd');
  assertClose(mean.degreesOfFreedom ?? NaN, sleep.degreesOfFreedom, 5e-5, 'df');
  assertClose(mean.pValue, sleep.pValue, 1e-4, 'p');
  assertClose(mean.interval[0], sleep.interval[0], 1e-6, 'low');
  assertClose(mean.interval[1], sleep.interval[1], 1e-6, 'high');
  assert.ok(mean.sampleSize.ok);
  assert.deepEqual(
    [mean.sampleSize.perGroup, mean.sampleSize.remainingPerGroup],
    [sleep.perGroup, sleep.remainingPerGroup],
  );
  // With a minimum detectable effect for sleep: (1.959964 + 0.841621)² × 7.2095556 / 0.5² → 227.
  const planned = await call(
    url,
    'GET',
    `/api/v1/experiments/${experiment.id}/report?mde=sleep=0.5`,
  );
  const plannedSleep = (planned.body as ExperimentReport).metrics.find((m) => m.metric === 'sleep')
    ?.comparisons[0];
  assert.ok(plannedSleep?.ok === true && plannedSleep.sampleSize.ok);
  assert.deepEqual([plannedSleep.sampleSize.basis, plannedSleep.sampleSize.perGroup], ['mde', 227]);

  // Stop: the split leaves the endpoint, outcomes are refused, the report still answers.
  const stopped = await call(url, 'POST', `/api/v1/experiments/${experiment.id}/stop`, {
    reason: 'enough data',
  });
  assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
  assert.equal((stopped.body as ExperimentRecord).state, 'stopped');
  assert.equal((await store.getEndpointTraffic('heart'))?.policy, null);
  const twice = await call(url, 'POST', `/api/v1/experiments/${experiment.id}/stop`, {});
  assert.equal(twice.status, 409);
  assert.equal(errorCode(twice), 'KILN_EXPERIMENT_STOPPED');
  const late = await call(url, 'POST', `/api/v1/experiments/${experiment.id}/outcomes`, {
    outcomes: [{ metric: 'sleep', kind: 'mean', value: 1, variant: 'm:1' }],
  });
  assert.equal(late.status, 409);
  assert.equal(errorCode(late), 'KILN_EXPERIMENT_STOPPED');
  const after = await call(url, 'GET', `/api/v1/experiments/${experiment.id}/report`);
  assert.equal(after.status, 200);
  assert.equal((after.body as ExperimentReport).metrics.length, 3);

  const history = await store.listTrafficEvents('heart', { limit: 10 });
  assert.deepEqual(
    history.items.slice(0, 2).map((e) => [e.action, e.reason, e.actor]),
    [
      ['experiment-stop', 'enough data', 'token "(dev)" (admin)'],
      ['experiment-start', 'does v2 help', 'token "(dev)" (admin)'],
    ],
  );
  // Two starts at once: one runs, the other is told why not (never two running).
  const racing = await Promise.all(
    ['left', 'right'].map((name) =>
      call(url, 'POST', '/api/v1/experiments', { endpoint: 'heart', name, variants }),
    ),
  );
  assert.deepEqual(racing.map((r) => r.status).sort(), [201, 409]);
  assert.equal(
    errorCode(racing.find((r) => r.status === 409) ?? racing[0]!),
    'KILN_EXPERIMENT_IN_PROGRESS',
  );
  const running = await store.listExperiments({ endpoint: 'heart', state: 'running' });
  assert.equal(running.length, 1);
  const winner = running[0]!;
  assert.equal((await store.getEndpointTraffic('heart'))?.policy?.salt, winner.salt);
  assert.equal((await call(url, 'POST', `/api/v1/experiments/${winner.id}/stop`, {})).status, 200);
  // A new experiment may start once the first is stopped, with a fresh salt.
  const next = await call(url, 'POST', '/api/v1/experiments', {
    endpoint: 'heart',
    name: 'second',
    variants,
  });
  assert.equal(next.status, 201);
  const nextExperiment = next.body as ExperimentRecord;
  assert.notEqual(nextExperiment.salt, experiment.salt);
  // A rollback of the endpoint ends it too: the policy goes, the experiment is stopped.
  const rollback = await call(url, 'POST', '/api/v1/endpoints/heart/rollback', { reason: 'bad' });
  assert.equal(rollback.status, 200, JSON.stringify(rollback.body));
  assert.equal((await store.getEndpointTraffic('heart'))?.policy, null);
  const afterRollback = await call(url, 'GET', `/api/v1/experiments/${nextExperiment.id}`);
  assert.equal((afterRollback.body as ExperimentRecord).state, 'stopped');
  const stopAgain = await call(url, 'POST', `/api/v1/experiments/${nextExperiment.id}/stop`);
  assert.equal(errorCode(stopAgain), 'KILN_EXPERIMENT_STOPPED');
});

void test('experiments are the endpoint team’s to run; reports are anyone’s to read', async () => {
  const platform = await platformWithEndpoints(['heart'], false);
  const { url, admin } = platform;
  const token = async (name: string, role: string, team?: string) => {
    const created = await call(
      url,
      'POST',
      '/api/v1/tokens',
      { name, role, ...(team === undefined ? {} : { team }) },
      admin,
    );
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return { authorization: `Bearer ${(created.body as { token: string }).token}` };
  };
  const own = await token('own', 'deployer', 'default');
  const other = await token('other', 'deployer', 'risk');
  const reader = await token('reader', 'reader');
  const body = { endpoint: 'heart', name: 'teams', variants };

  for (const headers of [other, reader]) {
    const refused = await call(url, 'POST', '/api/v1/experiments', body, headers);
    assert.equal(refused.status, 403, JSON.stringify(refused.body));
    assert.equal(errorCode(refused), 'KILN_PERMISSION_DENIED');
  }
  const created = await call(url, 'POST', '/api/v1/experiments', body, own);
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const experiment = created.body as ExperimentRecord;
  assert.equal(experiment.createdBy, 'token "own" (deployer, team default)');

  const outcome = { outcomes: [{ metric: 'clicked', kind: 'rate', value: 1, user: 'u1' }] };
  const outcomesPath = `/api/v1/experiments/${experiment.id}/outcomes`;
  assert.equal((await call(url, 'POST', outcomesPath, outcome, other)).status, 403);
  assert.equal((await call(url, 'POST', outcomesPath, outcome, own)).status, 200);
  const report = await call(
    url,
    'GET',
    `/api/v1/experiments/${experiment.id}/report`,
    undefined,
    reader,
  );
  assert.equal(report.status, 200, JSON.stringify(report.body));
  const stopPath = `/api/v1/experiments/${experiment.id}/stop`;
  assert.equal((await call(url, 'POST', stopPath, {}, other)).status, 403);
  const badStop = await call(url, 'POST', stopPath, { reason: 5 }, own);
  assert.equal(badStop.status, 400, JSON.stringify(badStop.body));
  // No body at all is a stop without a reason.
  assert.equal((await call(url, 'POST', stopPath, undefined, own)).status, 200);
  assert.equal((await call(url, 'POST', '/api/v1/experiments', body)).status, 401);
});
