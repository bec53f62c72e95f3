// The OpenAI routes over a fake engine (the real tokenizer): what the worker answers for each
// way the engine can refuse or fail — queue full (429, the choices already queued withdrawn),
// closed (503), too long (400), an error event before or during a stream (500, or an error
// event then [DONE], the other choices cancelled) — and kv_cache_full reported as `length`.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
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
