// Rollouts on a real platform with real ONNX workers: a blue-green switch that reproduces its
// golden set (torch's reference outputs) against the candidate's own replica, one that does
// not and is rolled back without moving traffic, and a canary that survives a control-plane
// restart on the same home and carries on to completion from the restarted controller.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPlatform, type RunningPlatform } from '../../src/control/start-platform.ts';
import type { RolloutView } from '../../src/control/traffic/rollout-controller.ts';
import {
  reportSketchAccuracy,
  type TrafficReport,
  type WindowCounts,
} from '../../src/protocol/traffic/traffic-report.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import { call, readArtifact, register, testPlatform } from '../helpers/platform.ts';

const mlpPath = new URL('../../fixtures/onnx/mlp.onnx', import.meta.url).pathname;
const expected = JSON.parse(
  await readFile(new URL('../../fixtures/onnx/mlp.expected.json', import.meta.url), 'utf8'),
) as {
  inputs: { name: string; datatype: string; shape: number[]; data: number[] }[];
  outputs: { name: string; data: number[] }[];
};

/** Polls `read` until `done` holds, up to `timeoutMs` (generous: workers start slowly here). */
async function waitFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  what: string,
  timeoutMs = 90_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await read();
  while (!done(last)) {
    if (Date.now() > deadline)
      assert.fail(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    last = await read();
  }
  return last;
}

async function registerMlp(url: string, versions: number): Promise<void> {
  const files = await readArtifact(mlpPath);
  for (let i = 0; i < versions; i++) {
    const reply = await register(url, 'm', 'onnx', files);
    assert.equal(reply.status, 201, JSON.stringify(reply.body));
  }
}

async function rolloutOf(url: string, id: string): Promise<RolloutView> {
  const reply = await call(url, 'GET', `/api/v1/rollouts/${id}`);
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  return reply.body as RolloutView;
}

const finished = (view: RolloutView): boolean =>
  ['succeeded', 'rolled-back', 'aborted'].includes(view.rollout.state);

test('blue-green: a golden set not reproduced rolls back untouched; one reproduced switches all traffic at once', async () => {
  const { url } = await testPlatform();
  await registerMlp(url, 3);
  const deployed = await call(url, 'PUT', '/api/v1/endpoints/e', { model: 'm', version: 1 });
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  const golden = (shift: number) => ({
    tolerance: { absolute: 1e-5, relative: 1e-4 },
    cases: [
      {
        request: { inputs: expected.inputs },
        outputs: expected.outputs.map(({ name, data }) => ({
          name,
          data: data.map((value) => value + shift),
        })),
      },
    ],
  });
  assert.equal(
    (await call(url, 'PUT', '/api/v1/models/m/versions/2/golden', golden(0))).status,
    200,
  );
  assert.equal(
    (await call(url, 'PUT', '/api/v1/models/m/versions/3/golden', golden(0.5))).status,
    200,
  );

  const wrong = await call(url, 'POST', '/api/v1/endpoints/e/rollout', {
    model: 'm',
    version: 3,
    strategy: 'blue-green',
  });
  assert.equal(wrong.status, 201, JSON.stringify(wrong.body));
  const failed = await waitFor(
    () => rolloutOf(url, (wrong.body as RolloutView).rollout.id),
    finished,
    'the failing blue-green to end',
  );
  assert.equal(failed.rollout.state, 'rolled-back');
  assert.match(
    failed.rollout.reason ?? '',
    /^golden set of m:3 not reproduced: case 0: output scores\[0\]: got -?[\d.e-]+, want -?[\d.e-]+/,
  );
  let endpoint = (await call(url, 'GET', '/api/v1/endpoints/e')).body as { version: number };
  assert.equal(endpoint.version, 1);

  const right = await call(url, 'POST', '/api/v1/endpoints/e/rollout', {
    model: 'm',
    version: 2,
    strategy: 'blue-green',
  });
  assert.equal(right.status, 201, JSON.stringify(right.body));
  const switched = await waitFor(
    () => rolloutOf(url, (right.body as RolloutView).rollout.id),
    finished,
    'the blue-green switch',
  );
  assert.equal(switched.rollout.state, 'succeeded', switched.rollout.reason ?? '');
  assert.match(switched.rollout.reason ?? '', /golden set reproduced \(1 cases\)/);
  endpoint = (await call(url, 'GET', '/api/v1/endpoints/e')).body as { version: number };
  assert.equal(endpoint.version, 2);
  const traffic = (await call(url, 'GET', '/api/v1/endpoints/e/traffic')).body as {
    previous: unknown;
    warm: { model: string; version: number }[];
    staged: unknown[];
  };
  assert.deepEqual(traffic.previous, { model: 'm', version: 1 });
  assert.deepEqual(
    traffic.warm.map(({ model, version }) => ({ model, version })),
    [{ model: 'm', version: 1 }],
  );
  assert.deepEqual(traffic.staged, []);
});

