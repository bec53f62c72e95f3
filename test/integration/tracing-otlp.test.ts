// Traces leave real processes: a platform started with an OTLP collector (what `kiln up
// --otlp URL` does) runs its gateway and worker processes with tracing on, and a stand-in
// collector on loopback receives their spans over OTLP/HTTP. One request with a sampled
// caller `traceparent` gives one trace across both processes: the caller's trace id, the
// gateway's span under the caller's, the worker's under the gateway's channel span. The
// answer is still XGBoost's own.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { call, registerFixture, testPlatform } from '../helpers/platform.ts';
import { startOtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts';

/** Polls `check` until it holds; fails naming `what` after `timeoutMs` (a bound, not a timing). */
async function until(
  check: () => boolean | Promise<boolean>,
  options: { timeoutMs: number; what: string },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`timed out waiting for ${options.what}`);
}

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${fixtures}expected.json`, 'utf8')) as {
  xgboost: { inputs: number[][]; probabilities: number[] };
};

const callerTrace = '0af7651916cd43dd8448eb211c80319c';
const callerSpan = 'b7ad6b7169203331';

const receiver = await startOtlpReceiver();
const platform = await testPlatform({ gateway: true, otlpUrl: receiver.url });
await registerFixture(platform.url, 'fraud', 'xgboost', 'xgb-binary.json');
test.after(() => receiver.close());

function inferBody(rows: number[][]): string {
  return JSON.stringify({
    inputs: [
      {
        name: 'input',
        shape: [rows.length, rows[0]?.length ?? 0],
        datatype: 'FP32',
        data: rows.flat(),
      },
    ],
  });
}

test('one request traced across the gateway and worker processes, exported over OTLP/HTTP', async () => {
  // New traces are never sampled here: only the caller's sampled context is followed.
  // Batching on (trees run unbatched by default), so the trace has its queue and batch.
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/fraud', {
    model: 'fraud',
    config: {
      batching: { maxBatchSize: 64, maxDelayMicros: 500 },
      observability: { tracing: { sampleRate: 0 } },
    },
  });
  assert.ok(deployed.status === 201 || deployed.status === 200, JSON.stringify(deployed.body));
  await until(
    async () => {
      const ready = await fetch(`${platform.gatewayUrl}/v2/models/fraud/ready`);
      await ready.arrayBuffer();
      return ready.status === 200;
    },
    { timeoutMs: 120_000, what: 'fraud ready at the gateway' },
  );

  const untraced = await fetch(`${platform.gatewayUrl}/v2/models/fraud/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: inferBody(expected.xgboost.inputs),
  });
  assert.equal(untraced.status, 200);
  await untraced.arrayBuffer();
  const response = await fetch(`${platform.gatewayUrl}/v2/models/fraud/infer`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      traceparent: `00-${callerTrace}-${callerSpan}-01`,
    },
    body: inferBody(expected.xgboost.inputs),
  });
  const body = (await response.json()) as { outputs: { data: number[] }[] };
  assert.equal(response.status, 200, JSON.stringify(body));
  expected.xgboost.probabilities.forEach((p, i) => {
    assert.ok(Math.abs((body.outputs[0]?.data[i] ?? Number.NaN) - p) < 1e-6, `row ${i}`);
  });
  const answered = response.headers.get('traceparent') ?? '';
  assert.equal(answered.split('-')[1], callerTrace);

  // Both processes export within their batch delay (1 s); wait for the worker's last span.
  const ofTrace = (): ReceivedSpan[] => receiver.spans.filter((s) => s.traceId === callerTrace);
  await until(() => ofTrace().some((s) => s.name === 'kiln.worker'), {
    timeoutMs: 60_000,
    what: 'the worker span at the collector',
  });
  await until(() => ofTrace().length >= 7, { timeoutMs: 30_000, what: 'all seven spans' });
  const spans = ofTrace();
  const named = (name: string): ReceivedSpan => {
    const found = spans.filter((s) => s.name === name);
    assert.equal(
      found.length,
      1,
      `${name} in ${spans.map((s) => `${s.service}:${s.name}`).join(', ')}`,
    );
    return found[0]!;
  };
  const gateway = named('POST /v2/models/{model}/infer');
  const channel = named('kiln.channel');
  const worker = named('kiln.worker');
  assert.equal(gateway.service, 'kiln-gateway');
  assert.equal(channel.service, 'kiln-gateway');
  assert.equal(worker.service, 'kiln-worker');
  assert.equal(gateway.parentSpanId, callerSpan);
  assert.equal(gateway.spanId, answered.split('-')[2]);
  assert.equal(channel.parentSpanId, gateway.spanId);
  assert.equal(worker.parentSpanId, channel.spanId);
  for (const name of ['kiln.queue', 'kiln.batch', 'kiln.encode']) {
    assert.equal(named(name).parentSpanId, worker.spanId, name);
  }
  assert.equal(named('kiln.runtime').parentSpanId, named('kiln.batch').spanId);
  assert.equal(named('kiln.batch').attributes['kiln.batch.rows'], expected.xgboost.inputs.length);
  assert.equal(gateway.attributes['kiln.endpoint'], 'fraud');
  assert.equal(gateway.attributes['http.response.status_code'], 200);
  assert.equal(worker.attributes['kiln.endpoint'], 'fraud');
  assert.equal(worker.attributes['kiln.version'], '1');
  assert.equal(worker.attributes['kiln.replica'], gateway.attributes['kiln.replica']);
  // The untraced request (rate 0, no caller context) left nothing at the collector.
  assert.deepEqual([...new Set(receiver.spans.map((s) => s.traceId))], [callerTrace]);
});

test('a sample rate out of range is refused at deploy, naming the field', async () => {
  const refused = await call(platform.url, 'PUT', '/api/v1/endpoints/fraud-bad', {
    model: 'fraud',
    config: { observability: { tracing: { sampleRate: 1.5 } } },
  });
  assert.equal(refused.status, 400);
  const error = (refused.body as { error: { code: string; message: string } }).error;
  assert.equal(error.code, 'KILN_OBSERVABILITY_INVALID');
  assert.match(error.message, /tracing: sampleRate must be a number from 0 to 1, not 1\.5/);
});
