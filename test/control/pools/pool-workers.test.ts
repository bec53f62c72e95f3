// PoolWorkers (the control plane's side of worker pools) against a fake pool worker: two
// endpoints of the same model, version and settings (one revision) are both assigned and
// both routed — each is its own entry of the assignment.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PoolWorkers, poolWorkerEndpoint } from '../../../src/control/pools/pool-workers.ts';
import { poolTokenHeader } from '../../../src/protocol/pool/pool-protocol.ts';
import type { PoolAssignment } from '../../../src/protocol/pool/pool-protocol.ts';
import type { Registry } from '../../../src/registry/registry.ts';
import type { EndpointRecord } from '../../../src/store/serving-records.ts';

test('two endpoints of one model and settings on a pool are both assigned and routed', async () => {
  const taken: PoolAssignment[] = [];
  const tokens: Array<string | string[] | undefined> = [];
  const worker = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const assignment = JSON.parse(Buffer.concat(chunks).toString('utf8')) as PoolAssignment;
      taken.push(assignment);
      tokens.push(req.headers[poolTokenHeader]);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ generation: assignment.generation }));
    });
  });
  await new Promise<void>((resolve) => worker.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(worker.address() as AddressInfo).port}`;
  try {
    const version = { format: 'xgboost', files: [], schema: null };
    const registry = {
      trustedVersion: () => Promise.resolve({ version, signature: { status: 'unsigned' } }),
    } as unknown as Registry;
    const pools = new PoolWorkers({ registry, firstGeneration: 1 });
    const at = '2026-12-01T00:00:00.000Z';
    pools.refresh([
      {
        name: 'small',
        team: 'risk',
        workers: 1,
        memoryBudgetBytes: 1 << 26,
        createdAt: at,
        updatedAt: at,
      },
    ]);
    const [desired] = pools.desired();
    const launch = pools.launch({ id: 'w0', revision: desired!.revision, slot: 0 }, desired!.name, {
      kind: 'local',
      root: '/tmp',
    });
    assert.ok(launch !== null);
    const endpoint = (name: string): EndpointRecord => ({
      name,
      team: 'risk',
      model: 'fraud-xgb',
      version: 1,
      ref: 'latest',
      replicas: 1,
      config: { pool: 'small' },
      createdAt: at,
      updatedAt: at,
    });
    const endpoints = [endpoint('p1'), endpoint('p2')];
    const replicas = [
      {
        id: 'w0',
        endpoint: poolWorkerEndpoint('small'),
        revision: desired!.revision,
        state: 'ready' as const,
        url,
      },
    ];
    await pools.sync(endpoints, replicas, 0);
    assert.equal(taken.length, 1);
    assert.equal(tokens[0], launch.pool?.token);
    assert.deepEqual(
      taken[0]!.models.map((m) => m.endpoint),
      ['p1', 'p2'],
      'each endpoint is its own entry, though they share a revision',
    );
    for (const e of endpoints) {
      const route = pools.route(e, replicas, () => ({
        format: 'xgboost',
        schema: null,
        inputNaming: { declared: false, featureNames: null },
      }));
      assert.deepEqual(
        route.replicas.map((r) => r.id),
        ['w0'],
        `${e.name} is routed to the worker`,
      );
    }
  } finally {
    worker.close();
  }
});
