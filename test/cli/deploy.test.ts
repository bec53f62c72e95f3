// Pure parts of `kiln deploy`, `kiln endpoints` and `kiln keys api`: the PUT body built from
// MODEL[:VERSION|@ALIAS] and flags, the --wait loop (fake clock, no sleeps), renderings.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseVersionRef } from '../../src/cli/arguments.ts';
import type { Endpoint, EndpointStatus, ReplicaStatus } from '../../src/cli/api-types.ts';
import { CliError } from '../../src/cli/errors.ts';
import {
  allReplicasReady,
  deployBody,
  checkAutoscaleFlags,
  keepCurrent,
  waitUntilReady,
} from '../../src/cli/commands/deploy.ts';
import {
  apiKeysTable,
  createdApiKeyText,
  deploySummary,
  endpointDetails,
  endpointsTable,
  notReadyReason,
  readinessText,
} from '../../src/cli/commands/endpoints-render.ts';
import { apiKeyBody } from '../../src/cli/commands/keys-api.ts';
import { FakeClock } from '../helpers/temp-dir.ts';

function replica(overrides: Partial<ReplicaStatus> = {}): ReplicaStatus {
  return {
    id: 'fraud-1',
    version: 3,
    state: 'ready',
    pid: 4242,
    restarts: 0,
    reason: null,
    lastFailure: null,
    restartAt: null,
    url: 'http://127.0.0.1:40001',
    ...overrides,
  };
}

function endpoint(status: Partial<EndpointStatus> = {}, replicas = 1): Endpoint {
  return {
    name: 'fraud',
    team: 'risk',
    model: 'fraud-xgb',
    version: 3,
    ref: '@champion',
    format: 'xgboost',
    replicas,
    config: { intraOpThreads: 2 },
    createdAt: '2026-01-31T14:05:09.123Z',
    updatedAt: '2026-01-31T14:06:00.000Z',
    url: 'http://127.0.0.1:8000/v2/models/fraud',
    status: {
      ready: true,
      readyReplicas: replicas,
      reason: null,
      maxConcurrency: 64 * replicas,
      maxConcurrencySource: 'derived',
      replicas: [replica()],
      ...status,
    },
  };
}

const defaults = { endpoint: 'fraud' };

void test('deploy body: MODEL = latest, MODEL:N = version, MODEL@A = alias', () => {
  assert.deepEqual(deployBody(parseVersionRef('fraud-xgb'), defaults), {
    model: 'fraud-xgb',
    config: {},
  });
  assert.deepEqual(deployBody(parseVersionRef('fraud-xgb:3'), { ...defaults, replicas: 2 }), {
    model: 'fraud-xgb',
    version: 3,
    replicas: 2,
    config: {},
  });
  assert.deepEqual(deployBody(parseVersionRef('fraud-xgb@champion'), defaults), {
    model: 'fraud-xgb',
    alias: 'champion',
    config: {},
  });
  for (const bad of ['fraud:x', 'fraud:0', ':3', 'fraud@', 'a:1@b']) {
    assert.throws(
      () => parseVersionRef(bad),
      (error: unknown) => error instanceof CliError && error.code === 'KILN_USAGE',
      bad,
    );
  }
});

void test('deploy body: serving flags land in config, absent ones are omitted', () => {
  const body = deployBody(parseVersionRef('mlp:1'), {
    ...defaults,
    team: 'vision',
    threads: 4,
    interOpThreads: 1,
    graphOpt: 'extended',
    maxBodyBytes: 1_048_576,
  });
  assert.deepEqual(body, {
    model: 'mlp',
    version: 1,
    team: 'vision',
    config: {
      intraOpThreads: 4,
      interOpThreads: 1,
      graphOptimizationLevel: 'extended',
      maxBodyBytes: 1_048_576,
    },
  });
  assert.deepEqual(deployBody(parseVersionRef('mlp'), { ...defaults, threads: 0 }).config, {
    intraOpThreads: 0,
  });
});

