// The OpenAI routes over a fake engine (the real tokenizer): what the worker answers for each
// way the engine can refuse or fail — queue full (429, the choices already queued withdrawn),
// closed (503), too long (400), an error event before or during a stream (500, or an error
// event then [DONE], the other choices cancelled) — and kv_cache_full reported as `length`.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import type {
  EngineEvent,
  EngineRequest,
  LlmEngine,
  SubmitResult,
} from '../../../src/llm/serving/engine-api.ts';
import { resolveLlmServingConfig } from '../../../src/llm/serving/llm-serving-config.ts';
import { LlmMetrics } from '../../../src/worker/llm/llm-metrics.ts';
import type { LlmService } from '../../../src/worker/llm/llm-service.ts';
import { handleOpenAiRoute } from '../../../src/worker/llm/openai-routes.ts';
import type { WorkerSpec } from '../../../src/worker/worker-spec.ts';
import { until } from '../../helpers/until.ts';
import { referenceParts } from './llm-worker-harness.ts';

class FakeEngine implements LlmEngine {
  readonly contextLength = 512;
  submitted: { request: EngineRequest; emit: (events: EngineEvent[]) => void }[] = [];
  cancelled: string[] = [];
  /** What submit answers for the i-th request of the next call (undefined: ok). */
  refuse: ((index: number) => SubmitResult | undefined) | null = null;
  submit(request: EngineRequest, onEvents: (events: readonly EngineEvent[]) => void): SubmitResult {
    const refusal = this.refuse?.(this.submitted.length);
    if (refusal !== undefined) return refusal;
    this.submitted.push({ request, emit: onEvents });
    return { ok: true };
  }
  cancel(id: string): void {
    this.cancelled.push(id);
  }
  pause(): void {}
  resume(): void {}
  load() {
    return {
      running: 0,
      waiting: 0,
      paused: 0,
      kvBlocksUsed: 0,
      kvBlocksTotal: 8,
      kvUtilization: 0,
    };
  }
  stats() {
    return Promise.resolve({
      ...this.load(),
      promptTokensTotal: 0,
      generationTokensTotal: 0,
      prefixQueriedTokensTotal: 0,
      prefixHitTokensTotal: 0,
      preemptionsTotal: 0,
      stepsTotal: 0,
      pausedEvictionsTotal: 0,
    });
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

let engine: FakeEngine;
let server: Server;
let url: string;

before(async () => {
  engine = new FakeEngine();
  const { tokenizer } = await referenceParts();
  const service: LlmService = {
    engine,
    tokenizer,
    config: resolveLlmServingConfig({}),
    metrics: new LlmMetrics(new Registry()),
    createdSeconds: 0,
    inflight: 0,
    tokenTexts: new Map(),
  };
  const spec = { endpoint: 'tiny', model: 'tiny-llama', format: 'hf-llm', maxBodyBytes: 1e6 };
  server = createServer((request, response) => {
    void handleOpenAiRoute(
      request,
      response,
      request.url ?? '/',
      { spec: spec as WorkerSpec, service, accepting: true, hold: () => undefined },
      {},
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => server.close());

function post(body: Record<string, unknown>): Promise<Response> {
  return fetch(`${url}/v1/completions`, {
    method: 'POST',
    body: JSON.stringify({ model: 'tiny', prompt: 'hi', max_tokens: 4, ...body }),
  });
}

function reset(): void {
  engine.submitted = [];
  engine.cancelled = [];
  engine.refuse = null;
}

const done = (requestId: string, reason: 'stop' | 'length' | 'kv_cache_full'): EngineEvent => ({
  kind: 'done',
  requestId,
  reason,
  text: '',
  promptTokens: 2,
  completionTokens: 1,
  cachedPromptTokens: 0,
});
const token = (requestId: string, text: string): EngineEvent => ({
  kind: 'token',
  requestId,
  token: 65,
  text,
  logprob: null,
  topLogprobs: [],
});

test('queue full on the third choice: 429 queue_full, the two queued withdrawn', async () => {
  reset();
  engine.refuse = (i) =>
    i === 2 ? { ok: false, reason: 'queue_full', message: '256 requests wait' } : undefined;
  const response = await post({ n: 3 });
  assert.equal(response.status, 429);
  assert.equal(response.headers.get('retry-after'), '1');
  const body = (await response.json()) as { error: Record<string, unknown> };
  assert.equal(body.error.code, 'queue_full');
  assert.equal(body.error.type, 'rate_limit_error');
  assert.deepEqual(
    engine.cancelled.sort(),
    engine.submitted.map((s) => s.request.requestId).sort(),
  );
  assert.equal(engine.cancelled.length, 2);
});

test('an engine that is closed is a 503; a prompt it finds too long a 400', async () => {
  reset();
  engine.refuse = () => ({ ok: false, reason: 'closed', message: 'shutting down' });
  const closed = await post({});
  assert.equal(closed.status, 503);
  assert.equal(closed.headers.get('retry-after'), '1');
  engine.refuse = () => ({ ok: false, reason: 'too_long', message: 'larger than the cache' });
  const long = await post({});
  assert.equal(long.status, 400);
  assert.equal(((await long.json()) as { error: { param: string } }).error.param, 'prompt');
});

test('an engine error on one choice: a 500, the other choice cancelled', async () => {
  reset();
  const pending = post({ n: 2 });
  await until(() => engine.submitted.length === 2, 'both submitted');
  const [first, second] = engine.submitted;
  first!.emit([{ kind: 'error', requestId: first!.request.requestId, message: 'thread died' }]);
  const response = await pending;
  assert.equal(response.status, 500);
  const body = (await response.json()) as { error: Record<string, unknown> };
  assert.equal(body.error.type, 'server_error');
  assert.match(String(body.error.message), /thread died/);
  assert.deepEqual(engine.cancelled, [second!.request.requestId]);
});

test('an engine error mid-stream: an error event, then [DONE]; kv_cache_full reads as length', async () => {
  reset();
  const pending = post({ n: 2, stream: true });
  await until(() => engine.submitted.length === 2, 'both submitted');
  const [first, second] = engine.submitted;
  const a = first!.request.requestId;
  const b = second!.request.requestId;
  const response = await pending;
  assert.equal(response.status, 200);
  first!.emit([token(a, 'A'), done(a, 'kv_cache_full')]);
  second!.emit([token(b, 'B')]);
  second!.emit([{ kind: 'error', requestId: b, message: 'thread died' }]);
  const events = (await response.text()).split('\n\n').filter((e) => e !== '');
  assert.equal(events.at(-1), 'data: [DONE]');
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as Record<string, unknown>);
  const choices = chunks.flatMap(
    (c) => (c.choices ?? []) as { index: number; text: string; finish_reason: string | null }[],
  );
  assert.deepEqual(choices, [
    { index: 0, text: 'A', logprobs: null, finish_reason: 'length' },
    { index: 1, text: 'B', logprobs: null, finish_reason: null },
  ]);
  assert.match(String((chunks.at(-1)!.error as { message: string }).message), /thread died/);
  assert.deepEqual(engine.cancelled, []); // nothing was left live to cancel
});

test('a chat choice opens (role chunk) with its first output, not before: a queued stream sends no chunk', async () => {
  // As vLLM sends it. A role chunk written at once would reach the client (and the
  // gateway, whose time-to-first-token histogram and prefill estimate take a stream's first
  // byte as its first token) while the request still waits in the engine's queue.
  reset();
  const pending = fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    body: JSON.stringify({
      model: 'tiny',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 4,
      n: 2,
      stream: true,
    }),
  });
  await until(() => engine.submitted.length === 2, 'both submitted');
  const [first, second] = engine.submitted;
  const a = first!.request.requestId;
  const b = second!.request.requestId;
  const response = await pending;
  assert.equal(response.status, 200);
  // Choice 1 gets its first token before choice 0: its role chunk comes first.
  second!.emit([token(b, 'B')]);
  first!.emit([token(a, 'A'), done(a, 'stop')]);
  second!.emit([done(b, 'length')]);
  const events = (await response.text()).split('\n\n').filter((e) => e !== '');
  assert.equal(events.at(-1), 'data: [DONE]');
  const deltas = events.slice(0, -1).map((e) => {
    const chunk = JSON.parse(e.slice(6)) as {
      choices: { index: number; delta: Record<string, string>; finish_reason: string | null }[];
    };
    const choice = chunk.choices[0]!;
    return [choice.index, choice.delta, choice.finish_reason];
  });
  assert.deepEqual(deltas, [
    [1, { role: 'assistant', content: '' }, null],
    [1, { content: 'B' }, null],
    [0, { role: 'assistant', content: '' }, null],
    [0, { content: 'A' }, 'stop'],
    [1, {}, 'length'],
  ]);
});

test('an echoed streamed completion sends its prompt with each choice first output', async () => {
  reset();
  const pending = post({ stream: true, echo: true, n: 2 });
  await until(() => engine.submitted.length === 2, 'both submitted');
  const [first, second] = engine.submitted;
  const a = first!.request.requestId;
  const b = second!.request.requestId;
  const response = await pending;
  second!.emit([token(b, ' there'), done(b, 'length')]);
  first!.emit([token(a, ' here'), done(a, 'length')]);
  const texts = (await response.text())
    .split('\n\n')
    .filter((e) => e.startsWith('data: {'))
    .map((e) => {
      const choice = (JSON.parse(e.slice(6)) as { choices: { index: number; text: string }[] })
        .choices[0]!;
      return `${choice.index}:${choice.text}`;
    });
  assert.deepEqual(texts, ['1:hi', '1: there', '0:hi', '0: here']);
});

test('an answer tells the gateway its tokens: kiln-usage on a whole answer, as the trailer of a stream', async () => {
  reset();
  const whole = post({});
  await until(() => engine.submitted.length === 1, 'submitted');
  const first = engine.submitted[0]!.request.requestId;
  engine.submitted[0]!.emit([token(first, 'A'), done(first, 'stop')]);
  const response = await whole;
  assert.equal(response.status, 200);
  const { usage } = (await response.json()) as {
    usage: { prompt_tokens: number; completion_tokens: number };
  };
  assert.equal(
    response.headers.get('kiln-usage'),
    `prompt=${usage.prompt_tokens};completion=${usage.completion_tokens}`,
  );

  // A stream, without include_usage: its tokens still arrive, in the trailer it declared.
  reset();
  const streamed = new Promise<{ trailer: string | undefined; usage: string | undefined }>(
    (resolve, reject) => {
      const request = httpRequest(`${url}/v1/completions`, { method: 'POST' }, (reply) => {
        reply.resume();
        reply.on('end', () =>
          resolve({ trailer: reply.headers.trailer, usage: reply.trailers['kiln-usage'] }),
        );
        reply.on('error', reject);
      });
      request.on('error', reject);
      request.end(JSON.stringify({ model: 'tiny', prompt: 'hi', max_tokens: 4, stream: true }));
    },
  );
  await until(() => engine.submitted.length === 1, 'stream submitted');
  const id = engine.submitted[0]!.request.requestId;
  engine.submitted[0]!.emit([
    token(id, 'A'),
    token(id, 'B'),
    {
      kind: 'done',
      requestId: id,
      reason: 'stop',
      text: '',
      promptTokens: 2,
      completionTokens: 2,
      cachedPromptTokens: 0,
    },
  ]);
  assert.deepEqual(await streamed, {
    trailer: 'kiln-usage',
    usage: `prompt=${usage.prompt_tokens};completion=2`,
  });
});
