// The gateway's prediction log and prediction reports (issue 15, D): answered requests of an
// endpoint that opted in reach the log files redacted, and their predictions reach the
// control plane with request id, version and slice; endpoints that did not opt in log nothing.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import {
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  serveOnLoopback,
  snapshot,
  testGateway,
  validRequest,
} from './gateway-harness.ts';
import { until } from '../helpers/until.ts';
import type { PredictionReport } from '../../src/gateway/quality-collector.ts';

const sha = (text: string): string => `sha256:${createHash('sha256').update(text).digest('hex')}`;

async function predictionSink() {
  const reports: PredictionReport[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/api/v1/quality/predictions') {
        reports.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as PredictionReport);
      }
      res.writeHead(202);
      res.end('{}');
    });
  });
  const served = await serveOnLoopback(server);
  return { url: served.url, reports };
}

async function logLines(dir: string, endpoint: string): Promise<Record<string, unknown>[]> {
  const names = await readdir(join(dir, endpoint)).catch(() => [] as string[]);
  const lines: Record<string, unknown>[] = [];
  for (const name of names.sort()) {
    const text = await readFile(join(dir, endpoint, name), 'utf8');
    for (const line of text.split('\n')) {
      if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
    }
  }
  return lines;
}

for (const channel of [false, true]) {
  test(`answered requests are logged redacted and their predictions reported (${channel ? 'channel' : 'http'})`, async () => {
    const logDir = await mkdtemp(join(tmpdir(), 'kiln-plog-gw-'));
    try {
      const sink = await predictionSink();
      const answer = {
        model_name: 'fraud',
        outputs: [
          { name: 'proba', datatype: 'FP32', shape: [1, 2], data: [0.3, 0.7] },
          { name: 'secret', datatype: 'FP32', shape: [1, 1], data: [42.5] },
        ],
      };
      const worker = await fakeWorker('ok', answer, 200, { channel });
      const schema = {
        inputs: [
          { name: 'x', datatype: 'FP32' as const, shape: [-1, 3] },
          { name: 'email', datatype: 'BYTES' as const, shape: [-1] },
          { name: 'ssn', datatype: 'BYTES' as const, shape: [-1] },
        ],
        outputs: [
          { name: 'proba', datatype: 'FP32' as const, shape: [-1, 2] },
          { name: 'secret', datatype: 'FP32' as const, shape: [-1, 1] },
        ],
      };
      const route = endpointRoute({
        schema,
        replicas: [replicaRoute(worker, 'r1', 3)],
        predictionLog: {
          sampleRate: 1,
          redact: [
            { field: 'ssn', action: 'drop' },
            { field: 'email', action: 'hash' },
            { field: 'outputs.secret', action: 'drop' },
          ],
          maxFileBytes: 1 << 20,
          maxFiles: 2,
        },
        quality: { output: null, sliceKey: 'country', slicePath: null },
      });
      const other = endpointRoute({ name: 'quiet', replicas: [replicaRoute(worker, 'r2', 3)] });
      const gateway = await testGateway(snapshot(1, [route, other]), {
        more: {
          controlUrl: sink.url,
          predictionLogDir: logDir,
          reportPredictions: true,
          predictionReportIntervalMs: 20,
        },
      });
      const body = {
        inputs: [
          { name: 'x', datatype: 'FP32', shape: [1, 3], data: [1, 2, 3] },
          { name: 'email', datatype: 'BYTES', shape: [1], data: ['dana@example.com'] },
          { name: 'ssn', datatype: 'BYTES', shape: [1], data: ['078-05-1120'] },
        ],
      };
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        const reply = await infer(gateway.url, body, { 'kiln-slice': i % 2 === 0 ? 'de' : 'fr' });
        assert.equal(reply.status, 200, reply.text);
        ids.push(reply.headers.get('x-request-id')!);
      }
      assert.equal((await infer(gateway.url, validRequest, {}, 'quiet')).status, 200);

      await until(async () => (await logLines(logDir, 'fraud')).length === 4, 'four log records');
      const raw = (await readdir(join(logDir, 'fraud'))).length;
      assert.equal(raw, 1);
      const text = await readFile(join(logDir, 'fraud', 'predictions-000001.jsonl'), 'utf8');
      assert.ok(!text.includes('078-05-1120'), 'the dropped input never reaches the file');
      assert.ok(!text.includes('dana@example.com'), 'the hashed input never reaches the file');
      assert.ok(!text.includes('42.5'), 'the dropped output never reaches the file');
      const records = await logLines(logDir, 'fraud');
      assert.deepEqual(
        records.map((r) => r.requestId),
        ids,
      );
      const first = records[0]!;
      assert.equal(first.version, 3);
      assert.equal(first.status, 200);
      assert.equal(first.slice, 'de');
      assert.equal(typeof first.latencyMs, 'number');
      assert.deepEqual(
        (first.inputs as { name: string; data: unknown }[]).map((t) => [t.name, t.data]),
        [
          ['x', [1, 2, 3]],
          ['email', [sha('dana@example.com')]],
        ],
      );
      assert.deepEqual(
        (first.outputs as { name: string }[]).map((t) => t.name),
        ['proba'],
      );
      // The endpoint that did not opt in has no log.
      assert.deepEqual(await logLines(logDir, 'quiet'), []);

      await until(
        () => sink.reports.flatMap((r) => r.predictions).length >= 4,
        'four predictions reported',
      );
      const predictions = sink.reports.flatMap((r) => r.predictions);
      // Whole epoch milliseconds: what the control plane takes (quality-service.ts).
      assert.ok(predictions.every((p) => Number.isSafeInteger(p.atMs)));
      assert.deepEqual(
        predictions.map((p) => [p.endpoint, p.requestId, p.version, p.prediction, p.slice]),
        ids.map((id, i) => ['fraud', id, 3, 0.7, i % 2 === 0 ? 'de' : 'fr']),
      );
      const metrics = await gateway.metricsText();
      assert.match(
        metrics,
        /kiln_gateway_prediction_log_records_total\{endpoint="fraud",outcome="written"\} 4/,
      );
      assert.match(metrics, /kiln_gateway_quality_reports_total\{outcome="sent"\} [1-9]/);
    } finally {
      await rm(logDir, { recursive: true, force: true });
    }
  });
}
