// Bad input on the traffic API that reached past its checks (review of issue 13):
// - every way a version reaches an endpoint's traffic checks it as a policy does
//   (policy-versions-check.ts): a manual split, an experiment's variants and a rollout's
//   canary alike refuse a version that speaks another protocol than the endpoint's callers
//   (an hf-llm version answers the OpenAI API, an onnx endpoint's callers speak v2), and
//   nothing is written;
// - a rollout's psiBins is bounded (each bin is a quantile lookup on every analysis);
// - an experiment outcome too large for the stored running moments is refused, so the
//   metric is not broken for every later call.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  call,
  errorCode,
  readArtifact,
  register,
  registryFixtures,
  testPlatform,
} from '../helpers/platform.ts';

void test('an hf-llm version is refused on a v2 endpoint by a policy, an experiment and a rollout alike', async () => {
  const platform = await testPlatform({ dev: true });
  const { url } = platform;
  const onnx = await readArtifact(registryFixtures + 'mlp.onnx');
  assert.equal((await register(url, 'm', 'onnx', onnx)).status, 201);
  const llm = await readArtifact(registryFixtures + 'tiny-llm');
  assert.equal((await register(url, 'llm', 'hf-llm', llm)).status, 201);
  const deployed = await call(url, 'PUT', '/api/v1/endpoints/heart', {
    model: 'm',
    version: 1,
    replicas: 0,
  });
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  const variants = [
    { model: 'm', version: 1, weight: 50 },
    { model: 'llm', version: 1, weight: 50 },
  ];

  const policy = await call(url, 'PUT', '/api/v1/endpoints/heart/traffic', { versions: variants });
  assert.equal(policy.status, 400, JSON.stringify(policy.body));
  assert.equal(errorCode(policy), 'KILN_TRAFFIC_POLICY_INVALID');

  const experiment = await call(url, 'POST', '/api/v1/experiments', {
    endpoint: 'heart',
    name: 'protocols',
    variants,
  });
  assert.equal(experiment.status, 400, JSON.stringify(experiment.body));
  assert.equal(errorCode(experiment), 'KILN_TRAFFIC_POLICY_INVALID');
  assert.match(JSON.stringify(experiment.body), /llm:1 is hf-llm/);

  const rollout = await call(url, 'POST', '/api/v1/endpoints/heart/rollout', {
    model: 'llm',
    version: 1,
    steps: [50, 100],
  });
  assert.equal(rollout.status, 400, JSON.stringify(rollout.body));
  assert.equal(errorCode(rollout), 'KILN_TRAFFIC_POLICY_INVALID');
  assert.match(JSON.stringify(rollout.body), /llm:1 is hf-llm/);

  // Nothing was written: no policy, no experiment, no rollout.
  const traffic = await call(url, 'GET', '/api/v1/endpoints/heart/traffic');
  assert.equal(traffic.status, 200);
  assert.equal((traffic.body as { policy: unknown }).policy, null);
  const experiments = await call(url, 'GET', '/api/v1/experiments?endpoint=heart');
  assert.deepEqual((experiments.body as { items: unknown[] }).items, []);
  const status = await call(url, 'GET', '/api/v1/endpoints/heart/rollout');
  assert.equal(errorCode(status), 'KILN_ROLLOUT_NOT_FOUND');
});

void test('a rollout asking for a million PSI bins is a 400 naming the field, not a control plane busy for seconds each tick', async () => {
  const platform = await testPlatform({ dev: true });
  const { url } = platform;
  const onnx = await readArtifact(registryFixtures + 'mlp.onnx');
  assert.equal((await register(url, 'm', 'onnx', onnx)).status, 201);
  assert.equal((await register(url, 'm', 'onnx', onnx)).status, 201);
  const deployed = await call(url, 'PUT', '/api/v1/endpoints/heart', {
    model: 'm',
    version: 1,
    replicas: 0,
  });
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  const rollout = await call(url, 'POST', '/api/v1/endpoints/heart/rollout', {
    model: 'm',
    version: 2,
    thresholds: { psiBins: 1e6 },
  });
  assert.equal(rollout.status, 400, JSON.stringify(rollout.body));
  assert.equal(errorCode(rollout), 'KILN_VALIDATION_FAILED');
  assert.match(JSON.stringify(rollout.body), /thresholds\.psiBins/);
});

void test('outcomes too large for the running moments are a 400; the metric keeps working after', async () => {
  const platform = await testPlatform({ dev: true });
  const { url } = platform;
  const onnx = await readArtifact(registryFixtures + 'mlp.onnx');
  assert.equal((await register(url, 'm', 'onnx', onnx)).status, 201);
  assert.equal((await register(url, 'm', 'onnx', onnx)).status, 201);
  const deployed = await call(url, 'PUT', '/api/v1/endpoints/heart', {
    model: 'm',
    version: 1,
    replicas: 0,
  });
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  const created = await call(url, 'POST', '/api/v1/experiments', {
    endpoint: 'heart',
    name: 'revenue',
    variants: [
      { model: 'm', version: 1, weight: 50 },
      { model: 'm', version: 2, weight: 50 },
    ],
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const id = (created.body as { id: string }).id;
  const outcomes = (values: readonly number[]) =>
    call(url, 'POST', `/api/v1/experiments/${id}/outcomes`, {
      outcomes: values.map((value) => ({ metric: 'revenue', kind: 'mean', value, variant: 'm:1' })),
    });
  const huge = await outcomes([1e200, -1e200]);
  assert.equal(huge.status, 400, JSON.stringify(huge.body));
  assert.equal(errorCode(huge), 'KILN_VALIDATION_FAILED');
  assert.match(JSON.stringify(huge.body), /outcomes\[0\]\.value/);
  const fine = await outcomes([12.5, 7.5]);
  assert.equal(fine.status, 200, JSON.stringify(fine.body));
  const report = await call(url, 'GET', `/api/v1/experiments/${id}/report`);
  assert.equal(report.status, 200, JSON.stringify(report.body));
});
