// PostgreSQL-only store tests: what has no SQLite counterpart — a server that cannot be
// reached or used (KILN_STORE_UNAVAILABLE naming the cause, promptly), the write lock held
// while asynchronous work of a transaction runs, and an endpoint delete taking its traffic
// and scale state with it, seeded here row by row (the traffic API's own contract tests do
// it through updateEndpointTraffic).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import pg from 'pg';
import { KilnError } from '../../src/core/errors.ts';
import { PgDatabase } from '../../src/store/postgres/pg-database.ts';
import { PgStore } from '../../src/store/postgres/pg-store.ts';
import { openStoreUnderTest } from '../helpers/store-kinds.ts';
import { postgresServer, postgresUnavailable } from '../helpers/postgres-server.ts';
import { placeholderVersion } from '../helpers/stored-version.ts';
import { until } from '../helpers/until.ts';

const skip = postgresUnavailable();
const options = skip === null ? {} : { skip };

function unavailable(cause: RegExp) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof KilnError, `expected KilnError, got ${String(error)}`);
    assert.equal(error.code, 'KILN_STORE_UNAVAILABLE', error.message);
    assert.match(error.message, cause);
    return true;
  };
}

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function asSuperuser<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

test(
  'a URL that cannot connect is KILN_STORE_UNAVAILABLE naming why: closed port, wrong password, no such database',
  options,
  async () => {
    const server = await postgresServer();
    await assert.rejects(
      PgStore.open(`postgres://postgres:x@127.0.0.1:${await closedPort()}/kiln`),
      unavailable(/ECONNREFUSED/),
    );
    await assert.rejects(
      PgStore.open(server.url('postgres').replace(/:[^:@]*@/, ':wrong@')),
      unavailable(/password authentication failed/),
    );
    await assert.rejects(
      PgStore.open(server.url('no_such_database')),
      unavailable(/database "no_such_database" does not exist/),
    );
  },
);

test(
  'a role that may connect but not create the tables is KILN_STORE_UNAVAILABLE naming the permission',
  options,
  async () => {
    const server = await postgresServer();
    const url = await server.createDatabase();
    await asSuperuser(url, async (client) => {
      await client.query(`CREATE ROLE kiln_reader LOGIN PASSWORD 'reader'`);
    });
    const asReader = url.replace('postgres:kiln-test@', 'kiln_reader:reader@');
    await assert.rejects(
      PgStore.open(asReader),
      unavailable(/permission denied for schema public/),
    );
  },
);

test(
  'a server that accepts the connection and never answers is unavailable after the connection timeout, not a hang',
  options,
  async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    const db = new PgDatabase(`postgres://postgres:x@127.0.0.1:${port}/kiln`, {
      connectionTimeoutMillis: 200,
    });
    try {
      await assert.rejects(
        db.read((c) => c.query('SELECT 1')),
        unavailable(/timeout/),
      );
      await assert.rejects(
        db.write((c) => c.query('SELECT 1')),
        unavailable(/timeout/),
      );
      assert.ok(sockets.length >= 1, 'the server was reached');
    } finally {
      await db.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  },
);

