// Rollouts and golden sets over the API, against the real store. The endpoint has no replicas,
// so a rollout stays 'starting' (its canary never gets ready) and the tests steer it by hand:
// start, the refusals (a second rollout, a promote with nothing to promote, bad steps and
// thresholds naming each field, unknown versions), pause/resume/abort, and the history.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  call,
  errorCode,
  registerFixture,
  testPlatform,
  type TestPlatform,
} from '../helpers/platform.ts';
import type { RolloutView } from '../../src/control/traffic/rollout-controller.ts';
import type { TrafficEvent } from '../../src/store/traffic-records.ts';

const dev = 'token "(dev)" (admin)';

/** Model `m` v1..v3 (the same ONNX file), endpoint `e` on m:1 with no replicas. */
async function platformWithEndpoint(): Promise<TestPlatform> {
  const platform = await testPlatform();
  for (let i = 0; i < 3; i++) await registerFixture(platform.url, 'm', 'onnx', 'mlp.onnx');
  const put = await call(platform.url, 'PUT', '/api/v1/endpoints/e', {
    model: 'm',
    version: 1,
    replicas: 0,
  });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  return platform;
}

function problemFields(body: unknown): string[] {
  const details = (body as { error: { details: { problems: { field: string }[] } } }).error.details;
  return details.problems.map((p) => p.field);
}

test('rollout API: start, the one-at-a-time rule, pause, resume, abort, and the history', async () => {
  const { url } = await platformWithEndpoint();
  const start = await call(url, 'POST', '/api/v1/endpoints/e/rollout', {
    model: 'm',
    version: 2,
    steps: [1, 5, 25, 50, 100],
    intervalMs: 120_000,
    thresholds: { maxErrorRate: 0.01, maxP99Ms: 50 },
    sliceKey: 'country',
    slicePath: '$.parameters.country',
    reason: 'new features',
  });
  assert.equal(start.status, 201, JSON.stringify(start.body));
  const started = start.body as RolloutView;
  assert.equal(started.rollout.state, 'starting');
  assert.equal(started.rollout.strategy, 'canary');
  assert.deepEqual(started.rollout.baseline, { model: 'm', version: 1 });
  assert.deepEqual(started.rollout.canary, { model: 'm', version: 2 });
  assert.deepEqual(started.rollout.thresholds, {
    maxErrorRate: 0.01,
    maxP99Ms: 50,
    minRequests: 100,
  });
  assert.equal(started.percent, 0);
  assert.equal(started.analysis, null);
  const id = started.rollout.id;

  const again = await call(url, 'POST', '/api/v1/endpoints/e/rollout', { model: 'm', version: 3 });
  assert.equal(again.status, 409);
  assert.equal(errorCode(again), 'KILN_ROLLOUT_IN_PROGRESS');
  // A deploy (replace) waits for the rollout to finish too.
  const replace = await call(url, 'PUT', '/api/v1/endpoints/e', {
    model: 'm',
    version: 3,
    replicas: 0,
  });
  assert.equal(replace.status, 409);
  assert.equal(errorCode(replace), 'KILN_ROLLOUT_IN_PROGRESS');
  // Still starting: the canary has no ready replica, so there is no step to promote to.
  const early = await call(url, 'POST', '/api/v1/endpoints/e/rollout/promote');
  assert.equal(early.status, 409);
  assert.equal(errorCode(early), 'KILN_ROLLOUT_IN_PROGRESS');

  const status = await call(url, 'GET', '/api/v1/endpoints/e/rollout');
  assert.equal(status.status, 200);
  assert.equal((status.body as RolloutView).rollout.id, id);
  const traffic = await call(url, 'GET', '/api/v1/endpoints/e/traffic');
  assert.deepEqual((traffic.body as { staged: unknown }).staged, [{ model: 'm', version: 2 }]);

  const paused = await call(url, 'POST', '/api/v1/endpoints/e/rollout/pause', {
    reason: 'hold on',
  });
  assert.equal(paused.status, 200, JSON.stringify(paused.body));
  assert.equal((paused.body as RolloutView).rollout.state, 'paused');
  const resumed = await call(url, 'POST', '/api/v1/endpoints/e/rollout/resume');
  assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
  assert.equal((resumed.body as RolloutView).rollout.state, 'starting');
  const aborted = await call(url, 'POST', '/api/v1/endpoints/e/rollout/abort', {
    reason: 'wrong build',
  });
  assert.equal(aborted.status, 200);
  assert.equal((aborted.body as RolloutView).rollout.state, 'aborted');
  assert.equal((aborted.body as RolloutView).rollout.reason, 'wrong build');

  for (const action of ['promote', 'pause', 'resume', 'abort']) {
    const none = await call(url, 'POST', `/api/v1/endpoints/e/rollout/${action}`);
    assert.equal(none.status, 409, action);
    assert.equal(errorCode(none), 'KILN_NO_ACTIVE_ROLLOUT', action);
    assert.match(
      (none.body as { error: { message: string } }).error.message,
      new RegExp(`no rollout in progress to ${action}`),
    );
  }
  // The latest rollout stays visible once finished.
  const latest = await call(url, 'GET', '/api/v1/endpoints/e/rollout');
  assert.equal((latest.body as RolloutView).rollout.state, 'aborted');
  const byId = await call(url, 'GET', `/api/v1/rollouts/${id}`);
  assert.equal((byId.body as RolloutView).rollout.id, id);
  const listed = await call(url, 'GET', '/api/v1/rollouts?endpoint=e');
  assert.deepEqual(
    (listed.body as { items: { id: string }[] }).items.map((r) => r.id),
    [id],
  );
  const activeOnly = await call(url, 'GET', '/api/v1/rollouts?active=true');
  assert.deepEqual((activeOnly.body as { items: unknown[] }).items, []);

  const history = await call(url, 'GET', '/api/v1/endpoints/e/history?limit=100');
  const events = [...(history.body as { items: TrafficEvent[] }).items].reverse();
  assert.deepEqual(
    events.map((e) => [e.action, e.actor, e.reason]),
    [
      ['deploy', dev, 'deployed m:1 (1)'],
      ['rollout-start', dev, 'new features'],
      ['rollout-pause', dev, 'hold on'],
      ['rollout-resume', dev, `resumed by ${dev}`],
      ['rollout-abort', dev, 'wrong build'],
    ],
  );
  const after = await call(url, 'GET', '/api/v1/endpoints/e/traffic');
  assert.deepEqual((after.body as { staged: unknown }).staged, []);
});

