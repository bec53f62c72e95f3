// The pieces of tracing that need no serving: the endpoint setting's resolver, head
// sampling, W3C traceparent parsing, the collector URL, and the bounded export (a slow or
// dead collector drops spans and counts them; ending a span never waits on it).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { ExportResult } from '@opentelemetry/core';
import { resolveObservabilityConfig } from '../../../src/observability/observability-input.ts';
import {
  defaultTraceSampleRate,
  resolveTracingConfig,
} from '../../../src/observability/tracing/tracing-config.ts';
import { shouldTrace, SpanKind } from '../../../src/observability/tracing/kiln-tracer.ts';
import {
  isSampledTraceparent,
  parseTraceparent,
} from '../../../src/observability/tracing/traceparent.ts';
import { otlpTracesUrl, otlpUrlProblem } from '../../../src/observability/tracing/otlp-url.ts';
import { startTracing, tracingFromEnv } from '../../../src/observability/tracing/start-tracing.ts';
import { checkRoutingSnapshot } from '../../../src/gateway/snapshot-check.ts';
import { endpointRoute, snapshot } from '../../gateway/gateway-harness.ts';

void test('tracing settings: sampleRate from 0 to 1, default 1 %, each problem named', () => {
  assert.deepEqual(resolveTracingConfig({}), { ok: true, value: { sampleRate: 0.01 } });
  assert.equal(defaultTraceSampleRate, 0.01);
  assert.deepEqual(resolveTracingConfig({ sampleRate: 1 }), { ok: true, value: { sampleRate: 1 } });
  assert.deepEqual(resolveTracingConfig({ sampleRate: 0 }), { ok: true, value: { sampleRate: 0 } });
  for (const [input, reason] of [
    [{ sampleRate: 1.5 }, /sampleRate must be a number from 0 to 1, not 1.5/],
    [{ sampleRate: -0.1 }, /sampleRate must be a number from 0 to 1/],
    [{ sampleRate: '0.5' }, /sampleRate must be a number from 0 to 1, not "0.5"/],
    [{ rate: 0.5 }, /unknown field rate \(known: sampleRate\)/],
    [[], /must be an object/],
  ] as const) {
    const resolved = resolveTracingConfig(input);
    assert.equal(resolved.ok, false, JSON.stringify(input));
    if (!resolved.ok) assert.match(resolved.reason, reason);
  }
  // Through the whole observability object, as deploy checks it: the part is named.
  const whole = resolveObservabilityConfig({ tracing: { sampleRate: 2 } });
  assert.equal(whole.ok, false);
  if (!whole.ok) assert.match(whole.reason, /^tracing: sampleRate must be a number from 0 to 1/);
});

void test('head sampling: a sampled caller is followed; otherwise the rate decides', () => {
  const sampled = parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
  const unsampled = parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00');
  assert.equal(sampled?.sampled, true);
  assert.equal(unsampled?.sampled, false);
  const draw = (value: number) => () => value;
  assert.equal(shouldTrace(sampled, 0, draw(0.99)), true);
  assert.equal(shouldTrace(unsampled, 0, draw(0)), false);
  assert.equal(shouldTrace(unsampled, 0.05, draw(0.04)), true);
  assert.equal(shouldTrace(null, 0.05, draw(0.05)), false);
  assert.equal(shouldTrace(null, 1, draw(0.999)), true);
  // Over many draws the share recorded is the rate (a seeded sequence, not chance).
  let seed = 42;
  const lcg = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  let traced = 0;
  for (let i = 0; i < 100_000; i++) if (shouldTrace(null, 0.01, lcg)) traced += 1;
  assert.ok(traced > 800 && traced < 1200, `${traced} of 100000 at 1 %`);
});

