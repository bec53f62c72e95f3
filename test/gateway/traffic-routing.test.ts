// Traffic policies at the gateway (issue 13): the split over variants, sticky by caller key,
// each variant checked under its own schema and answering with its own version and model,
// a request re-picked when a newer snapshot changes the policy mid-flight.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { createRandom } from '../../src/core/random.ts';
import { compileTrafficSplit, type TrafficSplit } from '../../src/traffic/traffic-split.ts';
import { fakeLlmWorker } from './fake-llm-worker.ts';
import {
  call,
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  snapshot,
  testGateway,
  validRequest,
  type Reply,
} from './gateway-harness.ts';
import {
  answerOf,
  policyEndpoint,
  requestsCounted,
  stubControlPlane,
  totals,
  variant,
} from './traffic-harness.ts';

/** The split the control plane would compile for the same policy (experiment attribution). */
function splitFor(salt: string, weights: readonly [number, number][]): TrafficSplit {
  const compiled = compileTrafficSplit({
    endpoint: 'fraud',
    salt,
    versions: weights.map(([version, weight]) => ({ model: 'fraud-model', version, weight })),
  });
  assert.ok(compiled.ok);
  return compiled.split;
}

/** Sends `count` requests, `concurrency` at a time; `make(i)` gives each one's headers/body. */
async function sendMany(
  url: string,
  count: number,
  make: (i: number) => { headers?: Record<string, string>; body?: unknown },
  concurrency = 16,
): Promise<Reply[]> {
  const replies = new Array<Reply>(count);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      const i = next++;
      const { headers = {}, body = validRequest } = make(i);
      replies[i] = await infer(url, body, headers);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return replies;
}

test('without a caller key the split follows the weights within statistical bounds, and each answer names its version and model', async () => {
  const stable = await fakeWorker('ok', answerOf(0.25));
  const canary = await fakeWorker('ok', answerOf(0.75));
  const gateway = await testGateway(
    snapshot(1, [policyEndpoint([variant(stable, 3, 70), variant(canary, 4, 30, 'fraud-next')])]),
    { more: { random: createRandom(7).next } },
  );
  const n = 1000;
  const replies = await sendMany(gateway.url, n, () => ({}));
  let canaryCount = 0;
  for (const reply of replies) {
    assert.equal(reply.status, 200);
    const version = reply.headers.get('kiln-model-version');
    const model = reply.headers.get('kiln-model');
    const value = (reply.json as { outputs: { data: number[] }[] }).outputs[0]!.data[0];
    if (version === '4') {
      canaryCount += 1;
      assert.equal(model, 'fraud-next');
      assert.equal(value, 0.75, 'the canary answered');
    } else {
      assert.equal(version, '3');
      assert.equal(model, 'fraud-model');
      assert.equal(value, 0.25);
    }
  }
  assert.equal(stable.received.length + canary.received.length, n);
  assert.equal(canary.received.length, canaryCount);
  // Binomial(1000, 0.3): mean 300, sd 14.5; 4.5 sd either side.
  assert.ok(Math.abs(canaryCount - 300) < 65, `canary got ${canaryCount} of ${n}`);
});

test('a keyed caller gets the variant its sticky bucket says (the kiln-user header, else the body key path), the same every time', async () => {
  const stable = await fakeWorker('ok', answerOf(0.25));
  const canary = await fakeWorker('ok', answerOf(0.75));
  const gateway = await testGateway(
    snapshot(1, [
      policyEndpoint([variant(stable, 3, 75), variant(canary, 4, 25)], {
        salt: 'exp-42',
        keyPath: '$.parameters.user',
      }),
    ]),
  );
  const split = splitFor('exp-42', [
    [3, 75],
    [4, 25],
  ]);
  const users = 400;
  const byHeader = await sendMany(gateway.url, users, (i) => ({
    headers: { 'kiln-user': `user-${i}` },
  }));
  const byBody = await sendMany(gateway.url, users, (i) => ({
    body: { ...validRequest, parameters: { user: `user-${i}` } },
  }));
  let canaryUsers = 0;
  for (let i = 0; i < users; i++) {
    const expected = String(split.pick(`user-${i}`).version);
    assert.equal(byHeader[i]!.headers.get('kiln-model-version'), expected, `user-${i} by header`);
    assert.equal(byBody[i]!.headers.get('kiln-model-version'), expected, `user-${i} by body`);
    if (expected === '4') canaryUsers += 1;
  }
  // Binomial(400, 0.25): mean 100, sd 8.7.
  assert.ok(Math.abs(canaryUsers - 100) < 40, `${canaryUsers} of ${users} users on the canary`);
  // The header wins over the body.
  const user = Array.from({ length: users }, (_, i) => `user-${i}`);
  const onCanary = user.find((u) => split.pick(u).version === 4)!;
  const onStable = user.find((u) => split.pick(u).version === 3)!;
  const reply = await infer(
    gateway.url,
    { ...validRequest, parameters: { user: onStable } },
    { 'kiln-user': onCanary },
  );
  assert.equal(reply.headers.get('kiln-model-version'), '4');
});