void test('redeploying keeps what the command line does not give: replicas, team, settings', () => {
  const current: Endpoint = {
    ...endpoint({}, 3),
    team: 'risk',
    config: {
      intraOpThreads: 2,
      timeoutMs: 100,
      batching: { maxBatchSize: 64, maxDelayMicros: 500, preferredBatchSizes: [16], maxQueue: 256 },
    },
  };
  // A version swap alone changes the version only.
  assert.deepEqual(keepCurrent(deployBody(parseVersionRef('fraud-xgb:4'), defaults), current), {
    model: 'fraud-xgb',
    version: 4,
    replicas: 3,
    team: 'risk',
    config: current.config,
  });
  // Flags given win; a batching flag changes that field of the current batching only.
  const body = keepCurrent(
    deployBody(parseVersionRef('fraud-xgb'), {
      ...defaults,
      replicas: 1,
      team: 'fraud',
      queue: 512,
      maxConcurrency: 10,
    }),
    current,
  );
  assert.deepEqual(body, {
    model: 'fraud-xgb',
    replicas: 1,
    team: 'fraud',
    config: {
      intraOpThreads: 2,
      timeoutMs: 100,
      maxConcurrency: 10,
      batching: { maxBatchSize: 64, maxDelayMicros: 500, preferredBatchSizes: [16], maxQueue: 512 },
    },
  });
  // --no-batching turns it off; batching flags on an endpoint without batching start afresh
  // (the platform fills the rest from its defaults).
  assert.equal(
    keepCurrent(deployBody(parseVersionRef('m'), { ...defaults, batching: false }), current).config
      .batching,
    null,
  );
  // A smaller maximum keeps only the preferred sizes that still fit (none: none kept).
  assert.deepEqual(
    keepCurrent(deployBody(parseVersionRef('m'), { ...defaults, maxBatch: 8 }), current).config
      .batching,
    { maxBatchSize: 8, maxDelayMicros: 500, maxQueue: 256 },
  );
  assert.deepEqual(
    keepCurrent(deployBody(parseVersionRef('m'), { ...defaults, maxBatch: 16 }), current).config
      .batching,
    { maxBatchSize: 16, maxDelayMicros: 500, preferredBatchSizes: [16], maxQueue: 256 },
  );
  const off: Endpoint = { ...current, config: { batching: null } };
  assert.deepEqual(
    keepCurrent(deployBody(parseVersionRef('m'), { ...defaults, maxBatch: 8 }), off).config,
    { batching: { maxBatchSize: 8 } },
  );
  // The current config object is not modified.
  assert.equal(current.config.batching?.maxQueue, 256);
});

void test('--wait polls until ready, every interval, without sleeping past the deadline', async () => {
  const clock = new FakeClock();
  const sleeps: number[] = [];
  const starting = endpoint({
    ready: false,
    readyReplicas: 0,
    replicas: [replica({ state: 'starting' })],
  });
  const answers = [starting, starting, endpoint()];
  let fetches = 0;
  const outcome = await waitUntilReady(
    starting,
    () => Promise.resolve(answers[fetches++] ?? endpoint()),
    {
      timeoutMs: 10_000,
      intervalMs: 250,
      now: () => clock.now(),
      sleep: (ms) => {
        sleeps.push(ms);
        clock.advance(ms);
        return Promise.resolve();
      },
    },
  );
  assert.equal(outcome.ready, true);
  assert.equal(fetches, 3);
  assert.deepEqual(sleeps, [250, 250, 250]);

  // Never ready: gives up at the deadline with the last status seen.
  const failed = endpoint({
    ready: false,
    readyReplicas: 0,
    replicas: [replica({ state: 'failed', reason: 'cannot load model: bad file', pid: null })],
  });
  const slept: number[] = [];
  let polls = 0;
  const timedOut = await waitUntilReady(
    starting,
    () => {
      polls += 1;
      return Promise.resolve(failed);
    },
    {
      timeoutMs: 600,
      intervalMs: 250,
      now: () => clock.now(),
      sleep: (ms) => {
        slept.push(ms);
        clock.advance(ms);
        return Promise.resolve();
      },
    },
  );
  assert.equal(timedOut.ready, false);
  assert.equal(timedOut.endpoint, failed);
  assert.deepEqual(slept, [250, 250, 100]);
  assert.equal(polls, 3);

  // Serving on one of two replicas is not done yet: --wait waits for both.
  const half = endpoint({ ready: true, readyReplicas: 1 }, 2);
  const both = endpoint({}, 2);
  let halfPolls = 0;
  const done = await waitUntilReady(half, () => Promise.resolve(halfPolls++ === 0 ? half : both), {
    timeoutMs: 10_000,
    now: () => clock.now(),
    sleep: () => Promise.resolve(clock.advance(1)),
  });
  assert.deepEqual([done.ready, done.endpoint, halfPolls], [true, both, 2]);
  assert.equal(allReplicasReady(half), false);
  assert.equal(allReplicasReady(both), true);
  assert.equal(allReplicasReady(endpoint({ ready: false, readyReplicas: 0 }, 0)), true);

  // Already ready: no poll at all.
  const immediate = await waitUntilReady(endpoint(), () => Promise.reject(new Error('no')), {
    timeoutMs: 1,
  });
  assert.equal(immediate.ready, true);
});

