// The spans of one request through a real gateway and worker server (in this process, so an
// in-memory exporter sees both): the tree gateway → channel → worker → queue / batch →
// runtime / encode, its parent links and attributes, the caller's trace continued, and
// head sampling (an untraced request records nothing, on either side).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { SpanKind } from '@opentelemetry/api';
import {
  startTracing,
  type ProcessTracing,
} from '../../../src/observability/tracing/start-tracing.ts';
import { parseTraceparent } from '../../../src/observability/tracing/traceparent.ts';
import {
  call,
  endpointRoute,
  infer,
  replicaRoute,
  snapshot,
  testGateway,
} from '../../gateway/gateway-harness.ts';
import { schema, startStub } from '../../worker/stub-worker.ts';
import { closeChannels } from '../../../src/worker/worker-channel.ts';
import { fakeLlmWorker } from '../../gateway/fake-llm-worker.ts';

const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
const callerSpan = '00f067aa0ba902b7';
const callerTraceparent = `00-${callerTrace}-${callerSpan}-01`;

const request = (x: number): unknown => ({
  inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2], data: [x, x + 1] }],
});

async function setup(
  t: { after: (fn: () => Promise<void>) => void },
  options: { workerChannels: boolean; sampleRate: number },
): Promise<{ gatewayUrl: string; tracing: ProcessTracing; exporter: InMemorySpanExporter }> {
  const exporter = new InMemorySpanExporter();
  const tracing = await startTracing({ serviceName: 'kiln-test', exporter, scheduledDelayMs: 5 });
  t.after(() => tracing.shutdown());
  // Two rows make a batch, and nothing else does (the delay is far longer than any test):
  // the batch's size is known without timing anything.
  const worker = await startStub(
    { maxBatchSize: 2, maxDelayMicros: 600_000_000, maxQueue: 8 },
    0,
    {},
    tracing.tracer,
  );
  t.after(async () => {
    // The gateway's channel is an upgraded socket the server's close would wait for.
    closeChannels(worker.server);
    await worker.close();
  });
  const route = endpointRoute({
    name: 'm',
    model: 'm',
    version: 1,
    schema,
    replicas: [replicaRoute({ url: worker.url, channel: options.workerChannels }, 'm-1', 1)],
    tracing: { sampleRate: options.sampleRate },
  });
  const gateway = await testGateway(snapshot(1, [route]), {
    workerChannels: options.workerChannels,
    more: { tracing },
  });
  return { gatewayUrl: gateway.url, tracing, exporter };
}

function only(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((span) => span.name === name);
  assert.equal(found.length, 1, `one ${name} span (got ${spans.map((s) => s.name).join(', ')})`);
  return found[0]!;
}

function assertChild(child: ReadableSpan, parent: ReadableSpan): void {
  assert.equal(child.spanContext().traceId, parent.spanContext().traceId, child.name);
  assert.equal(
    child.parentSpanContext?.spanId,
    parent.spanContext().spanId,
    `${child.name}'s parent`,
  );
}

