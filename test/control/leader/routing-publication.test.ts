// The routing snapshot through the store on a real PostgreSQL: what the leader publishes a
// follower serves (version included); a deposed leader's publication is refused by its epoch
// and the follower keeps serving the last snapshot while no leader publishes.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { PgDatabase } from '../../../src/store/postgres/pg-database.ts';
import { PgStore } from '../../../src/store/postgres/pg-store.ts';
import { LeaderLease } from '../../../src/control/leader/leader-lease.ts';
import {
  readPublishedRouting,
  RoutingFollower,
  RoutingPublisher,
} from '../../../src/control/leader/routing-publication.ts';
import { RoutingTable } from '../../../src/control/routing-table.ts';
import type { RoutingSnapshot } from '../../../src/gateway/routing-snapshot.ts';
import { systemClock } from '../../../src/core/clock.ts';
import { postgresServer, postgresUnavailable } from '../../helpers/postgres-server.ts';
import { until } from '../../helpers/until.ts';

const skip = postgresUnavailable() ?? false;
const server = skip === false ? await postgresServer() : null;

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close().catch(() => undefined);
});

async function fencedStore(url: string): Promise<PgStore> {
  const store = await PgStore.open(url);
  opened.push(store);
  return store;
}

function content(name: string): Omit<RoutingSnapshot, 'version' | 'generatedAt'> {
  return {
    auth: 'dev',
    endpoints: [],
    apiKeys: [{ id: name, sha256: name.padEnd(64, '0'), team: null, endpoint: null }],
    teamLimits: [],
  };
}

test(
  'a follower serves the snapshot the leader published; a deposed leader cannot publish',
  { skip },
  async () => {
    const url = await server!.createDatabase();
    const storeA = await fencedStore(url);
    const storeB = await fencedStore(url);
    const follower = new RoutingFollower(storeB.db, systemClock, 10);
    opened.push(follower);
    follower.start();

    // A leads: its reconciler's table publishes, the publisher copies each snapshot.
    const leaseDb = new PgDatabase(url, { max: 2 });
    opened.push(leaseDb);
    const a = new LeaderLease({ db: leaseDb, holder: 'a', leaseMs: 300, renewMs: 50 });
    const termA = await a.attempt();
    assert.ok(termA !== null);
    storeA.setFence({ lease: 'controllers', ...termA });
    const tableA = new RoutingTable(content('first'), systemClock);
    const publisherA = new RoutingPublisher(storeA.db, termA, systemClock);
    tableA.onPublish((snapshot) => publisherA.publish(snapshot));
    tableA.publish(content('one'));
    await publisherA.flushed();
    const published = tableA.current();

    // A gateway polling the follower gets exactly the leader's snapshot.
    const got = await follower.routing.waitForNewer(0, 5_000);
    assert.deepEqual(got, published);

    // A stops renewing; B takes over and continues above A's versions.
    const b = new LeaderLease({
      db: new PgDatabase(url, { max: 2 }),
      holder: 'b',
      leaseMs: 300,
      renewMs: 50,
    });
    opened.push({ close: () => b.close() });
    b.start();
    await until(() => b.term() !== null, 'b to lead');
    const termB = b.term()!;
    storeB.setFence({ lease: 'controllers', ...termB });
    const tableB = new RoutingTable(content('first'), { now: () => 1 });
    tableB.advancePast((await readPublishedRouting(storeB.db))?.version ?? 0);
    const publisherB = new RoutingPublisher(storeB.db, termB, systemClock);
    tableB.onPublish((snapshot) => publisherB.publish(snapshot));

    // Meanwhile the follower keeps the last snapshot (no leader has published since).
    assert.deepEqual(follower.routing.current(), published);

    // A, paused and resuming, publishes: refused by its epoch, nothing written.
    const logged: string[] = [];
    const stale = new RoutingPublisher(storeA.db, termA, systemClock, (m) => logged.push(m));
    stale.publish({ ...published, version: published.version + 100 });
    await stale.flushed();
    assert.match(logged.join('\n'), /lost the leader lease/);
    assert.equal((await readPublishedRouting(storeB.db))?.version, published.version);

    tableB.publish(content('two'));
    await publisherB.flushed();
    const newer = tableB.current();
    assert.ok(newer.version > published.version, `${newer.version} after ${published.version}`);
    const row = await readPublishedRouting(storeB.db);
    assert.deepEqual(row, {
      version: newer.version,
      holder: 'b',
      epoch: termB.epoch,
      snapshot: newer,
    });
    assert.deepEqual(await follower.routing.waitForNewer(published.version, 5_000), newer);
    await a.close({ release: false });
  },
);

test(
  "before anything is published a follower holds gateways' polls (no empty snapshot)",
  { skip },
  async () => {
    const url = await server!.createDatabase();
    const store = await fencedStore(url);
    const follower = new RoutingFollower(store.db, systemClock, 10);
    opened.push(follower);
    follower.start();
    await follower.poll();
    assert.equal(await follower.routing.waitForNewer(0, 50), null);
  },
);