test('rollout API: bad steps and thresholds name each field; unknown versions, models, endpoints 404', async () => {
  const { url } = await platformWithEndpoint();
  const start = (body: unknown, endpoint = 'e') =>
    call(url, 'POST', `/api/v1/endpoints/${endpoint}/rollout`, body);

  const bad = await start({
    model: 'm',
    version: 2,
    steps: [0, 50, 40],
    intervalMs: 500,
    thresholds: { maxErrorRate: 1.5, minRequests: 0 },
  });
  assert.equal(bad.status, 400);
  assert.equal(errorCode(bad), 'KILN_VALIDATION_FAILED');
  assert.deepEqual(problemFields(bad.body), [
    'steps[0]',
    'steps[2]',
    'steps',
    'intervalMs',
    'thresholds.maxErrorRate',
    'thresholds.minRequests',
    // It defaults to minRequests, so it is as wrong.
    'thresholds.minSliceRequests',
  ]);
  assert.match(
    (bad.body as { error: { message: string } }).error.message,
    /steps\[0\]: step 0 must be a whole percent in \[1, 100\]/,
  );
  const blueGreenSteps = await start({
    model: 'm',
    version: 2,
    strategy: 'blue-green',
    steps: [50, 100],
  });
  assert.equal(blueGreenSteps.status, 400);
  assert.deepEqual(problemFields(blueGreenSteps.body), ['steps']);
  const typo = await start({ model: 'm', version: 2, stepz: [1, 100] });
  assert.equal(typo.status, 400);
  assert.equal(errorCode(typo), 'KILN_VALIDATION_FAILED');

  const unknownVersion = await start({ model: 'm', version: 9 });
  assert.equal(unknownVersion.status, 404);
  assert.equal(errorCode(unknownVersion), 'KILN_VERSION_NOT_FOUND');
  // The canary becomes part of the policy: refused as a policy naming it would be (here an
  // hf-llm canary on a v2 endpoint, which would answer its share of requests with errors).
  await registerFixture(url, 'llm', 'hf-llm', 'tiny-llm');
  const otherProtocol = await start({ model: 'llm', version: 1 });
  assert.equal(otherProtocol.status, 400, JSON.stringify(otherProtocol.body));
  assert.equal(errorCode(otherProtocol), 'KILN_TRAFFIC_POLICY_INVALID');
  assert.match(
    JSON.stringify(otherProtocol.body),
    /llm:1 is hf-llm, endpoint e serves onnx: one speaks the OpenAI API, the other v2/,
  );
  const unknownModel = await start({ model: 'nope', version: 1 });
  assert.equal(unknownModel.status, 404);
  assert.equal(errorCode(unknownModel), 'KILN_MODEL_NOT_FOUND');
  const unknownEndpoint = await start({ model: 'm', version: 2 }, 'none');
  assert.equal(unknownEndpoint.status, 404);
  assert.equal(errorCode(unknownEndpoint), 'KILN_ENDPOINT_NOT_FOUND');
  const same = await start({ model: 'm', version: 1 });
  assert.equal(same.status, 400);
  assert.match((same.body as { error: { message: string } }).error.message, /already the stable/);

  const none = await call(url, 'GET', '/api/v1/endpoints/e/rollout');
  assert.equal(none.status, 404);
  assert.equal(errorCode(none), 'KILN_ROLLOUT_NOT_FOUND');
  const noId = await call(url, 'GET', '/api/v1/rollouts/ro_nope');
  assert.equal(noId.status, 404);
  assert.equal(errorCode(noId), 'KILN_ROLLOUT_NOT_FOUND');
  const noAction = await call(url, 'POST', '/api/v1/endpoints/e/rollout/explode');
  assert.equal(noAction.status, 404);
  // Nothing refused left a trace: the deploy is the one event.
  const history = await call(url, 'GET', '/api/v1/endpoints/e/history');
  assert.deepEqual(
    (history.body as { items: TrafficEvent[] }).items.map((e) => e.action),
    ['deploy'],
  );
  assert.deepEqual(
    ((await call(url, 'GET', '/api/v1/rollouts')).body as { items: unknown[] }).items,
    [],
  );
});