void test('deploy summary and readiness lines', () => {
  assert.equal(
    deploySummary(endpoint({}, 2)),
    'endpoint fraud → fraud-xgb v3 (2 replicas)\nurl: http://127.0.0.1:8000/v2/models/fraud\n',
  );
  assert.match(deploySummary(endpoint()), /\(1 replica\)/);
  assert.equal(readinessText(endpoint({}, 2)), 'ready (2/2 replicas)\n');
  assert.equal(
    readinessText(endpoint({ ready: false, readyReplicas: 0, reason: 'loading model' })),
    'not ready (0/1 replicas): loading model\n',
  );
  const failing = endpoint(
    {
      ready: false,
      readyReplicas: 1,
      replicas: [
        replica(),
        replica({ id: 'fraud-2', state: 'failed', reason: 'exited with code 1', pid: null }),
      ],
    },
    2,
  );
  assert.equal(notReadyReason(failing.status), 'replica fraud-2 failed: exited with code 1');
  assert.equal(
    readinessText(endpoint({ ready: false, readyReplicas: 0, replicas: [] })),
    'not ready (0/1 replicas)\n',
  );
});

void test('endpoints list and show render tables and key: value blocks', () => {
  const table = endpointsTable([
    endpoint({}, 2),
    { ...endpoint({ ready: false, readyReplicas: 0 }), name: 'mlp', model: 'mlp-onnx', version: 1 },
    {
      ...endpoint({ ready: false, readyReplicas: 0 }, 0),
      name: 'idle',
      config: { autoscale: { minReplicas: 0, maxReplicas: 3 } as never },
    },
  ]);
  assert.equal(
    table,
    [
      'NAME   MODEL      VERSION  REPLICAS  READY  URL',
      'fraud  fraud-xgb        3  2/2       yes    http://127.0.0.1:8000/v2/models/fraud',
      'mlp    mlp-onnx         1  0/1       no     http://127.0.0.1:8000/v2/models/fraud',
      'idle   fraud-xgb        3  0/0       zero   http://127.0.0.1:8000/v2/models/fraud',
      '',
    ].join('\n'),
  );
  const details = endpointDetails(
    endpoint({
      replicas: [replica(), replica({ id: 'fraud-2', state: 'starting', pid: null, restarts: 2 })],
    }),
  );
  assert.match(details, /^name:\s+fraud$/m);
  assert.match(details, /^ref:\s+@champion$/m);
  assert.match(details, /^config:\s+intraOpThreads=2$/m);
  assert.match(details, /^ready:\s+yes$/m);
  assert.match(details, /^reason:\s+-$/m);
  assert.match(details, /^max concurrency:\s+64 \(derived from the ready replicas\)$/m);
  const configured = endpointDetails(
    endpoint({ maxConcurrency: 8, maxConcurrencySource: 'configured' }),
  );
  assert.match(configured, /^max concurrency:\s+8 \(configured\)$/m);
  assert.match(
    endpointDetails(endpoint({ maxConcurrency: null, maxConcurrencySource: null })),
    /^max concurrency:\s+-$/m,
  );
  assert.match(details, /^created:\s+2026-01-31 14:05:09$/m);
  assert.match(details, /^Replicas\nID\s+VERSION\s+STATE\s+PID\s+RESTARTS\s+REASON$/m);
  assert.match(details, /^fraud-1\s+3\s+ready\s+4242\s+0\s+-$/m);
  assert.match(details, /^fraud-2\s+3\s+starting\s+-\s+2\s+-$/m);
});