function sketchOf(values: readonly number[]): ReturnType<HistogramSketch['snapshot']> {
  const sketch = new HistogramSketch(reportSketchAccuracy);
  for (const value of values) sketch.add(value);
  return sketch.snapshot();
}

function healthyWindow(requests: number): WindowCounts {
  const values = Array.from({ length: requests }, (_, i) => (i % 100) / 100);
  return {
    requests,
    errors: 0,
    latencyMs: sketchOf(values.map((v) => 2 + v)),
    outputs: sketchOf(values),
  };
}

test('a canary rollout survives a control-plane restart on the same home and carries on to completion', async () => {
  const home = await mkdtemp(join(tmpdir(), 'kiln-home-'));
  const open = (): Promise<RunningPlatform> =>
    startPlatform({ home, host: '127.0.0.1', port: 0, gateway: false, dev: true });
  let platform: RunningPlatform | null = await open();
  try {
    await registerMlp(platform.url, 2);
    const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/e', {
      model: 'm',
      version: 1,
    });
    assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
    const start = await call(platform.url, 'POST', '/api/v1/endpoints/e/rollout', {
      model: 'm',
      version: 2,
      steps: [50, 100],
      intervalMs: 1000,
      thresholds: { maxErrorRate: 0.05, maxP99Ms: 1000, minRequests: 50 },
    });
    assert.equal(start.status, 201, JSON.stringify(start.body));
    const id = (start.body as RolloutView).rollout.id;
    const url = platform.url;
    const running = await waitFor(
      () => rolloutOf(url, id),
      (view) => view.rollout.state === 'running',
      'the canary to take its first step',
    );
    assert.equal(running.rollout.stepIndex, 0);
    // No gateway reports: the step waits for data, however long it runs.
    assert.equal(running.analysis?.decision, 'wait');
    await platform.close();
    platform = null;

    platform = await open();
    const again = await rolloutOf(platform.url, id);
    assert.equal(again.rollout.state, 'running');
    assert.equal(again.rollout.stepIndex, 0);
    assert.equal(again.rollout.stepStartedAt, running.rollout.stepStartedAt);

    // What the gateways would report from now on: both versions healthy. The restarted
    // controller judges the step on it and completes the rollout.
    const now = new Date().toISOString();
    const report: TrafficReport = {
      gateway: 'test',
      windowStart: now,
      windowEnd: now,
      endpoints: [
        {
          endpoint: 'e',
          versions: [1, 2].map((version) => ({
            model: 'm',
            version,
            overall: healthyWindow(200),
            slices: {},
          })),
          shadows: [],
        },
      ],
    };
    const restartedUrl = platform.url;
    // The first whole bucket after the step began holds the reports the step is judged on:
    // keep reporting until the controller has acted.
    const done = await waitFor(
      async () => {
        const posted = await call(restartedUrl, 'POST', '/api/v1/traffic/reports', report);
        assert.ok(posted.status < 300, JSON.stringify(posted.body));
        return rolloutOf(restartedUrl, id);
      },
      (view) => finished(view),
      'the restarted controller to complete the rollout',
      60_000,
    );
    assert.equal(done.rollout.state, 'succeeded', done.rollout.reason ?? '');
    const endpoint = (await call(restartedUrl, 'GET', '/api/v1/endpoints/e')).body as {
      version: number;
    };
    assert.equal(endpoint.version, 2);
    const history = (await call(restartedUrl, 'GET', '/api/v1/endpoints/e/history?limit=100'))
      .body as { items: { action: string; actor: string }[] };
    assert.deepEqual(history.items.map((e) => [e.action, e.actor]).reverse(), [
      ['deploy', 'token "(dev)" (admin)'],
      ['rollout-start', 'token "(dev)" (admin)'],
      ['rollout-step', 'rollout-controller'],
      ['rollout-complete', 'rollout-controller'],
    ]);
  } finally {
    await platform?.close();
    await rm(home, { recursive: true, force: true });
  }
});