/** Advisory-lock waiters: writes of other transactions queued behind the write lock. */
async function lockWaiters(url: string): Promise<number> {
  return asSuperuser(url, async (client) => {
    const rows = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`,
    );
    return Number(rows.rows[0]?.n ?? 0);
  });
}

test(
  'gc holds the write lock while its (asynchronous) work runs: a registration from another control plane waits for it',
  options,
  async () => {
    const subject = await openStoreUnderTest('postgres');
    try {
      const { store, location } = subject;
      const other = await subject.openAnother();
      await store.createModel({ name: 'm', team: 'default', description: '' });
      const events: string[] = [];
      let registration: Promise<unknown> = Promise.resolve();
      const live = await store.withLiveBlobDigests(async (digests) => {
        events.push('gc start');
        registration = other.createVersion('m', placeholderVersion()).then((v) => {
          events.push(`registered ${v.version}`);
        });
        await until(async () => (await lockWaiters(location)) === 1, 'the registration to wait');
        events.push('gc end');
        return [...digests];
      });
      await registration;
      assert.deepEqual(live, []);
      assert.deepEqual(events, ['gc start', 'gc end', 'registered 1']);
      assert.deepEqual([...(await store.liveBlobDigests())], ['a'.repeat(64)]);
    } finally {
      await subject.close();
    }
  },
);

test(
  "a registration's asynchronous check runs under the write lock and is awaited: what it rejects writes nothing",
  options,
  async () => {
    const subject = await openStoreUnderTest('postgres');
    try {
      const { store, location } = subject;
      const other = await subject.openAnother();
      await store.createModel({ name: 'm', team: 'default', description: '' });
      const events: string[] = [];
      let competing: Promise<unknown> = Promise.resolve();
      const check = async (): Promise<void> => {
        events.push('check start');
        competing = other.setAlias('m', 'x', 1).catch((error: unknown) => {
          events.push(`alias ${(error as KilnError).code}`);
        });
        await until(async () => (await lockWaiters(location)) === 1, 'the alias move to wait');
        events.push('check end');
      };
      const created = await store.createVersion('m', placeholderVersion(), {
        check,
      });
      await competing;
      assert.equal(created.version, 1);
      // The alias move waited for the registration, so it found version 1 there.
      assert.deepEqual(events, ['check start', 'check end']);
      assert.equal(await store.resolveAlias('m', 'x'), 1);

      const refused = new Error('blob gone');
      await assert.rejects(
        store.createVersion('m', placeholderVersion(), {
          check: async () => {
            await other.getModel('m');
            throw refused;
          },
        }),
        (error) => error === refused,
      );
      assert.equal((await store.getModel('m'))?.versionCount, 1, 'nothing written');
      assert.equal((await store.createVersion('m', placeholderVersion())).version, 2);
    } finally {
      await subject.close();
    }
  },
);

test(
  'deleting an endpoint aborts its rollout, stops its experiment, drops its traffic and scale rows; a rollout or experiment refuses a move and keeps its versions',
  options,
  async () => {
    const subject = await openStoreUnderTest('postgres');
    try {
      const { store, clock, location } = subject;
      await store.createModel({ name: 'iris', team: 'default', description: '' });
      for (let i = 0; i < 4; i++) await store.createVersion('iris', placeholderVersion());
      const put = (version: number) =>
        store.putEndpoint({
          name: 'iris',
          team: 'default',
          model: 'iris',
          version,
          ref: String(version),
          replicas: 1,
          config: {},
        });
      await put(1);
      const at = new Date(clock.ms).toISOString();
      const seed = (sql: string, values: unknown[]) =>
        asSuperuser(location, (client) => client.query(sql, values));
      await seed(
        `INSERT INTO endpoint_traffic (endpoint, policy_json, previous_json, warm_json, staged_json,
         revision, updated_at) VALUES ('iris', NULL, NULL, '[]', $1, 1, $2)`,
        [JSON.stringify([{ model: 'iris', version: 4 }]), at],
      );
      await seed(
        `INSERT INTO rollouts (id, endpoint, strategy, baseline_model, baseline_version,
         canary_model, canary_version, steps_json, step_index, interval_ms, thresholds_json,
         slice_key, slice_path, state, step_started_at, paused_at, reason, last_analysis_json,
         created_by, created_at, updated_at, finished_at)
       VALUES ('r-1', 'iris', 'canary', 'iris', 1, 'iris', 2, '[1,100]', 0, 1000, '{}',
         NULL, NULL, 'running', $1, NULL, NULL, 'null', 'ci', $1, $1, NULL)`,
        [at],
      );
      await seed(
        `INSERT INTO experiments (id, endpoint, name, variants_json, salt, key_path, state,
         created_by, created_at, stopped_at)
       VALUES ('x-1', 'iris', 'ab', $1, 's', NULL, 'running', 'ci', $2, NULL)`,
        [JSON.stringify([{ model: 'iris', version: 3, weight: 100 }]), at],
      );
      await seed(
        `INSERT INTO endpoint_scale (endpoint, replicas, reason, last_demand_at, updated_at)
       VALUES ('iris', 2, 'test', NULL, $1)`,
        [at],
      );

      await assert.rejects(put(2), { code: 'KILN_ROLLOUT_IN_PROGRESS' });
      assert.equal((await store.getEndpoint('iris'))?.version, 1);
      for (const [version, user] of [
        [2, /rollout r-1/],
        [3, /experiment x-1/],
        [4, /traffic of endpoint iris/],
      ] as const) {
        await assert.rejects(store.deleteVersion('iris', version), (error: unknown) => {
          assert.equal((error as KilnError).code, 'KILN_VERSION_IN_USE');
          assert.match((error as Error).message, user);
          return true;
        });
      }
      await seed(`UPDATE rollouts SET state = 'aborted' WHERE id = 'r-1'`, []);
      await assert.rejects(put(2), { code: 'KILN_EXPERIMENT_IN_PROGRESS' });
      await seed(`UPDATE rollouts SET state = 'paused' WHERE id = 'r-1'`, []);

      clock.advance(1000);
      assert.equal((await store.deleteEndpoint('iris'))?.name, 'iris');
      const after = await asSuperuser(location, async (client) => ({
        traffic: (await client.query('SELECT * FROM endpoint_traffic')).rows.length,
        scale: (await client.query('SELECT * FROM endpoint_scale')).rows.length,
        rollout: (await client.query(`SELECT state, reason, finished_at FROM rollouts`)).rows,
        experiment: (await client.query(`SELECT state, stopped_at FROM experiments`)).rows,
      }));
      const then = new Date(clock.ms).toISOString();
      assert.deepEqual(after, {
        traffic: 0,
        scale: 0,
        rollout: [{ state: 'aborted', reason: 'the endpoint was deleted', finished_at: then }],
        experiment: [{ state: 'stopped', stopped_at: then }],
      });
      for (const version of [1, 2, 3, 4]) await store.deleteVersion('iris', version);
    } finally {
      await subject.close();
    }
  },
);
