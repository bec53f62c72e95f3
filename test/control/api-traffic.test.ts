// An endpoint's traffic over the API, against the real SQLite store: policies checked in full
// (every problem named, unknown versions 404), the salt kept across weight changes, deploy
// replace moving the stable version to `previous` and keeping it warm, rollback's rules in
// order (rollout → policy → previous → nothing), shadows and their report from gateway
// reports, and the history of all of it with who and why.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  call,
  errorCode,
  readArtifact,
  register,
  registerFixture,
  registryFixtures,
  testPlatform,
  type TestPlatform,
} from '../helpers/platform.ts';
import type { TrafficView } from '../../src/control/traffic/traffic-view.ts';
import type { ShadowReport } from '../../src/control/traffic/traffic-view.ts';
import {
  reportSketchAccuracy,
  type TrafficReport,
} from '../../src/protocol/traffic/traffic-report.ts';
import type { TrafficEvent } from '../../src/store/traffic-records.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import { RunningMoments } from '../../src/traffic/running-moments.ts';

const dev = 'token "(dev)" (admin)';

/** A platform with model `m` v1..v3 (the same ONNX file) and endpoint `e` on m:1, no replicas. */
async function platformWithEndpoint(): Promise<TestPlatform> {
  const platform = await testPlatform();
  for (let i = 0; i < 3; i++) await registerFixture(platform.url, 'm', 'onnx', 'mlp.onnx');
  await deploy(platform, 1, 201);
  return platform;
}

async function deploy(platform: TestPlatform, version: number, status = 200): Promise<void> {
  const reply = await call(platform.url, 'PUT', '/api/v1/endpoints/e', {
    model: 'm',
    version,
    replicas: 0,
  });
  assert.equal(reply.status, status, JSON.stringify(reply.body));
}

async function view(platform: TestPlatform): Promise<TrafficView> {
  const reply = await call(platform.url, 'GET', '/api/v1/endpoints/e/traffic');
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body as TrafficView;
}

async function history(platform: TestPlatform): Promise<TrafficEvent[]> {
  const reply = await call(platform.url, 'GET', '/api/v1/endpoints/e/history?limit=100');
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return (reply.body as { items: TrafficEvent[] }).items;
}

function sketchOf(values: readonly number[]): ReturnType<HistogramSketch['snapshot']> {
  const sketch = new HistogramSketch(reportSketchAccuracy);
  for (const value of values) sketch.add(value);
  return sketch.snapshot();
}

test('a policy is checked in full: every problem named, unknown versions 404, typos 400', async () => {
  const platform = await platformWithEndpoint();
  const put = (body: unknown) => call(platform.url, 'PUT', '/api/v1/endpoints/e/traffic', body);

  const bad = await put({
    versions: [
      { model: 'm', version: 1, weight: 90 },
      { model: 'm', version: 2, weight: 20 },
    ],
    shadows: [{ model: 'm', version: 2, sampleRate: 2 }],
    keyPath: '$.a..b',
    slicePath: '$.parameters.country',
  });
  assert.equal(bad.status, 400);
  assert.equal(errorCode(bad), 'KILN_TRAFFIC_POLICY_INVALID');
  const problems = (bad.body as { error: { details: { problems: { field: string }[] } } }).error
    .details.problems;
  assert.deepEqual(problems.map((p) => p.field).sort(), [
    'keyPath',
    'shadows[0]',
    'shadows[0].sampleRate',
    'slicePath',
    'versions',
  ]);
  assert.match((bad.body as { error: { message: string } }).error.message, /sum to 100, got 110/);

  const unknownVersion = await put({ versions: [{ model: 'm', version: 9, weight: 100 }] });
  assert.equal(unknownVersion.status, 404);
  assert.equal(errorCode(unknownVersion), 'KILN_VERSION_NOT_FOUND');
  const unknownModel = await put({ versions: [{ model: 'nope', version: 1, weight: 100 }] });
  assert.equal(unknownModel.status, 404);
  assert.equal(errorCode(unknownModel), 'KILN_MODEL_NOT_FOUND');
  const typo = await put({ versions: [{ model: 'm', version: 1, weight: 100 }], wieghts: [] });
  assert.equal(typo.status, 400);
  assert.equal(errorCode(typo), 'KILN_VALIDATION_FAILED');
  const noEndpoint = await call(platform.url, 'PUT', '/api/v1/endpoints/none/traffic', {
    versions: [{ model: 'm', version: 1, weight: 100 }],
  });
  assert.equal(noEndpoint.status, 404);
  assert.equal(errorCode(noEndpoint), 'KILN_ENDPOINT_NOT_FOUND');

  // Nothing refused changed anything.
  const shown = await view(platform);
  assert.equal(shown.policy, null);
  assert.equal(shown.revision, 0);
  assert.deepEqual(shown.split, [{ model: 'm', version: 1, weight: 100 }]);
});