for (const workerChannels of [true, false]) {
  const how = workerChannels ? 'the worker channel' : 'plain HTTP';
  void test(`one traced request's span tree, continuing the caller's trace (${how})`, async (t) => {
    const { gatewayUrl, tracing, exporter } = await setup(t, { workerChannels, sampleRate: 0 });
    // The traced request and an untraced one (rate 0, no caller context) make one batch.
    const [traced, untraced] = await Promise.all([
      infer(gatewayUrl, request(1), { traceparent: callerTraceparent, tracestate: 'kiln=t1' }, 'm'),
      infer(gatewayUrl, request(5), {}, 'm'),
    ]);
    assert.equal(traced.status, 200, traced.text);
    assert.equal(untraced.status, 200, untraced.text);
    assert.deepEqual((traced.json as { outputs: { data: number[] }[] }).outputs[0]?.data, [2, 4]);

    // The caller's trace goes on under the gateway's span: same trace id, a new parent id.
    const answered = parseTraceparent(traced.headers.get('traceparent') ?? undefined);
    assert.equal(answered?.traceId, callerTrace);
    assert.notEqual(answered?.spanId, callerSpan);
    assert.equal(answered?.sampled, true);
    // The untraced request's new trace is marked unsampled, so the worker records none of it.
    assert.equal(
      parseTraceparent(untraced.headers.get('traceparent') ?? undefined)?.sampled,
      false,
    );

    await tracing.forceFlush();
    const spans = exporter.getFinishedSpans();
    assert.deepEqual(
      [...new Set(spans.map((span) => span.spanContext().traceId))],
      [callerTrace],
      'only the traced request is recorded',
    );
    assert.equal(spans.length, 7, spans.map((s) => s.name).join(', '));

    const gateway = only(spans, 'POST /v2/models/{model}/infer');
    assert.equal(gateway.kind, SpanKind.SERVER);
    assert.equal(gateway.parentSpanContext?.spanId, callerSpan);
    assert.equal(gateway.parentSpanContext?.isRemote, true);
    assert.equal(gateway.spanContext().spanId, answered?.spanId);
    assert.equal(gateway.spanContext().traceState?.get('kiln'), 't1');
    assert.deepEqual(
      {
        method: gateway.attributes['http.request.method'],
        route: gateway.attributes['http.route'],
        status: gateway.attributes['http.response.status_code'],
        endpoint: gateway.attributes['kiln.endpoint'],
        version: gateway.attributes['kiln.version'],
        replica: gateway.attributes['kiln.replica'],
      },
      {
        method: 'POST',
        route: '/v2/models/{model}/infer',
        status: 200,
        endpoint: 'm',
        version: '1',
        replica: 'm-1',
      },
    );

    const channel = only(spans, 'kiln.channel');
    assert.equal(channel.kind, SpanKind.CLIENT);
    assertChild(channel, gateway);
    assert.equal(channel.attributes['kiln.replica'], 'm-1');
    assert.equal(channel.attributes['kiln.transport'], workerChannels ? 'tcp' : 'http');
    assert.equal(channel.attributes['http.response.status_code'], 200);

    const worker = only(spans, 'kiln.worker');
    assert.equal(worker.kind, SpanKind.SERVER);
    assertChild(worker, channel);
    assert.equal(worker.parentSpanContext?.isRemote, true);
    // tracestate travels with the context to the worker.
    assert.equal(worker.spanContext().traceState?.get('kiln'), 't1');
    assert.deepEqual(
      [worker.attributes['kiln.endpoint'], worker.attributes['kiln.version']],
      ['m', '1'],
    );
    assert.equal(worker.attributes['kiln.replica'], 'm-1');
    assert.equal(worker.attributes['http.response.status_code'], 200);

    const queue = only(spans, 'kiln.queue');
    const batch = only(spans, 'kiln.batch');
    const runtime = only(spans, 'kiln.runtime');
    const encode = only(spans, 'kiln.encode');
    for (const child of [queue, batch, encode]) assertChild(child, worker);
    assertChild(runtime, batch);
    // Both requests ran as one batch of two rows; this one brought one of them.
    assert.equal(batch.attributes['kiln.batch.size'], 2);
    assert.equal(batch.attributes['kiln.batch.rows'], 2);
    assert.equal(batch.attributes['kiln.request.rows'], 1);
    assert.equal(runtime.attributes['kiln.runtime'], 'stub');
    // In order: the queue ends where the batch starts; the runtime lies within the batch.
    const ms = (time: readonly [number, number]): number => time[0] * 1e3 + time[1] / 1e6;
    assert.ok(ms(queue.endTime) <= ms(batch.startTime) + 0.001);
    assert.ok(ms(runtime.startTime) >= ms(batch.startTime) - 0.001);
    assert.ok(ms(runtime.endTime) <= ms(batch.endTime) + 0.001);
  });
}

void test('an endpoint sampled at rate 1 traces requests without a caller context', async (t) => {
  const { gatewayUrl, tracing, exporter } = await setup(t, { workerChannels: true, sampleRate: 1 });
  const replies = await Promise.all([
    infer(gatewayUrl, request(1), {}, 'm'),
    infer(gatewayUrl, request(2), {}, 'm'),
  ]);
  await tracing.forceFlush();
  const spans = exporter.getFinishedSpans();
  const traces = new Set(spans.map((span) => span.spanContext().traceId));
  assert.equal(traces.size, 2, 'two new traces');
  for (const reply of replies) {
    const context = parseTraceparent(reply.headers.get('traceparent') ?? undefined);
    assert.equal(context?.sampled, true);
    assert.ok(traces.has(context.traceId));
  }
  const roots = spans.filter((span) => span.parentSpanContext === undefined);
  assert.deepEqual(
    roots.map((span) => span.name),
    ['POST /v2/models/{model}/infer', 'POST /v2/models/{model}/infer'],
  );
  assert.equal(spans.filter((span) => span.name === 'kiln.worker').length, 2);
});

