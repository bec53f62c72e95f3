// The audit log's edges, on the API server alone: a client that leaves after its whole call
// arrived does not undo the call, so its record says how the call ended (not 499).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { request } from 'node:http';
import { join } from 'node:path';
import { buildApiServer } from '../../src/control/api/api-server.ts';
import { issueToken } from '../../src/control/control-tokens.ts';
import { ArtifactStore } from '../../src/registry/artifact-store.ts';
import { Registry } from '../../src/registry/registry.ts';
import type { AuditRecord } from '../../src/store/access-records.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';
import { until } from '../helpers/until.ts';

test('a call whose client leaves while it runs is audited with its real outcome', async () => {
  const home = await tempDir();
  const clock = new FakeClock();
  const store = SqliteStore.open(join(home, 'kiln.db'), { clock });
  const artifacts = new ArtifactStore(join(home, 'artifacts'), clock);
  await artifacts.init();
  const app = await buildApiServer({
    registry: new Registry(store, artifacts),
    home,
    version: 'test',
    auth: 'tokens',
    clock,
    maxUploadBytes: 1024,
  });
  after(async () => {
    await app.close();
    await store.close();
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const { token } = await issueToken(store, clock, { name: 'ops', role: 'admin', team: null });

  // Token creation held in the store until the client has gone and the server has seen it.
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  let holding = false;
  const addToken = store.addToken.bind(store);
  store.addToken = async (record) => {
    holding = true;
    await held;
    return addToken(record);
  };
  let seen: IncomingMessage | undefined;
  app.server.on('request', (incoming: IncomingMessage) => (seen = incoming));

  const body = JSON.stringify({ name: 'left-early', role: 'reader' });
  const client = request({
    host: '127.0.0.1',
    port,
    path: '/api/v1/tokens',
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
    },
  });
  client.on('error', () => undefined);
  client.end(body);
  await until(() => holding, 'the call to reach the store');
  let closed = false;
  // Registered after Node's own listener: when it runs, the request is aborted.
  seen!.socket.once('close', () => (closed = true));
  client.destroy();
  await until(() => closed, 'the server to see the client leave');
  release();

  const entries = async (): Promise<AuditRecord[]> =>
    (await store.listAudit({ limit: 50 })).items.filter((e) => e.route === '/api/v1/tokens');
  await until(async () => (await entries()).length > 0, 'the call in the audit log');
  const made = (await store.listTokens({ includeRevoked: true })).find(
    (t) => t.name === 'left-early',
  );
  assert.ok(made !== undefined, 'the token was made');
  const [entry] = await entries();
  assert.equal(entry?.status, 201, 'the record says how the call ended');
  assert.equal(entry?.code, null);
  assert.equal(entry?.tokenName, 'ops');
});