test('a variant with no ready replica gives its requests to the first variant that has one', async () => {
  const stable = await fakeWorker('ok', answerOf(0.25));
  const gateway = await testGateway(
    snapshot(1, [policyEndpoint([variant(stable, 3, 50), variant(null, 4, 50)])]),
  );
  const replies = await sendMany(gateway.url, 40, (i) => ({ headers: { 'kiln-user': `u${i}` } }));
  for (const reply of replies) {
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get('kiln-model-version'), '3');
  }
});

test('a request is checked under the schema of the variant it is picked for; the other variant never sees what it refuses', async () => {
  const stable = await fakeWorker('ok', answerOf(0.25));
  const canary = await fakeWorker('ok', answerOf(0.75));
  const canaryVariant = {
    ...variant(canary, 4, 50),
    schema: {
      inputs: [{ name: 'z', datatype: 'FP32' as const, shape: [-1, 3] }],
      outputs: [{ name: 'y', datatype: 'FP32' as const, shape: [-1, 1] }],
    },
  };
  const gateway = await testGateway(
    snapshot(1, [policyEndpoint([variant(stable, 3, 50), canaryVariant])]),
  );
  const split = splitFor('salt-1', [
    [3, 50],
    [4, 50],
  ]);
  const users = Array.from({ length: 40 }, (_, i) => `user-${i}`);
  for (const user of users) {
    const reply = await infer(gateway.url, validRequest, { 'kiln-user': user });
    if (split.pick(user).version === 4) {
      assert.equal(reply.status, 400, `${user}: input x is not the canary's`);
      assert.match(reply.text, /z/);
      assert.equal(reply.headers.get('kiln-model-version'), '4');
    } else {
      assert.equal(reply.status, 200);
    }
  }
  assert.equal(canary.received.length, 0);
  assert.ok(stable.received.length > 0);
});

test('an endpoint without a policy answers with the model of its replica (kiln-model) as well as its version', async () => {
  const worker = await fakeWorker();
  const gateway = await testGateway(
    snapshot(1, [endpointRoute({ replicas: [replicaRoute(worker, 'r1')] })]),
  );
  const reply = await infer(gateway.url);
  assert.equal(reply.headers.get('kiln-model'), 'fraud-model');
  assert.equal(reply.headers.get('kiln-model-version'), '3');
  const refused = await infer(gateway.url, '{not json');
  assert.equal(refused.status, 400);
  assert.equal(refused.headers.get('kiln-model'), 'fraud-model');
  assert.equal(refused.headers.get('kiln-model-version'), '3');
});

test('a request whose body is still arriving when a newer snapshot changes the policy goes where the new policy puts it', async () => {
  const stable = await fakeWorker('ok', answerOf(0.25));
  const canary = await fakeWorker('ok', answerOf(0.75));
  const gateway = await testGateway(
    snapshot(1, [policyEndpoint([variant(stable, 3, 100), variant(canary, 4, 0)])]),
  );
  const body = Buffer.from(JSON.stringify(validRequest));
  const reply = await new Promise<{ status: number; version: string | undefined }>(
    (resolve, reject) => {
      const req = httpRequest(
        `${gateway.url}/v2/models/fraud/infer`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        },
        (res) => {
          res.resume();
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              version: res.headers['kiln-model-version'] as string | undefined,
            }),
          );
        },
      );
      req.on('error', reject);
      req.write(body.subarray(0, 10));
      // The door has let it in under snapshot 1; the policy moves before its body is in.
      req.on('socket', () => {
        void waitUntilRead(gateway.url).then(() => {
          gateway.setSnapshot(
            snapshot(2, [policyEndpoint([variant(stable, 3, 0), variant(canary, 4, 100)])]),
          );
          req.end(body.subarray(10));
        });
      });
    },
  );
  assert.equal(reply.status, 200);
  assert.equal(reply.version, '4');
  assert.equal(stable.received.length, 0);
});