test('a policy goes in force; a weight change keeps the salt (users keep their buckets)', async () => {
  const platform = await platformWithEndpoint();
  const first = await call(platform.url, 'PUT', '/api/v1/endpoints/e/traffic', {
    versions: [
      { model: 'm', version: 1, weight: 95 },
      { model: 'm', version: 2, weight: 5 },
    ],
    keyPath: '$.parameters.user',
    sliceKey: 'country',
    slicePath: '$.parameters.country',
    reason: 'try v2 on 5%',
  });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const set = first.body as TrafficView;
  assert.deepEqual(set.split, [
    { model: 'm', version: 1, weight: 95 },
    { model: 'm', version: 2, weight: 5 },
  ]);
  assert.equal(set.policy?.keyPath, '$.parameters.user');
  assert.equal(set.policy?.sliceKey, 'country');
  assert.equal(set.revision, 1);
  const salt = set.policy?.salt ?? '';
  assert.match(salt, /^manual-[0-9a-f]{12}$/);

  const second = await call(platform.url, 'PUT', '/api/v1/endpoints/e/traffic', {
    versions: [
      { model: 'm', version: 1, weight: 75 },
      { model: 'm', version: 2, weight: 25 },
    ],
  });
  assert.equal(second.status, 200);
  assert.equal((second.body as TrafficView).policy?.salt, salt);

  // A stale revision is the caller's 409 to see; the current one goes through.
  const stale = await call(platform.url, 'PUT', '/api/v1/endpoints/e/traffic', {
    versions: [{ model: 'm', version: 1, weight: 100 }],
    expectRevision: 1,
  });
  assert.equal(stale.status, 409);
  assert.equal(errorCode(stale), 'KILN_TRAFFIC_CONFLICT');

  const events = await history(platform);
  assert.deepEqual(
    events.map((e) => [e.action, e.actor, e.reason]),
    [
      ['policy', dev, 'no reason given'],
      ['policy', dev, 'try v2 on 5%'],
      ['deploy', dev, 'deployed m:1 (1)'],
    ],
  );
  const cleared = await call(platform.url, 'DELETE', '/api/v1/endpoints/e/traffic?reason=done');
  assert.equal(cleared.status, 200);
  assert.equal((cleared.body as TrafficView).policy, null);
  assert.equal((await history(platform))[0]?.reason, 'done');
});

