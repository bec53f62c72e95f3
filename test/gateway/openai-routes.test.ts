// The OpenAI routes on the gateway's port, with the `openai` npm client unmodified against
// the gateway and fake hf-llm workers behind it: answers and streams pass through, and the
// gateway's own refusals are in OpenAI's error shape (so the client raises its usual errors).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import OpenAI from 'openai';
import type { ApiKeyGrant } from '../../src/gateway/routing-snapshot.ts';
import { fakeLlmWorker, streamPieces } from './fake-llm-worker.ts';
import {
  call,
  endpointRoute,
  fakeWorker,
  replicaRoute,
  snapshot,
  testGateway,
} from './gateway-harness.ts';

const sha = (key: string): string => createHash('sha256').update(key).digest('hex');
const grants: ApiKeyGrant[] = [
  { id: 'k1', sha256: sha('chat-team-key'), team: 'chat', endpoint: null },
  { id: 'k2', sha256: sha('coder-only-key'), team: null, endpoint: 'coder' },
];

const llm = await fakeLlmWorker('r1');
const tabular = await fakeWorker();
const llmRoute = (name: string, team: string, replicas = [replicaRoute(llm, 'r1')]) =>
  endpointRoute({ name, team, model: `${name}-model`, format: 'hf-llm', schema: null, replicas });
const gateway = await testGateway(
  snapshot(
    1,
    [
      llmRoute('assistant', 'chat'),
      llmRoute('coder', 'chat'),
      llmRoute('limited', 'tight'),
      llmRoute('cold', 'chat', []),
      endpointRoute({ replicas: [replicaRoute(tabular, 't1')] }), // fraud: onnx, team risk
    ],
    {
      auth: 'api-keys',
      apiKeys: [
        ...grants,
        { id: 'k3', sha256: sha('tight-key'), team: 'tight', endpoint: null },
        { id: 'k4', sha256: sha('risk-team-key'), team: 'risk', endpoint: null },
      ],
      teamLimits: [{ team: 'tight', requestsPerSecond: 0.001, burst: 1 }],
    },
  ),
);
const client = (apiKey = 'chat-team-key'): OpenAI =>
  new OpenAI({ apiKey, baseURL: `${gateway.url}/v1`, maxRetries: 0 });

test('completions and chat completions reach the replica and come back unchanged', async () => {
  const completion = await client().completions.create({
    model: 'assistant',
    prompt: 'Say hello',
    max_tokens: 8,
  });
  assert.equal(completion.choices[0]?.text, 'from r1');
  const chat = await client().chat.completions.create({
    model: 'assistant',
    messages: [{ role: 'user', content: 'Say hello' }],
  });
  assert.equal(chat.choices[0]?.message.content, 'from r1');
  const [first, second] = llm.received.slice(-2);
  assert.equal(first?.path, '/v1/completions');
  assert.equal(second?.path, '/v1/chat/completions');
  // The body goes as the client sent it, and the key stays at the gateway.
  assert.deepEqual(second?.body.messages, [{ role: 'user', content: 'Say hello' }]);
  assert.equal(second?.headers.authorization, undefined);
});

test('streamed completions and chat completions arrive chunk by chunk', async () => {
  const stream = await client().completions.create({
    model: 'assistant',
    prompt: 'Say hello',
    stream: true,
  });
  let text = '';
  let finish: string | null = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.text ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(text, streamPieces.join(''));
  assert.equal(finish, 'stop');

  const chat = await client().chat.completions.create({
    model: 'assistant',
    messages: [{ role: 'user', content: 'Say hello' }],
    stream: true,
  });
  let content = '';
  let role: string | undefined;
  for await (const chunk of chat) {
    role ??= chunk.choices[0]?.delta.role;
    content += chunk.choices[0]?.delta.content ?? '';
  }
  assert.equal(role, 'assistant');
  assert.equal(content, streamPieces.join(''));
});

test('the load report header stays between worker and gateway', async () => {
  const reply = await call(
    gateway.url,
    'POST',
    '/v1/completions',
    JSON.stringify({ model: 'assistant', prompt: 'x' }),
    { authorization: 'Bearer chat-team-key' },
  );
  assert.equal(reply.status, 200);
  assert.equal(reply.headers.get('kiln-load'), null);
  assert.equal(reply.headers.get('kiln-endpoint'), 'assistant');
  assert.equal(reply.headers.get('kiln-replica'), 'r1');
});

test('GET /v1/models lists the LLM endpoints the key may use', async () => {
  const models = await client().models.list();
  assert.deepEqual(models.data.map((m) => m.id).sort(), ['assistant', 'coder', 'cold']);
  for (const model of models.data) {
    assert.equal(model.object, 'model');
    assert.equal(model.owned_by, 'chat');
    assert.equal(typeof model.created, 'number');
  }
  const scoped = await client('coder-only-key').models.list();
  assert.deepEqual(
    scoped.data.map((m) => m.id),
    ['coder'],
  );
  const one = await client().models.retrieve('assistant');
  assert.equal(one.id, 'assistant');
  assert.equal(one.object, 'model');
});

test('/v1/models carries max_model_len, taken once from a replica of each LLM endpoint', async () => {
  const lengths = async (): Promise<Record<string, unknown>> => {
    const models = await client().models.list();
    return Object.fromEntries(
      models.data.map((m) => [m.id, (m as unknown as { max_model_len?: number }).max_model_len]),
    );
  };
  // As vLLM lists it; `cold` has no replica to ask, so it has none (as before).
  assert.deepEqual(await lengths(), { assistant: 2048, coder: 2048, cold: undefined });
  const asked = llm.modelRequests;
  assert.ok(asked >= 1);
  const one = await client().models.retrieve('assistant');
  assert.equal((one as unknown as { max_model_len?: number }).max_model_len, 2048);
  assert.deepEqual(await lengths(), { assistant: 2048, coder: 2048, cold: undefined });
  assert.equal(llm.modelRequests, asked, 'known once per endpoint version, not asked again');
});

