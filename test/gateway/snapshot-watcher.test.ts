// The real long poll against a fake control plane, persistence, and static stability.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { startGateway, type RunningGateway } from '../../src/gateway/start-gateway.ts';
import type { RoutingSnapshot } from '../../src/gateway/routing-snapshot.ts';
import { controlTokenFile, fileValue } from '../../src/gateway/gateway-record.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import {
  call,
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  snapshot,
} from './gateway-harness.ts';

interface FakeControlPlane {
  readonly url: string;
  /** `after` of every poll, as received ('' when absent). */
  readonly polls: string[];
  /** The authorization header of every poll ('' when absent). */
  readonly authorizations: string[];
  publish(snapshot: RoutingSnapshot): void;
  /** The next poll is answered at once with this snapshot, whatever its version. */
  answerNextWith(snapshot: RoutingSnapshot): void;
  /** The next `count` polls fail with 500. */
  failNext(count: number): void;
  /** Answers every held poll with 204. */
  releaseHeld(): void;
  close(): Promise<void>;
}

async function fakeControlPlane(initial: RoutingSnapshot | null): Promise<FakeControlPlane> {
  let current = initial;
  let forced: RoutingSnapshot | null = null;
  let failures = 0;
  const polls: string[] = [];
  const authorizations: string[] = [];
  const waiting = new Set<{ after: number; res: ServerResponse; timer: NodeJS.Timeout }>();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/api/v1/routing/snapshot') {
      res.writeHead(404).end();
      return;
    }
    const afterText = url.searchParams.get('after') ?? '';
    polls.push(afterText);
    authorizations.push(req.headers.authorization ?? '');
    if (failures > 0) {
      failures -= 1;
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{}}');
      return;
    }
    if (forced !== null) {
      const body = JSON.stringify(forced);
      forced = null;
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      return;
    }
    const after = afterText === '' ? -1 : Number(afterText);
    if (current !== null && current.version > after) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(current));
      return;
    }
    const waitMs = Number(url.searchParams.get('waitMs') ?? '25000');
    const entry = {
      after,
      res,
      timer: setTimeout(() => {
        waiting.delete(entry);
        res.writeHead(204).end();
      }, waitMs),
    };
    waiting.add(entry);
  });
  function releaseHeld(): void {
    for (const entry of waiting) {
      clearTimeout(entry.timer);
      waiting.delete(entry);
      entry.res.writeHead(204).end();
    }
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    polls,
    authorizations,
    publish(snapshot) {
      current = snapshot;
      for (const entry of waiting) {
        if (snapshot.version > entry.after) {
          clearTimeout(entry.timer);
          waiting.delete(entry);
          entry.res.writeHead(200, { 'content-type': 'application/json' });
          entry.res.end(JSON.stringify(snapshot));
        }
      }
    },
    answerNextWith(snapshot) {
      forced = snapshot;
      releaseHeld();
    },
    releaseHeld,
    failNext(count) {
      failures = count;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const entry of waiting) clearTimeout(entry.timer);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Waits (polling every 10 ms, at most 10 s) until `condition` holds. */
async function eventually(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function watchingGateway(controlUrl: string, stateDir: string): Promise<RunningGateway> {
  return startGateway({
    controlUrl,
    host: '127.0.0.1',
    port: 0,
    stateDir,
    pollWaitMs: 300,
    pollMinBackoffMs: 10,
    pollMaxBackoffMs: 50,
  });
}

test('the gateway follows the control plane by long polling, persists snapshots, and ignores older ones', async () => {
  const a = await fakeWorker();
  const b = await fakeWorker();
  const stateDir = await tempDir('kiln-gateway-state-');
  const control = await fakeControlPlane(
    snapshot(1, [endpointRoute({ replicas: [replicaRoute(a, 'a')] })]),
  );
  const gateway = await watchingGateway(control.url, stateDir);
  try {
    await eventually(() => gateway.snapshotVersion() === 1, 'snapshot 1');
    assert.equal(control.polls[0], '', 'the first poll asks for any snapshot');
    assert.equal((await infer(gateway.url)).headers.get('kiln-replica'), 'a');

    control.publish(snapshot(3, [endpointRoute({ replicas: [replicaRoute(b, 'b')] })]));
    await eventually(() => gateway.snapshotVersion() === 3, 'snapshot 3');
    assert.equal((await infer(gateway.url)).headers.get('kiln-replica'), 'b');
    await eventually(() => control.polls.includes('3'), 'a poll after version 3');

    // An older snapshot (a lagging control-plane replica, say) is ignored.
    const pollsBefore = control.polls.length;
    control.answerNextWith(snapshot(2, [endpointRoute({ replicas: [replicaRoute(a, 'a')] })]));
    await eventually(() => control.polls.length >= pollsBefore + 2, 'the stale answer consumed');
    assert.equal(gateway.snapshotVersion(), 3);
    assert.equal((await infer(gateway.url)).headers.get('kiln-replica'), 'b');

    // Failed polls back off and recover.
    const pollsBeforeFailures = control.polls.length;
    control.failNext(3);
    control.releaseHeld();
    await eventually(() => control.polls.length >= pollsBeforeFailures + 4, 'polls after failures');
    control.publish(snapshot(4, [endpointRoute({ replicas: [replicaRoute(a, 'a')] })]));
    await eventually(() => gateway.snapshotVersion() === 4, 'snapshot 4');
  } finally {
    await gateway.close();
  }
  const persisted = JSON.parse(
    await readFile(join(stateDir, 'routing-snapshot.json'), 'utf8'),
  ) as RoutingSnapshot;
  assert.equal(persisted.version, 4);
  await control.close();

  // Static stability: the control plane is down, a new gateway serves the persisted snapshot.
  const restarted = await watchingGateway(control.url, stateDir);
  try {
    assert.equal(restarted.snapshotVersion(), 4);
    assert.equal((await call(restarted.url, 'GET', '/v2/health/ready')).status, 200);
    const reply = await infer(restarted.url);
    assert.equal(reply.status, 200);
    assert.equal(reply.headers.get('kiln-replica'), 'a');
  } finally {
    await restarted.close();
  }
});

test('a gateway with no snapshot and no control plane is live but not ready', async () => {
  const stateDir = await tempDir('kiln-gateway-state-');
  const control = await fakeControlPlane(null);
  await control.close();
  const gateway = await watchingGateway(control.url, stateDir);
  try {
    assert.equal(gateway.snapshotVersion(), 0);
    assert.equal((await call(gateway.url, 'GET', '/v2/health/live')).status, 200);
    assert.equal((await call(gateway.url, 'GET', '/v2/health/ready')).status, 503);
  } finally {
    await gateway.close();
  }
});

test('a corrupt persisted snapshot is ignored', async () => {
  const { writeFile } = await import('node:fs/promises');
  const stateDir = await tempDir('kiln-gateway-state-');
  await writeFile(join(stateDir, 'routing-snapshot.json'), '{"version": 7, "endp');
  const control = await fakeControlPlane(null);
  const gateway = await watchingGateway(control.url, stateDir);
  try {
    assert.equal(gateway.snapshotVersion(), 0);
  } finally {
    await gateway.close();
    await control.close();
  }
});

test('each poll sends the token of the moment: a gateway follows the token file its platform replaces', async () => {
  const control = await fakeControlPlane(null);
  const stateDir = await tempDir('kiln-gateway-state-');
  // No file yet: the token it was started with.
  const token = fileValue(controlTokenFile(stateDir), 'kiln_ct_started-with');
  const gateway = await startGateway({
    controlUrl: control.url,
    controlToken: token,
    host: '127.0.0.1',
    port: 0,
    stateDir,
    pollWaitMs: 300,
    pollMinBackoffMs: 10,
    pollMaxBackoffMs: 50,
  });
  try {
    await eventually(
      () => control.authorizations.includes('Bearer kiln_ct_started-with'),
      'a poll with the starting token',
    );
    // A restarted platform replaced the token (the old one was revoked).
    await writeFile(controlTokenFile(stateDir), 'kiln_ct_replaced\n', { mode: 0o600 });
    control.releaseHeld();
    await eventually(
      () => control.authorizations.at(-1) === 'Bearer kiln_ct_replaced',
      'a poll with the replaced token',
    );
  } finally {
    await gateway.close();
    await control.close();
  }
});
