// A pool worker (issue 14's shared workers) records the spans of a traced request for the
// model it serves, under the context the gateway sent, like a dedicated worker.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createReadStream, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { ArtifactStore } from '../../../src/registry/artifact-store.ts';
import { startTracing } from '../../../src/observability/tracing/start-tracing.ts';
import { startPoolWorker } from '../../../src/worker/pool/start-pool-worker.ts';

const fixtures = new URL('../../../fixtures/pools/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${fixtures}expected.json`, 'utf8')) as {
  rows: number[][];
};
const home = await mkdtemp(join(tmpdir(), 'kiln-pool-trace-'));
const store = new ArtifactStore(join(home, 'artifacts'));
await store.init();
const token = 'pool-token-for-tests';
const exporter = new InMemorySpanExporter();
const tracing = await startTracing({ serviceName: 'kiln-test', exporter, scheduledDelayMs: 5 });

const worker = await startPoolWorker(
  {
    replicaId: '_pool-t-v0-r0-1',
    endpoint: '_pool-t',
    model: '_pool-t',
    version: 0,
    format: 'xgboost',
    files: [],
    schema: null,
    artifacts: store.locator,
    workDir: join(home, 'worker'),
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: 1 << 20,
    config: {},
    batching: null,
    defaultTimeoutMs: null,
    pool: { name: 't', memoryBudgetBytes: 10 << 20, token },
  },
  () => undefined,
  undefined,
  tracing,
);
after(async () => {
  await worker.close(1_000);
  await tracing.shutdown();
  await rm(home, { recursive: true, force: true });
});

test("a pool worker continues a traced request's context for the model it serves", async () => {
  const blob = await store.ingest(createReadStream(`${fixtures}pool-0.json`), null, {
    maxBytes: 1 << 30,
  });
  const assigned = await fetch(`${worker.url}/kiln/v1/pool/models`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', 'kiln-pool-token': token },
    body: JSON.stringify({
      generation: 1,
      models: [
        {
          endpoint: 'a',
          revision: 'a#1',
          model: 'a',
          version: 1,
          format: 'xgboost',
          files: [{ path: 'model.json', size: blob.size, sha256: blob.sha256 }],
          schema: null,
          maxBodyBytes: 1 << 20,
          config: {},
          defaultTimeoutMs: null,
        },
      ],
    }),
  });
  assert.equal(assigned.status, 200);
  await assigned.arrayBuffer();
  const rows = expected.rows;
  const parent = '00f067aa0ba902b7';
  for (const flags of ['00', '01']) {
    const response = await fetch(`${worker.url}/v2/models/a/infer`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${parent}-${flags}`,
      },
      body: JSON.stringify({
        inputs: [{ name: 'input', shape: [rows.length, 4], datatype: 'FP32', data: rows.flat() }],
      }),
    });
    assert.equal(response.status, 200);
    await response.arrayBuffer();
  }
  await tracing.forceFlush();
  // The unsampled request left nothing; the sampled one its worker, runtime and encode spans.
  const spans = exporter.getFinishedSpans();
  assert.deepEqual(spans.map((s) => s.name).sort(), ['kiln.encode', 'kiln.runtime', 'kiln.worker']);
  const server = spans.find((s) => s.name === 'kiln.worker')!;
  assert.equal(server.parentSpanContext?.spanId, parent);
  assert.equal(server.attributes['kiln.endpoint'], 'a');
  assert.equal(server.attributes['kiln.replica'], '_pool-t-v0-r0-1');
  const runtime = spans.find((s) => s.name === 'kiln.runtime')!;
  assert.equal(runtime.parentSpanContext?.spanId, server.spanContext().spanId);
  assert.equal(runtime.attributes['kiln.batch.rows'], rows.length);
});
