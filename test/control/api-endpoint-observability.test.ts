// An endpoint's observability settings changed in place (issue 15): `GET/PUT/DELETE
// /api/v1/endpoints/{e}/observability` check them as a deploy does (KILN_OBSERVABILITY_INVALID
// naming the field), keep the rest of the endpoint, and restart no replica (same replica, same
// pid, ready throughout); `kiln observe show|set|clear` as real processes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { observeBody, observabilityText } from '../../src/cli/commands/observe.ts';
import type { EndpointRoute } from '../../src/gateway/routing-snapshot.ts';
import { Cli } from '../cli/cli-harness.ts';
import { call, errorCode, registerFixture, testPlatform } from '../helpers/platform.ts';
import { tempDir } from '../helpers/temp-dir.ts';

interface ReplicaView {
  readonly id: string;
  readonly pid: number | null;
  readonly state: string;
  readonly restarts: number;
}

const platform = await testPlatform();
await registerFixture(platform.url, 'm', 'xgboost', 'xgb-binary.json');

async function replicas(endpoint: string): Promise<readonly ReplicaView[]> {
  const response = await call(platform.url, 'GET', `/api/v1/endpoints/${endpoint}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return (response.body as { status: { replicas: ReplicaView[] } }).status.replicas;
}

/** The endpoint's route in the snapshot the control plane publishes now. */
function route(endpoint: string): EndpointRoute | undefined {
  return platform.reconciler.routing.current().endpoints.find((r) => r.name === endpoint);
}

void test('observability settings: set, read, cleared in place, no replica restarted', async () => {
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/e', {
    model: 'm',
    version: 1,
    replicas: 1,
    config: { maxConcurrency: 7 },
  });
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  const deadline = Date.now() + 120_000;
  let ready: readonly ReplicaView[] = [];
  while (Date.now() < deadline) {
    ready = (await replicas('e')).filter((r) => r.state === 'ready');
    if (ready.length === 1) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.equal(ready.length, 1, 'a ready replica');

  const none = await call(platform.url, 'GET', '/api/v1/endpoints/e/observability');
  assert.deepEqual(none.body, { endpoint: 'e', observability: {} });

  const set = await call(platform.url, 'PUT', '/api/v1/endpoints/e/observability', {
    tracing: { sampleRate: 0.25 },
    drift: { enabled: true, sliceKey: 'country', slicePath: '$.country', windowMs: 60_000 },
  });
  assert.equal(set.status, 200, JSON.stringify(set.body));
  const settings = (set.body as { observability: Record<string, Record<string, unknown>> })
    .observability;
  assert.equal(settings.tracing?.sampleRate, 0.25);
  assert.equal(settings.drift?.sliceKey, 'country');
  // The reconcile pass that followed the write has run: a restart would have begun.
  assert.deepEqual(
    (await replicas('e')).map(({ id, pid, state, restarts }) => ({ id, pid, state, restarts })),
    ready.map(({ id, pid, restarts }) => ({ id, pid, state: 'ready', restarts })),
  );
  const endpoint = (await call(platform.url, 'GET', '/api/v1/endpoints/e')).body as {
    version: number;
    config: { maxConcurrency?: number; observability?: unknown };
  };
  assert.equal(endpoint.config.maxConcurrency, 7, 'the rest of the config kept');
  assert.deepEqual(endpoint.config.observability, settings);
  // The routing snapshot the gateways read followed (drift: the slice they extract).
  const drift = route('e')?.drift;
  assert.deepEqual([drift?.sliceKey, drift?.slicePath], ['country', '$.country']);

  const onePart = await call(
    platform.url,
    'DELETE',
    '/api/v1/endpoints/e/observability?part=tracing',
  );
  assert.equal(onePart.status, 200, JSON.stringify(onePart.body));
  assert.deepEqual(Object.keys((onePart.body as { observability: object }).observability), [
    'drift',
  ]);
  const all = await call(platform.url, 'DELETE', '/api/v1/endpoints/e/observability');
  assert.deepEqual(all.body, { endpoint: 'e', observability: {} });
  assert.equal(route('e')?.drift, undefined, 'drift off in the snapshot');
  assert.deepEqual(
    (await replicas('e')).map(({ id, pid }) => ({ id, pid })),
    ready.map(({ id, pid }) => ({ id, pid })),
  );
});

void test('observability settings: bad input is a 4xx naming the problem', async () => {
  const notObject = await call(platform.url, 'PUT', '/api/v1/endpoints/e/observability', {
    tracing: 5,
  });
  assert.equal(notObject.status, 400);
  assert.equal(errorCode(notObject), 'KILN_OBSERVABILITY_INVALID');
  assert.match(JSON.stringify(notObject.body), /tracing: must be an object/);
  const unknownPart = await call(platform.url, 'PUT', '/api/v1/endpoints/e/observability', {
    tracingg: {},
  });
  assert.equal(errorCode(unknownPart), 'KILN_OBSERVABILITY_INVALID');
  assert.match(JSON.stringify(unknownPart.body), /unknown field tracingg/);
  const array = await call(platform.url, 'PUT', '/api/v1/endpoints/e/observability', [1]);
  assert.equal(array.status, 400);
  const badPart = await call(platform.url, 'DELETE', '/api/v1/endpoints/e/observability?part=x');
  assert.equal(badPart.status, 400);
  const missing = await call(platform.url, 'PUT', '/api/v1/endpoints/nope/observability', {});
  assert.equal(missing.status, 404);
  assert.equal(errorCode(missing), 'KILN_ENDPOINT_NOT_FOUND');
  const missingGet = await call(platform.url, 'GET', '/api/v1/endpoints/nope/observability');
  assert.equal(errorCode(missingGet), 'KILN_ENDPOINT_NOT_FOUND');
});

void test('observeBody changes only the fields the flags name; the text names every part', () => {
  const base = { tracing: { sampleRate: 0.5 }, slo: { availability: 0.99 } };
  assert.deepEqual(observeBody(base, { traceSample: 0.01, sliceKey: 'country' }), {
    tracing: { sampleRate: 0.01 },
    slo: { availability: 0.99 },
    drift: { sliceKey: 'country' },
  });
  assert.deepEqual(observeBody({ drift: { enabled: true } }, { drift: false }), {});
  assert.deepEqual(base, { tracing: { sampleRate: 0.5 }, slo: { availability: 0.99 } });
  assert.equal(
    observabilityText({ endpoint: 'e', observability: { tracing: { sampleRate: 0.01 } } }),
    [
      'endpoint:      e',
      'tracing:       sampleRate=0.01',
      'drift:         off',
      'predictionLog: off',
      'quality:       off',
      'slo:           off',
      '',
    ].join('\n'),
  );
});

void test('kiln observe show|set|clear', async () => {
  const cli = new Cli(platform.url, platform.home);
  const set = await cli.ok(['observe', 'set', 'e', '--trace-sample', '0.01']);
  assert.match(set, /^tracing: +sampleRate=0\.01$/m);
  const more = await cli.json<{ observability: Record<string, Record<string, unknown>> }>([
    'observe',
    'set',
    'e',
    '--drift',
    '--slice-key',
    'country',
    '--drift-window',
    '5m',
  ]);
  assert.equal(more.observability.tracing?.sampleRate, 0.01, 'kept from the settings in force');
  assert.equal(more.observability.drift?.windowMs, 300_000);
  const dir = await tempDir();
  const file = join(dir, 'observability.json');
  await writeFile(file, JSON.stringify({ tracing: { sampleRate: 1 } }));
  const replaced = await cli.json<{ observability: Record<string, unknown> }>([
    'observe',
    'set',
    'e',
    '--file',
    file,
  ]);
  assert.deepEqual(Object.keys(replaced.observability), ['tracing']);
  const shown = await cli.ok(['observe', 'show', 'e']);
  assert.match(shown, /^tracing: +sampleRate=1$/m);
  assert.match(shown, /^drift: +off$/m);
  await cli.fails(['observe', 'set', 'e', '--trace-sample', '2'], 2);
  await cli.fails(['observe', 'clear', 'e', '--part', 'nope'], 2);
  const refused = await cli.fails(['observe', 'set', 'nope', '--trace-sample', '0.5'], 1);
  assert.match(refused, /KILN_ENDPOINT_NOT_FOUND/);
  const cleared = await cli.ok(['observe', 'clear', 'e', '--part', 'tracing']);
  assert.match(cleared, /^tracing: +off$/m);
});