test('a missing or unknown key is a 401 in OpenAI shape', async () => {
  await assert.rejects(
    client('wrong-key').completions.create({ model: 'assistant', prompt: 'x' }),
    (error: unknown) => {
      assert.ok(error instanceof OpenAI.AuthenticationError);
      assert.equal(error.status, 401);
      assert.equal(error.type, 'authentication_error');
      assert.equal(error.code, 'invalid_api_key');
      return true;
    },
  );
  await assert.rejects(client('wrong-key').models.list(), OpenAI.AuthenticationError);
  const bare = await call(gateway.url, 'GET', '/v1/models');
  assert.equal(bare.status, 401);
  assert.deepEqual(Object.keys((bare.json as { error: object }).error).sort(), [
    'code',
    'message',
    'param',
    'type',
  ]);
});

test('an unknown model, or one that is not an LLM, is a 404 model_not_found', async () => {
  for (const model of ['nope', 'fraud']) {
    await assert.rejects(
      client().chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }] }),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.NotFoundError, String(error));
        assert.equal(error.code, 'model_not_found');
        assert.equal(error.param, 'model');
        return true;
      },
    );
  }
  // A key scoped elsewhere may not use the endpoint.
  await assert.rejects(
    client('coder-only-key').completions.create({ model: 'assistant', prompt: 'x' }),
    OpenAI.PermissionDeniedError,
  );
});

test('malformed JSON and a missing model are 400s naming the problem', async () => {
  const headers = { authorization: 'Bearer chat-team-key' };
  const malformed = await call(gateway.url, 'POST', '/v1/completions', '{"model":', headers);
  assert.equal(malformed.status, 400);
  const error = (malformed.json as { error: Record<string, unknown> }).error;
  assert.equal(error.type, 'invalid_request_error');
  assert.equal(error.code, 'invalid_json');
  assert.match(String(error.message), /not valid JSON/);
  const missing = await call(
    gateway.url,
    'POST',
    '/v1/chat/completions',
    '{"messages":[]}',
    headers,
  );
  assert.equal(missing.status, 400);
  assert.equal((missing.json as { error: { param: string } }).error.param, 'model');
  const array = await call(gateway.url, 'POST', '/v1/completions', '[1]', headers);
  assert.equal(array.status, 400);
});

test('a team over its rate is a 429 in OpenAI shape with Retry-After', async () => {
  const tight = client('tight-key');
  await tight.completions.create({ model: 'limited', prompt: 'x' });
  await assert.rejects(
    tight.completions.create({ model: 'limited', prompt: 'x' }),
    (error: unknown) => {
      assert.ok(error instanceof OpenAI.RateLimitError);
      assert.equal(error.code, 'rate_limit_exceeded');
      assert.equal(error.type, 'rate_limit_error');
      assert.ok(Number(error.headers?.get('retry-after')) >= 1);
      return true;
    },
  );
});

test('an endpoint with no ready replica is a retryable 503', async () => {
  const reply = await call(
    gateway.url,
    'POST',
    '/v1/completions',
    JSON.stringify({ model: 'cold', prompt: 'x' }),
    { authorization: 'Bearer chat-team-key' },
  );
  assert.equal(reply.status, 503);
  assert.equal(reply.headers.get('retry-after'), '1');
  assert.equal((reply.json as { error: { code: string } }).error.code, 'no_ready_replica');
});

test('KServe v1 paths of other endpoints are unchanged beside the OpenAI routes', async () => {
  const riskKey = { 'x-api-key': 'risk-team-key' };
  const status = await call(gateway.url, 'GET', '/v1/models/fraud', undefined, riskKey);
  assert.deepEqual(status.json, { name: 'fraud', ready: true });
  const instances = JSON.stringify({ instances: [[1, 2, 3]] });
  const predict = await call(gateway.url, 'POST', '/v1/models/fraud:predict', instances, riskKey);
  assert.equal(predict.status, 200);
  assert.deepEqual(predict.json, { predictions: [[0.25]] });
  // An LLM endpoint's v1 predict path is not the predict protocol.
  const headers = { 'x-api-key': 'chat-team-key' };
  const llmPredict = await call(
    gateway.url,
    'POST',
    '/v1/models/assistant:predict',
    '{"instances":[]}',
    headers,
  );
  assert.equal(llmPredict.status, 404);
});

test('requests are counted in the same metrics as v2, and streams in the TTFT histogram', async () => {
  const text = await gateway.metricsText();
  assert.match(
    text,
    /kiln_gateway_requests_total\{endpoint="assistant",version="3",code="200"\} [1-9]/,
  );
  assert.match(text, /kiln_gateway_requests_total\{endpoint="limited",version="3",code="429"\} 1/);
  assert.match(text, /kiln_gateway_llm_ttft_seconds_count\{endpoint="assistant"\} [1-9]/);
  assert.match(text, /kiln_gateway_rejected_total\{endpoint="limited",reason="rate_limited"\} 1/);
  assert.match(
    text,
    /kiln_gateway_llm_routed_total\{endpoint="assistant",policy="load-prefix",reason="[a-z_]+"\} [1-9]/,
  );
});