test('golden sets: PUT checks every case, GET returns it; unknown versions and missing sets 404', async () => {
  const { url } = await platformWithEndpoint();
  const golden = {
    tolerance: { absolute: 1e-5, relative: 1e-4 },
    cases: [
      {
        request: { inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2], data: [1, 2] }] },
        outputs: [{ name: 'y', data: [[0.5, 1.5]] }],
      },
    ],
  };
  const missing = await call(url, 'GET', '/api/v1/models/m/versions/2/golden');
  assert.equal(missing.status, 404);
  assert.equal(errorCode(missing), 'KILN_GOLDEN_SET_NOT_FOUND');

  const put = await call(url, 'PUT', '/api/v1/models/m/versions/2/golden', golden);
  assert.equal(put.status, 200, JSON.stringify(put.body));
  const got = await call(url, 'GET', '/api/v1/models/m/versions/2/golden');
  assert.equal(got.status, 200);
  const stored = got.body as {
    model: string;
    version: number;
    cases: unknown[];
    tolerance: unknown;
  };
  assert.equal(stored.model, 'm');
  assert.equal(stored.version, 2);
  assert.deepEqual(stored.tolerance, golden.tolerance);
  // Nested output data is kept flat, as v2 answers list it.
  assert.deepEqual(stored.cases, [
    { request: golden.cases[0]?.request, outputs: [{ name: 'y', data: [0.5, 1.5] }] },
  ]);

  const bad = await call(url, 'PUT', '/api/v1/models/m/versions/2/golden', {
    tolerance: { absolute: -1 },
    cases: [
      { request: {}, outputs: [] },
      { request: { inputs: [{}] }, outputs: [{ data: [1] }] },
    ],
  });
  assert.equal(bad.status, 400);
  assert.equal(errorCode(bad), 'KILN_GOLDEN_SET_INVALID');
  const problems = (bad.body as { error: { details: { problems: string[] } } }).error.details
    .problems;
  assert.deepEqual(
    problems.map((p) => p.split(':')[0]),
    ['tolerance.absolute', 'cases[0].request', 'cases[0].outputs', 'cases[1].outputs[0]'],
  );
  const empty = await call(url, 'PUT', '/api/v1/models/m/versions/2/golden', { cases: [] });
  assert.equal(errorCode(empty), 'KILN_GOLDEN_SET_INVALID');

  const unknown = await call(url, 'PUT', '/api/v1/models/m/versions/9/golden', golden);
  assert.equal(unknown.status, 404);
  assert.equal(errorCode(unknown), 'KILN_VERSION_NOT_FOUND');
  const unknownModel = await call(url, 'GET', '/api/v1/models/nope/versions/1/golden');
  assert.equal(unknownModel.status, 404);
  assert.equal(errorCode(unknownModel), 'KILN_MODEL_NOT_FOUND');
});