test('deploy replace: the old version becomes previous and stays warm; rollback toggles', async () => {
  const platform = await platformWithEndpoint();
  const before = Date.now();
  await deploy(platform, 2);
  const after = Date.now();
  let shown = await view(platform);
  assert.deepEqual(shown.stable, { model: 'm', version: 2, ref: '2' });
  assert.deepEqual(shown.previous, { model: 'm', version: 1 });
  assert.deepEqual(
    shown.warm.map((w) => [w.model, w.version]),
    [['m', 1]],
  );
  const until = Date.parse(shown.warm[0]?.until ?? '');
  // The default grace, 10 minutes, from the moment of the deploy.
  assert.equal(shown.warmGraceMs, 600_000);
  assert.ok(until >= before + 600_000 && until <= after + 600_000, shown.warm[0]?.until);

  const back = await call(platform.url, 'POST', '/api/v1/endpoints/e/rollback', {
    reason: 'v2 misbehaves',
  });
  assert.equal(back.status, 200, JSON.stringify(back.body));
  const result = back.body as { kind: string; summary: string; traffic: TrafficView };
  assert.equal(result.kind, 'stable');
  assert.deepEqual(result.traffic.stable, { model: 'm', version: 1, ref: '1' });
  assert.deepEqual(result.traffic.previous, { model: 'm', version: 2 });
  assert.deepEqual(
    result.traffic.warm.map((w) => [w.model, w.version]),
    [['m', 2]],
  );
  const endpoint = await call(platform.url, 'GET', '/api/v1/endpoints/e');
  assert.equal((endpoint.body as { version: number }).version, 1);

  // Again: back to v2 (rollback of a rollback), v1 warm in its turn.
  const again = await call(platform.url, 'POST', '/api/v1/endpoints/e/rollback');
  assert.equal(again.status, 200, JSON.stringify(again.body));
  shown = (again.body as { traffic: TrafficView }).traffic;
  assert.deepEqual(shown.stable, { model: 'm', version: 2, ref: '2' });
  assert.deepEqual(
    shown.warm.map((w) => [w.model, w.version]),
    [['m', 1]],
  );

  // A deploy of the same version (new settings) is no traffic change.
  await deploy(platform, 2);
  // A deploy may ask for no grace: the replaced version is previous, but not kept running.
  const noGrace = await call(platform.url, 'PUT', '/api/v1/endpoints/e', {
    model: 'm',
    version: 3,
    replicas: 0,
    warmGraceMs: 0,
  });
  assert.equal(noGrace.status, 200, JSON.stringify(noGrace.body));
  shown = await view(platform);
  assert.deepEqual(shown.previous, { model: 'm', version: 2 });
  assert.deepEqual(
    shown.warm.map((w) => [w.model, w.version]),
    [['m', 1]],
  );
  await call(platform.url, 'POST', '/api/v1/endpoints/e/rollback');
  const events = await history(platform);
  assert.deepEqual(
    events.map((e) => [e.action, e.reason]),
    [
      ['rollback', 'no reason given'],
      ['deploy', 'deployed m:3 (3)'],
      ['rollback', 'no reason given'],
      ['rollback', 'v2 misbehaves'],
      ['deploy', 'deployed m:2 (2)'],
      ['deploy', 'deployed m:1 (1)'],
    ],
  );
  assert.deepEqual(events[3]?.detail, {
    summary: result.summary,
    kind: 'stable',
    from: 'm:2',
    to: 'm:1',
  });
});

test('rollback: a policy in force is cleared first; with nothing to return to, 409', async () => {
  const platform = await platformWithEndpoint();
  const nothing = await call(platform.url, 'POST', '/api/v1/endpoints/e/rollback', {});
  assert.equal(nothing.status, 409);
  assert.equal(errorCode(nothing), 'KILN_NOTHING_TO_ROLL_BACK');
  const missing = await call(platform.url, 'POST', '/api/v1/endpoints/none/rollback', {});
  assert.equal(missing.status, 404);
  assert.equal(errorCode(missing), 'KILN_ENDPOINT_NOT_FOUND');

  await call(platform.url, 'PUT', '/api/v1/endpoints/e/traffic', {
    versions: [
      { model: 'm', version: 1, weight: 50 },
      { model: 'm', version: 2, weight: 50 },
    ],
  });
  const cleared = await call(platform.url, 'POST', '/api/v1/endpoints/e/rollback', {});
  assert.equal(cleared.status, 200);
  const result = cleared.body as { kind: string; traffic: TrafficView };
  assert.equal(result.kind, 'policy');
  assert.equal(result.traffic.policy, null);
  assert.deepEqual(result.traffic.stable, { model: 'm', version: 1, ref: '1' });
  const after = await call(platform.url, 'POST', '/api/v1/endpoints/e/rollback', {});
  assert.equal(errorCode(after), 'KILN_NOTHING_TO_ROLL_BACK');
});