void test('rate 0 and an unsampled caller: nothing is recorded, the caller context passes on', async (t) => {
  const { gatewayUrl, tracing, exporter } = await setup(t, { workerChannels: true, sampleRate: 0 });
  const unsampled = `00-${callerTrace}-${callerSpan}-00`;
  // Four requests: two batches of two (the stub batches nothing else).
  const [reply, fresh, malformed] = await Promise.all([
    infer(gatewayUrl, request(1), { traceparent: unsampled }, 'm'),
    infer(gatewayUrl, request(2), {}, 'm'),
    infer(gatewayUrl, request(3), { traceparent: `00-${callerTrace}-${callerSpan}-0x` }, 'm'),
    infer(gatewayUrl, request(4), {}, 'm'),
  ]);
  assert.equal(reply.status, 200);
  assert.equal(reply.headers.get('traceparent'), unsampled);
  // Without a valid caller context: a new trace, marked unsampled (the worker records none).
  for (const other of [fresh, malformed]) {
    assert.equal(other.status, 200);
    const context = parseTraceparent(other.headers.get('traceparent') ?? undefined);
    assert.equal(context?.sampled, false);
    assert.notEqual(context.traceId, callerTrace);
  }
  await tracing.forceFlush();
  assert.deepEqual(exporter.getFinishedSpans(), []);
  assert.equal(tracing.counts.exported, 0);
});

void test('an OpenAI request is traced at the gateway; the LLM worker gets its attempt span', async (t) => {
  const exporter = new InMemorySpanExporter();
  const tracing = await startTracing({ serviceName: 'kiln-test', exporter, scheduledDelayMs: 5 });
  t.after(() => tracing.shutdown());
  const llm = await fakeLlmWorker('r1');
  t.after(() => llm.close());
  const route = endpointRoute({
    name: 'assistant',
    model: 'assistant-model',
    format: 'hf-llm',
    schema: null,
    replicas: [replicaRoute(llm, 'r1')],
    tracing: { sampleRate: 0 },
  });
  const gateway = await testGateway(snapshot(1, [route]), { more: { tracing } });
  const body = JSON.stringify({ model: 'assistant', prompt: 'Say hello', max_tokens: 4 });
  const reply = await call(gateway.url, 'POST', '/v1/completions', body, {
    traceparent: callerTraceparent,
  });
  assert.equal(reply.status, 200, reply.text);
  const untraced = await call(gateway.url, 'POST', '/v1/completions', body);
  assert.equal(untraced.status, 200, untraced.text);
  await tracing.forceFlush();
  const spans = exporter.getFinishedSpans();
  assert.equal(spans.length, 2, spans.map((s) => s.name).join(', '));
  const server = only(spans, 'POST /v1/completions');
  const channel = only(spans, 'kiln.channel');
  assert.equal(server.parentSpanContext?.spanId, callerSpan);
  assertChild(channel, server);
  assert.equal(server.attributes['kiln.endpoint'], 'assistant');
  assert.equal(server.attributes['kiln.replica'], 'r1');
  assert.equal(server.attributes['http.response.status_code'], 200);
  assert.equal(channel.attributes['kiln.transport'], 'http');
  // The worker was sent the attempt span as the parent; the client got the gateway's.
  const [traced, plain] = llm.received.slice(-2);
  const sent = parseTraceparent(traced?.headers.traceparent);
  assert.equal(sent?.traceId, callerTrace);
  assert.equal(sent?.spanId, channel.spanContext().spanId);
  assert.equal(
    parseTraceparent(reply.headers.get('traceparent') ?? undefined)?.spanId,
    server.spanContext().spanId,
  );
  assert.equal(parseTraceparent(plain?.headers.traceparent)?.sampled, false);
});