void test('traceparent: valid ones parsed, malformed or all-zero ones refused', () => {
  assert.deepEqual(parseTraceparent('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03'), {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    sampled: true,
  });
  for (const bad of [
    undefined,
    '',
    ['00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'],
    '00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01',
    '00-00000000000000000000000000000000-b7ad6b7169203331-01',
    '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
    'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  ]) {
    assert.equal(parseTraceparent(bad), null, JSON.stringify(bad));
  }
  assert.equal(
    isSampledTraceparent('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
    true,
  );
  // 0x0a: bit 0 clear, whatever the hex letter's character code.
  assert.equal(
    isSampledTraceparent('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0a'),
    false,
  );
  assert.equal(
    isSampledTraceparent('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0b'),
    true,
  );
  assert.equal(isSampledTraceparent(undefined), false);
});

void test('the collector URL: /v1/traces added to a bare one; not http(s) refused', () => {
  assert.equal(otlpTracesUrl('http://127.0.0.1:4318'), 'http://127.0.0.1:4318/v1/traces');
  assert.equal(otlpTracesUrl('http://c:4318/custom/path'), 'http://c:4318/custom/path');
  assert.equal(otlpUrlProblem('https://collector.example:4318'), null);
  assert.match(otlpUrlProblem('collector:4318') ?? '', /expected an http:\/\/ or https:\/\/ URL/);
  assert.match(otlpUrlProblem('not a url') ?? '', /not a URL/);
});

void test('the routing snapshot carries an endpoint sample rate; a bad one is refused', () => {
  const good = checkRoutingSnapshot(
    snapshot(1, [endpointRoute({ replicas: [], tracing: { sampleRate: 0.5 } })]),
  );
  assert.equal(good.ok, true);
  if (good.ok) assert.deepEqual(good.snapshot.endpoints[0]?.tracing, { sampleRate: 0.5 });
  const nulled = checkRoutingSnapshot({
    ...snapshot(1, [endpointRoute({ replicas: [] })]),
    endpoints: [{ ...endpointRoute({ replicas: [] }), tracing: null }],
  });
  assert.equal(nulled.ok, true);
  if (nulled.ok) assert.equal(nulled.snapshot.endpoints[0]?.tracing, undefined);
  const bad = checkRoutingSnapshot(
    snapshot(1, [endpointRoute({ replicas: [], tracing: { sampleRate: 3 } })]),
  );
  assert.equal(bad.ok, false);
  if (!bad.ok) assert.match(bad.reason, /tracing\.sampleRate is not a number from 0 to 1/);
});

/** An exporter that never answers: a collector that hangs. */
class HangingExporter implements SpanExporter {
  batches: number[] = [];
  export(spans: ReadableSpan[], _done: (result: ExportResult) => void): void {
    this.batches.push(spans.length);
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

void test('a hanging collector: the queue stays bounded, what does not fit is dropped and counted', async () => {
  const exporter = new HangingExporter();
  const tracing = await startTracing({
    serviceName: 'kiln-test',
    exporter,
    maxQueueSize: 4,
    scheduledDelayMs: 60_000,
  });
  for (let i = 0; i < 20; i++)
    tracing.tracer.startRequest(`s${i}`, SpanKind.SERVER, null, undefined).end();
  // The first four left as a batch (which never returns); four more wait; twelve dropped.
  assert.deepEqual(exporter.batches, [4]);
  assert.deepEqual(
    { ...tracing.counts },
    {
      exported: 0,
      droppedQueueFull: 12,
      droppedExportFailed: 0,
      queued: 4,
    },
  );
});

void test('a dead collector: exports fail, their spans are counted as dropped', async () => {
  // A port nothing listens on any more.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  const tracing = await startTracing({
    serviceName: 'kiln-test',
    otlpUrl: `http://127.0.0.1:${port}`,
    scheduledDelayMs: 60_000,
    exportTimeoutMs: 2_000,
  });
  for (let i = 0; i < 3; i++)
    tracing.tracer.startRequest(`s${i}`, SpanKind.SERVER, null, undefined).end();
  assert.equal(tracing.counts.queued, 3);
  await tracing.forceFlush().catch(() => undefined);
  // The export's answer may come after the flush gave up waiting: poll the counts.
  for (let turn = 0; turn < 400 && tracing.counts.droppedExportFailed < 3; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.deepEqual(
    { ...tracing.counts },
    {
      exported: 0,
      droppedQueueFull: 0,
      droppedExportFailed: 3,
      queued: 0,
    },
  );
  await tracing.shutdown().catch(() => undefined);
});

void test('a process given a URL that is no collector serves without tracing', async () => {
  assert.equal(await tracingFromEnv('kiln-test', {}, {}), null);
  assert.equal(await tracingFromEnv('kiln-test', {}, { KILN_OTLP_URL: '' }), null);
  assert.equal(await tracingFromEnv('kiln-test', {}, { KILN_OTLP_URL: 'collector:4318' }), null);
  const on = await tracingFromEnv('kiln-test', {}, { KILN_OTLP_URL: 'http://127.0.0.1:9' });
  assert.notEqual(on, null);
  await on?.shutdown().catch(() => undefined);
});