test('rollback of a rollout in progress; deploy and policies refused while it runs', async () => {
  const platform = await platformWithEndpoint();
  const store = platform.registry.store;
  await store.updateEndpointTraffic('e', {
    policy: {
      versions: [
        { model: 'm', version: 1, weight: 95 },
        { model: 'm', version: 2, weight: 5 },
      ],
      shadows: [],
      salt: 'r-1',
      keyPath: null,
      sliceKey: null,
      slicePath: null,
    },
    staged: [{ model: 'm', version: 2 }],
    rollout: {
      create: {
        id: 'r-1',
        endpoint: 'e',
        strategy: 'canary',
        baseline: { model: 'm', version: 1 },
        canary: { model: 'm', version: 2 },
        steps: [5, 100],
        stepIndex: 0,
        intervalMs: 60_000,
        thresholds: { maxErrorRate: 0.01, maxP99Ms: 50, minRequests: 100 },
        sliceKey: null,
        slicePath: null,
        state: 'running',
        stepStartedAt: new Date().toISOString(),
        createdBy: 'test',
      },
    },
    event: { endpoint: 'e', actor: 'test', action: 'rollout-start', reason: '', detail: null },
  });
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/e', {
    model: 'm',
    version: 3,
    replicas: 0,
  });
  assert.equal(deployed.status, 409);
  assert.equal(errorCode(deployed), 'KILN_ROLLOUT_IN_PROGRESS');
  // The same version with other settings is still allowed.
  await deploy(platform, 1);
  const policy = await call(platform.url, 'PUT', '/api/v1/endpoints/e/traffic', {
    versions: [{ model: 'm', version: 1, weight: 100 }],
  });
  assert.equal(errorCode(policy), 'KILN_ROLLOUT_IN_PROGRESS');
  const shadows = await call(platform.url, 'PUT', '/api/v1/endpoints/e/shadows', {
    shadows: [{ model: 'm', version: 3, sampleRate: 1 }],
  });
  assert.equal(errorCode(shadows), 'KILN_ROLLOUT_IN_PROGRESS');
  assert.equal((await view(platform)).rollout?.id, 'r-1');

  const back = await call(platform.url, 'POST', '/api/v1/endpoints/e/rollback', {
    reason: 'p99 too high',
  });
  assert.equal(back.status, 200, JSON.stringify(back.body));
  const result = back.body as { kind: string; traffic: TrafficView };
  assert.equal(result.kind, 'rollout');
  assert.equal(result.traffic.policy, null);
  assert.deepEqual(result.traffic.staged, []);
  assert.deepEqual(result.traffic.warm, []);
  assert.equal(result.traffic.rollout, null);
  const rollout = await store.getRollout('r-1');
  assert.equal(rollout?.state, 'rolled-back');
  assert.equal(rollout?.reason, `rolled back by ${dev}: p99 too high`);
  assert.ok(rollout?.finishedAt !== null);
  await deploy(platform, 3);
});

test('rollback stops a running experiment (its policy goes with it)', async () => {
  const platform = await platformWithEndpoint();
  const store = platform.registry.store;
  const variants = [
    { model: 'm', version: 1, weight: 50 },
    { model: 'm', version: 2, weight: 50 },
  ];
  await store.updateEndpointTraffic('e', {
    policy: {
      versions: variants,
      shadows: [],
      salt: 'x-1',
      keyPath: null,
      sliceKey: null,
      slicePath: null,
    },
    experiment: {
      create: {
        id: 'x-1',
        endpoint: 'e',
        name: 'ab',
        variants,
        salt: 'x-1',
        keyPath: null,
        createdBy: 'test',
      },
    },
    event: { endpoint: 'e', actor: 'test', action: 'experiment-start', reason: '', detail: null },
  });
  const refused = await call(platform.url, 'PUT', '/api/v1/endpoints/e', {
    model: 'm',
    version: 2,
    replicas: 0,
  });
  assert.equal(errorCode(refused), 'KILN_EXPERIMENT_IN_PROGRESS');
  assert.equal((await view(platform)).experiment?.id, 'x-1');
  const back = await call(platform.url, 'POST', '/api/v1/endpoints/e/rollback', {});
  assert.equal((back.body as { kind: string }).kind, 'policy');
  assert.equal((await store.getExperiment('x-1'))?.state, 'stopped');
  assert.equal((await view(platform)).experiment, null);
});

