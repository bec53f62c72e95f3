// The worker's drift sketches through its real server (stub runtime y = 2x): a request counts
// when it is marked — the `kiln-drift: 1` header over HTTP, `d` in a JSON or tensors frame's
// meta on the channel — under its slice; unmarked ones and failures are not sketched, and
// GET /kiln/v1/sketches hands over and starts afresh.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { ChannelClient, type ChannelRequester } from '../../src/gateway/channel-client.ts';
import { channelPath } from '../../src/protocol/channel/frames.ts';
import { encodeTensorRequest } from '../../src/protocol/channel/tensor-frames.ts';
import { parseInferRequest } from '../../src/protocol/v2/decode-request.ts';
import { compileSchema } from '../../src/protocol/v2/schema.ts';
import {
  parseWorkerSketchReport,
  sketchesPath,
  type WorkerSketchReport,
} from '../../src/protocol/drift/sketch-report.ts';
import { schema, startStub } from './stub-worker.ts';

class Reply implements ChannelRequester {
  status = 0;
  private resolve: (() => void) | null = null;
  readonly settled = new Promise<void>((resolve) => (this.resolve = resolve));
  onChannelReply(status: number): void {
    this.status = status;
    this.resolve?.();
  }
  onChannelError(): void {
    this.resolve?.();
  }
}

function body(rows: number[][]): Buffer {
  return Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'x', datatype: 'FP32', shape: [rows.length, 2], data: rows.flat() }],
    }),
  );
}

async function sketches(url: string): Promise<WorkerSketchReport> {
  const response = await fetch(url + sketchesPath);
  assert.equal(response.status, 200);
  const report = parseWorkerSketchReport(await response.json());
  assert.ok(report !== null);
  return report;
}

test('marked requests are sketched under their slice, however they arrive', async (t) => {
  const harness = await startStub(null, 0);
  const client = new ChannelClient(harness.url, channelPath, 30_000, () => performance.now());
  t.after(async () => {
    client.destroy();
    await harness.close();
  });
  const infer = (headers: Record<string, string>, rows: number[][]) =>
    fetch(`${harness.url}/v2/models/m/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: body(rows),
    }).then(async (response) => {
      await response.arrayBuffer();
      return response.status;
    });

  // HTTP: marked with a slice, marked without one, not marked, marked but refused (400).
  assert.equal(await infer({ 'kiln-drift': '1', 'kiln-slice': 'fr' }, [[1, 2]]), 200);
  assert.equal(await infer({ 'kiln-drift': '1' }, [[3, 4]]), 200);
  assert.equal(await infer({ 'kiln-slice': 'fr' }, [[100, 100]]), 200);
  const bad = await fetch(`${harness.url}/v2/models/m/infer`, {
    method: 'POST',
    headers: { 'kiln-drift': '1' },
    body: '{"inputs": []}',
  });
  await bad.arrayBuffer();
  assert.equal(bad.status, 400);
  // Channel: a JSON frame with `d`, a tensors frame with `d`, a tensors frame without.
  const json = new Reply();
  client.send(json, body([[5, 6]]), undefined, undefined, 'de');
  const decoded = parseInferRequest(body([[7, 8]]), compileSchema(schema));
  assert.ok(decoded.ok);
  const tensors = new Reply();
  client.sendTensors(tensors, encodeTensorRequest(decoded.request, undefined, undefined, 'de')!);
  const unmarked = new Reply();
  client.sendTensors(unmarked, encodeTensorRequest(decoded.request, undefined, undefined)!);
  await Promise.all([json.settled, tensors.settled, unmarked.settled]);
  assert.deepEqual([json.status, tensors.status, unmarked.status], [200, 200, 200]);

  const report = await sketches(harness.url);
  assert.equal(report.endpoint, 'm');
  assert.equal(report.version, 1);
  const overall = report.overall!;
  // Rows 1-2, 3-4, 5-6, 7-8: four marked answers (a stub input without feature names: x[j]).
  assert.equal(overall.rows, 4);
  const x0 = overall.features['x[0]']!;
  assert.equal(x0.kind === 'numeric' ? x0.moments.mean : null, 4);
  const y1 = overall.outputs['y[1]']!;
  assert.equal(y1.kind === 'numeric' ? y1.moments.max : null, 16);
  assert.deepEqual(Object.keys(report.slices).sort(), ['de', 'fr']);
  assert.equal(report.slices.fr!.rows, 1);
  assert.equal(report.slices.de!.rows, 2);
  // Handed over: the next GET starts from nothing.
  const next = await sketches(harness.url);
  assert.equal(next.overall, null);
  assert.deepEqual(next.slices, {});
});
