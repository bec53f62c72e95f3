// LLM tokens for cost accounting (issue 15 E): the gateway reads a worker's `kiln-usage` —
// the header of a whole answer, the trailer of a stream — adds the counts to its endpoint's
// load report for the control plane, and passes neither the header nor the trailer on.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { LoadReport } from '../../src/protocol/scaling/load-report.ts';
import {
  endpointRoute,
  replicaRoute,
  serveOnLoopback,
  snapshot,
  testGateway,
} from './gateway-harness.ts';
import { until } from '../helpers/until.ts';

/** A control plane that keeps the load reports it is sent. */
async function stubControl(): Promise<{ url: string; reports: LoadReport[] }> {
  const reports: LoadReport[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/api/v1/scaling/reports')
        reports.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as LoadReport);
      res.writeHead(204);
      res.end();
    });
  });
  const served = await serveOnLoopback(server);
  return { url: served.url, reports };
}

/** An hf-llm worker that answers 5 + 7 tokens whole, 11 + 13 streamed. */
async function tokenWorker(): Promise<{ url: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST') {
        // Load polls and the model list: not what this test is about.
        res.writeHead(404);
        res.end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { stream?: boolean };
      if (body.stream !== true) {
        res.writeHead(200, {
          'content-type': 'application/json',
          'kiln-usage': 'prompt=5;completion=7',
        });
        res.end(JSON.stringify({ object: 'text_completion', choices: [{ index: 0, text: 'hi' }] }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', trailer: 'kiln-usage' });
      res.write('data: {"choices":[{"index":0,"text":"hi"}]}\n\n');
      res.addTrailers({ 'kiln-usage': 'prompt=11;completion=13' });
      res.end('data: [DONE]\n\n');
    });
  });
  return serveOnLoopback(server);
}

test('an LLM answer’s tokens go into the load report, whole or streamed, and not to the client', async () => {
  const control = await stubControl();
  const worker = await tokenWorker();
  const gateway = await testGateway(
    snapshot(1, [
      endpointRoute({
        name: 'chat',
        model: 'chat-model',
        format: 'hf-llm',
        schema: null,
        replicas: [replicaRoute(worker, 'l1')],
      }),
    ]),
    { more: { controlUrl: control.url, reportLoad: true, loadReportIntervalMs: 50 } },
  );
  for (const stream of [false, true]) {
    const reply = await fetch(`${gateway.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat', prompt: 'hello', stream }),
    });
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get('kiln-usage'), null);
    assert.equal(reply.headers.get('trailer'), null);
    assert.match(await reply.text(), /hi/);
  }
  const sum = (field: 'promptTokens' | 'completionTokens'): number =>
    control.reports
      .flatMap((r) => r.endpoints)
      .filter((e) => e.endpoint === 'chat')
      .reduce((total, e) => total + (e[field] ?? 0), 0);
  await until(
    () => sum('promptTokens') === 16 && sum('completionTokens') === 20,
    'the tokens reported',
  );
  // Reports of windows without an LLM answer keep their shape (no token fields).
  assert.ok(
    control.reports
      .flatMap((r) => r.endpoints)
      .every((e) => (e.promptTokens === undefined) === (e.completionTokens === undefined)),
  );
});