test('shadows: set beside the stable version, reported from gateway reports, cleared', async () => {
  const platform = await platformWithEndpoint();
  const set = await call(platform.url, 'PUT', '/api/v1/endpoints/e/shadows', {
    shadows: [{ model: 'm', version: 3, sampleRate: 0.5 }],
    reason: 'compare v3',
  });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  const policy = (set.body as TrafficView).policy;
  assert.deepEqual(policy?.versions, [{ model: 'm', version: 1, weight: 100 }]);
  assert.deepEqual(policy?.shadows, [{ model: 'm', version: 3, sampleRate: 0.5 }]);
  const badRate = await call(platform.url, 'PUT', '/api/v1/endpoints/e/shadows', {
    shadows: [{ model: 'm', version: 3, sampleRate: 1.5 }],
  });
  assert.equal(errorCode(badRate), 'KILN_TRAFFIC_POLICY_INVALID');

  const now = new Date().toISOString();
  const report: TrafficReport = {
    gateway: 'test',
    windowStart: now,
    windowEnd: now,
    endpoints: [
      {
        endpoint: 'e',
        versions: [
          {
            model: 'm',
            version: 1,
            overall: {
              requests: 4,
              errors: 1,
              latencyMs: sketchOf([1, 2, 3, 4]),
              outputs: sketchOf([0.5]),
            },
            slices: {},
          },
        ],
        shadows: [
          {
            model: 'm',
            version: 3,
            counts: {
              offered: 4,
              sent: 3,
              dropped: 1,
              errors: 1,
              compared: 2,
              agreed: 1,
              absDiff: RunningMoments.of([0, 0.25]).snapshot(),
              latencyMs: sketchOf([10, 20]),
              primaryLatencyMs: sketchOf([1, 2]),
            },
          },
        ],
      },
    ],
  };
  for (let i = 0; i < 2; i++) {
    const posted = await call(platform.url, 'POST', '/api/v1/traffic/reports', report);
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
    assert.deepEqual(posted.body, { rows: 2 });
  }
  const badReport = await call(platform.url, 'POST', '/api/v1/traffic/reports', {
    ...report,
    windowEnd: 'later',
  });
  assert.equal(badReport.status, 400);

  const observed = await platform.traffic.observationsSince('e', Date.now() - 60_000);
  assert.equal(observed.primary.get('m:1')?.overall.requests, 8);
  assert.equal(observed.primary.get('m:1')?.overall.errors, 2);

  const shown = await call(platform.url, 'GET', '/api/v1/endpoints/e/shadows/report');
  assert.equal(shown.status, 200, JSON.stringify(shown.body));
  const entry = (shown.body as ShadowReport).shadows[0];
  assert.equal(entry?.sampleRate, 0.5);
  assert.deepEqual(
    [entry?.offered, entry?.sent, entry?.dropped, entry?.errors, entry?.compared, entry?.agreed],
    [8, 6, 2, 2, 4, 2],
  );
  assert.equal(entry?.agreementRate, 0.5);
  assert.equal(entry?.absDiff.count, 4);
  assert.ok(Math.abs((entry?.absDiff.mean ?? 0) - 0.125) < 1e-12);
  assert.equal(entry?.absDiff.max, 0.25);
  assert.ok(entry?.latencyMs !== null && Math.abs((entry?.latencyMs.p99 ?? 0) - 20) < 0.5);

  // The gateway's reports are telemetry: not in the audit log.
  const audit = platform.registry.store.listAudit({ limit: 500 });
  assert.ok((await audit).items.every((entry) => !entry.route.includes('/traffic/reports')));

  const cleared = await call(platform.url, 'DELETE', '/api/v1/endpoints/e/shadows');
  assert.equal(cleared.status, 200);
  assert.equal((cleared.body as TrafficView).policy, null);
  const events = await history(platform);
  assert.deepEqual(
    events.slice(0, 2).map((e) => [e.action, e.reason]),
    [
      ['shadow', 'no reason given'],
      ['shadow', 'compare v3'],
    ],
  );
});

test('history: paged newest first, kept after the endpoint is deleted, 404 for a name never seen', async () => {
  const platform = await platformWithEndpoint();
  await deploy(platform, 2);
  await deploy(platform, 3);
  const first = await call(platform.url, 'GET', '/api/v1/endpoints/e/history?limit=2');
  const page = first.body as { items: TrafficEvent[]; nextPageToken: string | null };
  assert.deepEqual(
    page.items.map((e) => e.reason),
    ['deployed m:3 (3)', 'deployed m:2 (2)'],
  );
  assert.ok(page.nextPageToken !== null);
  const next = await call(
    platform.url,
    'GET',
    `/api/v1/endpoints/e/history?limit=2&pageToken=${encodeURIComponent(page.nextPageToken)}`,
  );
  assert.deepEqual(
    (next.body as { items: TrafficEvent[] }).items.map((e) => e.reason),
    ['deployed m:1 (1)'],
  );
  const experiment = await call(platform.url, 'POST', '/api/v1/experiments', {
    endpoint: 'e',
    name: 'x',
    variants: [
      { model: 'm', version: 3, weight: 50 },
      { model: 'm', version: 2, weight: 50 },
    ],
  });
  assert.equal(experiment.status, 201, JSON.stringify(experiment.body));
  const experimentId = (experiment.body as { id: string }).id;
  assert.equal((await call(platform.url, 'DELETE', '/api/v1/endpoints/e')).status, 200);
  // The deletion is the history's last word (who, and what it ended), not the last deploy.
  const kept = await history(platform);
  assert.equal(kept.length, 5);
  const deleted = kept[0];
  assert.equal(deleted?.action, 'delete');
  assert.equal(deleted.actor, 'token "(dev)" (admin)');
  assert.equal(
    (deleted.detail as { summary: string }).summary,
    `endpoint deleted (was m:3); experiment ${experimentId} stopped`,
  );
  const never = await call(platform.url, 'GET', '/api/v1/endpoints/never/history');
  assert.equal(never.status, 404);
  assert.equal(errorCode(never), 'KILN_ENDPOINT_NOT_FOUND');
  const badSince = await call(platform.url, 'GET', '/api/v1/endpoints/e/history?since=soon');
  assert.equal(errorCode(badSince), 'KILN_VALIDATION_FAILED');
});

