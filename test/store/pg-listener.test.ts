// Notifications between control planes on a real PostgreSQL (pg-listener.ts): a committed
// write of a store opened with a notify channel wakes a listener on another connection; a
// refused write notifies nothing; a listener whose connection the server kills reconnects,
// calls its handlers once for what it may have missed, and hears later writes; and a follower
// whose periodic read is an hour away still serves a published snapshot, woken by the
// publisher's notification.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import pg from 'pg';
import { PgStore } from '../../src/store/postgres/pg-store.ts';
import { PgDatabase } from '../../src/store/postgres/pg-database.ts';
import {
  PgListener,
  routingPublishedChannel,
  storeChangedChannel,
} from '../../src/store/postgres/pg-listener.ts';
import { LeaderLease } from '../../src/control/leader/leader-lease.ts';
import { RoutingFollower, RoutingPublisher } from '../../src/control/leader/routing-publication.ts';
import { RoutingTable } from '../../src/control/routing-table.ts';
import { systemClock } from '../../src/core/clock.ts';
import { KilnError } from '../../src/core/errors.ts';
import { postgresServer, postgresUnavailable } from '../helpers/postgres-server.ts';
import { until } from '../helpers/until.ts';

const skip = postgresUnavailable() ?? false;
const server = skip === false ? await postgresServer() : null;

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close().catch(() => undefined);
});

test('a committed write notifies a listener; a refused one does not', { skip }, async () => {
  const url = await server!.createDatabase();
  const store = await PgStore.open(url, { notifyChannel: storeChangedChannel });
  opened.push(store);
  let heard = 0;
  const listener = new PgListener(url, { [storeChangedChannel]: () => (heard += 1) });
  opened.push(listener);
  listener.start();
  await listener.listening();

  await store.createModel({ name: 'm', team: 'default', description: '' });
  await until(() => heard === 1, 'the notification of the committed write');

  // Refused (the name is taken): rolled back, so nothing is delivered. A later committed
  // write's notification is the next one heard.
  await assert.rejects(
    store.createModel({ name: 'm', team: 'default', description: '' }),
    (error) => error instanceof KilnError,
  );
  await store.createModel({ name: 'n', team: 'default', description: '' });
  await until(() => heard >= 2, 'the second committed write');
  assert.equal(heard, 2);
});

test(
  'a listener whose connection dies reconnects, catches up once, and hears later writes',
  { skip },
  async () => {
    const url = await server!.createDatabase();
    const db = new PgDatabase(url, { notifyChannel: storeChangedChannel });
    opened.push(db);
    let heard = 0;
    const logged: string[] = [];
    const listener = new PgListener(
      url,
      { [storeChangedChannel]: () => (heard += 1) },
      (message) => logged.push(message),
      20,
    );
    opened.push(listener);
    listener.start();
    await listener.listening();

    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    opened.push({ close: () => admin.end() });
    const killed = await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE datname = current_database() AND query LIKE 'LISTEN%'`,
    );
    assert.equal(killed.rowCount, 1);
    // Reconnected: the handler runs once for whatever was missed while it was down.
    await until(() => heard === 1, 'the catch-up call after the reconnect');
    assert.ok(
      logged.some((m) => m.startsWith('notifications lost')),
      logged.join('\n'),
    );
    await listener.listening();
    await db.write((c) => c.query('SELECT 1'));
    await until(() => heard === 2, 'a write after the reconnect');
  },
);

test(
  'a follower serves a published snapshot at once, its own poll an hour away',
  { skip },
  async () => {
    const url = await server!.createDatabase();
    const leaderStore = await PgStore.open(url);
    const followerStore = await PgStore.open(url);
    opened.push(leaderStore, followerStore);
    const follower = new RoutingFollower(followerStore.db, systemClock, 3_600_000);
    opened.push(follower);
    const listener = new PgListener(url, { [routingPublishedChannel]: () => void follower.poll() });
    opened.push(listener);
    listener.start();
    await listener.listening();
    follower.start(); // its first read finds nothing published yet

    const leaseDb = new PgDatabase(url, { max: 2 });
    opened.push(leaseDb);
    const lease = new LeaderLease({ db: leaseDb, holder: 'a', leaseMs: 10_000, renewMs: 2_500 });
    const term = await lease.attempt();
    assert.ok(term !== null);
    leaderStore.setFence({ lease: 'controllers', ...term });
    const table = new RoutingTable(
      { auth: 'dev', endpoints: [], apiKeys: [], teamLimits: [] },
      systemClock,
    );
    const publisher = new RoutingPublisher(leaderStore.db, term, systemClock);
    table.onPublish((snapshot) => publisher.publish(snapshot));
    table.publish({
      auth: 'dev',
      endpoints: [],
      apiKeys: [{ id: 'k1', sha256: 'a'.repeat(64), team: 'default', endpoint: null }],
      teamLimits: [],
    });
    await publisher.flushed();
    const got = await follower.routing.waitForNewer(0, 30_000);
    assert.deepEqual(got, table.current());
  },
);