void test('API keys: exactly one scope; the key is shown once, with a warning', () => {
  assert.deepEqual(apiKeyBody('ci', { team: 'risk' }), { name: 'ci', team: 'risk' });
  assert.deepEqual(apiKeyBody('ci', { endpoint: 'fraud' }), { name: 'ci', endpoint: 'fraud' });
  for (const options of [{}, { team: 'risk', endpoint: 'fraud' }]) {
    assert.throws(
      () => apiKeyBody('ci', options),
      (error: unknown) => error instanceof CliError && error.exitCode === 2,
    );
  }
  const key = {
    id: 'key_1',
    name: 'ci',
    team: null,
    endpoint: 'fraud',
    prefix: 'kiln_ab12',
    createdAt: '2026-01-31T14:05:09Z',
  };
  const text = createdApiKeyText({ ...key, key: 'kiln_ab12secret' });
  assert.match(text, /^created API key key_1 \(ci, endpoint fraud\)$/m);
  assert.match(text, /^key: kiln_ab12secret$/m);
  assert.match(text, /shown only now/);
  assert.equal(
    apiKeysTable([key, { ...key, id: 'key_2', team: 'risk', endpoint: null }]),
    [
      'ID     NAME  TEAM  ENDPOINT  PREFIX     CREATED',
      'key_1  ci    -     fraud     kiln_ab12  2026-01-31 14:05:09',
      'key_2  ci    risk  -         kiln_ab12  2026-01-31 14:05:09',
      '',
    ].join('\n'),
  );
});

void test('a redeploy keeps the endpoint on its pool; --no-pool moves it off, with a replica count', () => {
  const current: Endpoint = { ...endpoint({}, 2), config: { pool: 'small', timeoutMs: 100 } };
  const kept = keepCurrent(deployBody(parseVersionRef('fraud-xgb:4'), defaults), current);
  assert.deepEqual(kept.config, { pool: 'small', timeoutMs: 100 });
  assert.equal(kept.replicas, undefined, "the pool's workers are its capacity");
  const off = { ...defaults, pool: false as const, replicas: 3 };
  const moved = keepCurrent(deployBody(parseVersionRef('fraud-xgb:4'), off), current, null, {
    pool: true,
  });
  assert.deepEqual(moved.config, { timeoutMs: 100 });
  assert.equal(moved.replicas, 3);
  // Without --replicas it keeps as many replicas as the pool gave it workers.
  const count = keepCurrent(deployBody(parseVersionRef('m'), defaults), current, null, {
    pool: true,
  });
  assert.equal(count.replicas, 2);
});

void test('autoscaling flags on an endpoint without a policy need both bounds, named as flags', () => {
  const body = (autoscale: Record<string, unknown>) =>
    ({ model: 'm', config: { autoscale } }) as Parameters<typeof checkAutoscaleFlags>[0];
  assert.throws(
    () => checkAutoscaleFlags(body({ maxReplicas: 5 })),
    /--min-replicas is needed to start autoscaling this endpoint/,
  );
  assert.throws(
    () => checkAutoscaleFlags(body({ target: 3 })),
    /--min-replicas and --max-replicas are needed/,
  );
  checkAutoscaleFlags(body({ minReplicas: 0, maxReplicas: 5 }));
  checkAutoscaleFlags({ model: 'm', config: {} });
});