test("a deployer changes only its own team's traffic, and routes only to its team's models", async () => {
  const platform = await testPlatform({ dev: false });
  const admin = platform.admin;
  const asAdmin = (method: string, path: string, body?: unknown) =>
    call(platform.url, method, path, body, admin);
  for (const [name, team] of [
    ['m', 'risk'],
    ['other', 'growth'],
  ] as const) {
    assert.equal((await asAdmin('POST', '/api/v1/models', { name, team })).status, 201);
    const files = await readArtifact(`${registryFixtures}mlp.onnx`);
    assert.equal((await register(platform.url, name, 'onnx', files, {}, admin)).status, 201);
  }
  await register(
    platform.url,
    'm',
    'onnx',
    await readArtifact(`${registryFixtures}mlp.onnx`),
    {},
    admin,
  );
  for (const [endpoint, model] of [
    ['e', 'm'],
    ['g', 'other'],
  ]) {
    const put = await asAdmin('PUT', `/api/v1/endpoints/${endpoint}`, {
      model,
      version: 1,
      replicas: 0,
    });
    assert.equal(put.status, 201, JSON.stringify(put.body));
  }
  const token = await asAdmin('POST', '/api/v1/tokens', {
    name: 'ci',
    role: 'deployer',
    team: 'risk',
  });
  const ci = { authorization: `Bearer ${(token.body as { token: string }).token}` };
  const asCi = (method: string, path: string, body?: unknown) =>
    call(platform.url, method, path, body, ci);

  const own = await asCi('PUT', '/api/v1/endpoints/e/traffic', {
    versions: [
      { model: 'm', version: 1, weight: 50 },
      { model: 'm', version: 2, weight: 50 },
    ],
  });
  assert.equal(own.status, 200, JSON.stringify(own.body));
  const foreignModel = await asCi('PUT', '/api/v1/endpoints/e/shadows', {
    shadows: [{ model: 'other', version: 1, sampleRate: 1 }],
  });
  assert.equal(foreignModel.status, 403);
  assert.equal(errorCode(foreignModel), 'KILN_PERMISSION_DENIED');
  const foreignEndpoint = await asCi('POST', '/api/v1/endpoints/g/rollback', {});
  assert.equal(foreignEndpoint.status, 403);
  const rolledBack = await asCi('POST', '/api/v1/endpoints/e/rollback', { reason: 'ci' });
  assert.equal(rolledBack.status, 200);
  const events = (await asCi('GET', '/api/v1/endpoints/e/history')).body as {
    items: TrafficEvent[];
  };
  assert.equal(events.items[0]?.actor, 'token "ci" (deployer, team risk)');
  // A gateway's token may post reports and nothing else here.
  const gateway = await asAdmin('POST', '/api/v1/tokens', { name: 'gw', role: 'gateway' });
  const gw = { authorization: `Bearer ${(gateway.body as { token: string }).token}` };
  const now = new Date().toISOString();
  const report = { gateway: 'gw', windowStart: now, windowEnd: now, endpoints: [] };
  assert.equal(
    (await call(platform.url, 'POST', '/api/v1/traffic/reports', report, gw)).status,
    202,
  );
  assert.equal(
    (await call(platform.url, 'POST', '/api/v1/traffic/reports', report, ci)).status,
    403,
  );
  assert.equal(
    (await call(platform.url, 'GET', '/api/v1/endpoints/e/traffic', undefined, gw)).status,
    403,
  );
});