/** Resolves once the gateway counts a request in flight (the first chunk is in). */
async function waitUntilRead(url: string): Promise<void> {
  for (;;) {
    const metrics = await fetch(`${url}/metrics`).then((r) => r.text());
    if (/kiln_gateway_inflight_requests\{endpoint="fraud"\} 1/.test(metrics)) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('an hf-llm endpoint with a policy: OpenAI requests go to the variant of their caller key (the `user` field or kiln-user), answers name it, and are counted', async () => {
  const control = await stubControlPlane();
  const stable = await fakeLlmWorker('stable');
  const canary = await fakeLlmWorker('canary');
  const llmVariant = (worker: { url: string }, version: number, weight: number) => ({
    model: 'chat-model',
    version,
    weight,
    format: 'hf-llm' as const,
    schema: null,
    replicas: [{ ...replicaRoute(worker, `llm-v${version}`, version), model: 'chat-model' }],
  });
  const variants = [llmVariant(stable, 1, 50), llmVariant(canary, 2, 50)];
  const gateway = await testGateway(
    snapshot(1, [
      endpointRoute({
        name: 'chat',
        model: 'chat-model',
        version: 1,
        format: 'hf-llm',
        schema: null,
        replicas: variants[0]!.replicas,
        traffic: {
          salt: 'llm-exp',
          keyPath: '$.user',
          sliceKey: null,
          slicePath: null,
          variants,
          shadows: [],
        },
      }),
    ]),
    { more: { controlUrl: control.url, reportTraffic: true, trafficReportIntervalMs: 50 } },
  );
  const compiled = compileTrafficSplit({
    endpoint: 'chat',
    salt: 'llm-exp',
    versions: [
      { model: 'chat-model', version: 1, weight: 50 },
      { model: 'chat-model', version: 2, weight: 50 },
    ],
  });
  assert.ok(compiled.ok);
  const n = 30;
  for (let i = 0; i < n; i++) {
    const user = `person-${i}`;
    const body = JSON.stringify({
      model: 'chat',
      messages: [{ role: 'user', content: 'hi' }],
      ...(i % 2 === 0 ? { user } : {}),
    });
    const headers: Record<string, string> = i % 2 === 0 ? {} : { 'kiln-user': user };
    const reply = await call(gateway.url, 'POST', '/v1/chat/completions', body, headers);
    assert.equal(reply.status, 200);
    const expected: number = compiled.split.pick(user).version;
    assert.equal(reply.headers.get('kiln-model-version'), String(expected), user);
    assert.equal(reply.headers.get('kiln-model'), 'chat-model');
    const text = (reply.json as { choices: { message: { content: string } }[] }).choices[0]!.message
      .content;
    assert.equal(text, expected === 1 ? 'from stable' : 'from canary');
  }
  await control.waitFor((reports) => requestsCounted(reports, 'chat') === n);
  assert.equal(
    totals(control.reports, 'chat').get('chat-model:2')?.requests,
    canary.received.length,
  );
});

test('v1 predict requests to an endpoint with a policy go to their caller key variant and name it', async () => {
  const stable = await fakeWorker('ok', answerOf(0.25));
  const canary = await fakeWorker('ok', answerOf(0.75), 200, { channel: true });
  const gateway = await testGateway(
    snapshot(1, [policyEndpoint([variant(stable, 3, 50), variant(canary, 4, 50, 'fraud-next')])]),
  );
  const split = splitFor('salt-1', [
    [3, 50],
    [4, 50],
  ]);
  for (let i = 0; i < 20; i++) {
    const user = `v1-user-${i}`;
    const reply = await call(
      gateway.url,
      'POST',
      '/v1/models/fraud:predict',
      JSON.stringify({ instances: [[1, 2, 3]] }),
      { 'kiln-user': user },
    );
    assert.equal(reply.status, 200);
    const expected = split.pick(user).version;
    assert.equal(reply.headers.get('kiln-model-version'), String(expected));
    assert.equal(reply.headers.get('kiln-model'), expected === 4 ? 'fraud-next' : 'fraud-model');
    assert.deepEqual(reply.json, { predictions: [[expected === 4 ? 0.75 : 0.25]] });
  }
});

test('under steady load, policy changes (new weights, a new salt, the policy removed and back) fail no request', async () => {
  const stable = await fakeWorker('ok', answerOf(0.25));
  const canary = await fakeWorker('ok', answerOf(0.75), 200, { channel: true });
  const policies = [
    policyEndpoint([variant(stable, 3, 95), variant(canary, 4, 5)], { salt: 'a' }),
    policyEndpoint([variant(stable, 3, 50), variant(canary, 4, 50)], { salt: 'a' }),
    policyEndpoint([variant(stable, 3, 0), variant(canary, 4, 100)], { salt: 'b' }),
    endpointRoute({ replicas: [replicaRoute(stable, 'v3-r1')] }),
  ];
  const gateway = await testGateway(snapshot(1, [policies[0]!]));
  let done = false;
  const load = (async () => {
    const replies: Reply[] = [];
    while (!done) {
      const batch = await sendMany(
        gateway.url,
        16,
        (i) => ({ headers: { 'kiln-user': `u${i}` } }),
        8,
      );
      replies.push(...batch);
    }
    return replies;
  })();
  for (let version = 2; version <= 13; version++) {
    // Some load under each policy before the next.
    while (stable.received.length + canary.received.length < version * 8) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal(
      gateway.setSnapshot(snapshot(version, [policies[version % policies.length]!])),
      true,
    );
  }
  done = true;
  const replies = await load;
  assert.ok(replies.length > 0);
  for (const reply of replies) {
    assert.equal(reply.status, 200, reply.text);
    assert.ok(['3', '4'].includes(reply.headers.get('kiln-model-version') ?? ''));
  }
});
