// The controllers' lease on a real PostgreSQL: two and three contenders (in-process, each
// with its own pool: separate control planes as the database sees them), exactly one leader
// at every observation, takeover after the leader stops renewing, and a stale leader's
// writes refused by its epoch.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { PgDatabase } from '../../../src/store/postgres/pg-database.ts';
import { PgStore } from '../../../src/store/postgres/pg-store.ts';
import { LeaderLease, type LeaseTerm } from '../../../src/control/leader/leader-lease.ts';
import { isKilnError } from '../../../src/core/errors.ts';
import { postgresServer, postgresUnavailable } from '../../helpers/postgres-server.ts';
import { until } from '../../helpers/until.ts';

const skip = postgresUnavailable() ?? false;
// Started here, not inside a test: the server lives until the file ends.
const server = skip === false ? await postgresServer() : null;

/** A fresh migrated database. */
async function freshDatabase(): Promise<string> {
  const url = await server!.createDatabase();
  const store = await PgStore.open(url);
  await store.close();
  return url;
}

// What a test opened, closed after it (before the server stops at the end of the file).
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close().catch(() => undefined);
});

function database(url: string): PgDatabase {
  const db = new PgDatabase(url, { max: 2 });
  opened.push(db);
  return db;
}

function contender(url: string, name: string, leaseMs = 600, renewMs = 100): LeaderLease {
  const lease = new LeaderLease({ db: database(url), holder: name, leaseMs, renewMs });
  opened.push({ close: () => lease.close({ release: false }) });
  return lease;
}

/**
 * Polls every contender until `done` holds, failing on any observation where two believe
 * they lead, or where the believed leader is not the row's holder at that epoch.
 */
async function watch(
  url: string,
  leases: readonly LeaderLease[],
  done: (leading: readonly (LeaseTerm & { readonly lease: LeaderLease })[]) => boolean,
  what: string,
): Promise<number> {
  const db = database(url);
  const deadline = Date.now() + 20_000;
  let observations = 0;
  while (Date.now() < deadline) {
    const leading = leases.flatMap((lease) => {
      const term = lease.term();
      return term === null ? [] : [{ ...term, lease }];
    });
    observations += 1;
    assert.ok(
      leading.length <= 1,
      `two leaders at once: ${leading.map((l) => l.holder).join(', ')}`,
    );
    const believed = leading[0];
    if (believed !== undefined) {
      const row = (
        await db.read((c) =>
          c.query<{ holder: string; epoch: number }>(
            "SELECT holder, epoch FROM leases WHERE name = 'controllers'",
          ),
        )
      ).rows[0];
      // The row may have moved on since the belief was read only if the believer's deadline
      // passed meanwhile; then it no longer believes.
      if (row?.holder !== believed.holder || row.epoch !== believed.epoch)
        assert.equal(believed.lease.term(), null, 'a leader the row no longer names');
    }
    if (done(leading)) return observations;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assert.fail(`timed out waiting for ${what}`);
}

for (const count of [2, 3]) {
  test(
    `${count} contenders: one leader at a time; a killed leader is taken over with a higher epoch`,
    { skip },
    async () => {
      const url = await freshDatabase();
      const leases = Array.from({ length: count }, (_, i) => contender(url, `plane-${i}`));
      const changes: string[] = [];
      for (const lease of leases)
        lease.onChange((term) =>
          changes.push(`${lease.holder}:${term === null ? 'lost' : term.epoch}`),
        );
      for (const lease of leases) lease.start();
      let first: (LeaseTerm & { lease: LeaderLease }) | undefined;
      await watch(url, leases, (leading) => (first = leading[0]) !== undefined, 'a first leader');
      assert.ok(first !== undefined);
      // It keeps the lease while it renews: several renew periods pass with no other leader.
      const renewalsBefore = changes.length;
      let stillFirst = 0;
      await watch(
        url,
        leases,
        (leading) => {
          if (leading[0]?.holder === first!.holder) stillFirst += 1;
          return stillFirst >= 100;
        },
        'the leader to keep its lease',
      );
      assert.equal(changes.length, renewalsBefore, 'renewals changed nothing');
      // Killed: it stops renewing without releasing; another takes over after expiry.
      await first.lease.close({ release: false });
      const rest = leases.filter((l) => l !== first!.lease);
      let next: (LeaseTerm & { lease: LeaderLease }) | undefined;
      await watch(url, leases, (leading) => (next = leading[0]) !== undefined, 'a new leader');
      assert.ok(next !== undefined && rest.includes(next.lease));
      assert.ok(next.epoch > first.epoch, `epoch ${next.epoch} after ${first.epoch}`);
      for (const lease of rest) await lease.close();
    },
  );
}

test(
  'a leader shutting down releases the lease: another takes it at its next attempt',
  { skip },
  async () => {
    const url = await freshDatabase();
    // A lease far longer than the test: only the release can hand it over.
    const a = contender(url, 'a', 600_000, 100);
    const b = contender(url, 'b', 600_000, 100);
    assert.deepEqual(await a.attempt(), { holder: 'a', epoch: 1 });
    b.start();
    await watch(url, [a, b], () => b.lastSeen()?.holder === 'a', 'b to see a holding');
    assert.equal(b.term(), null);
    await a.close();
    await watch(url, [a, b], (leading) => leading[0]?.holder === 'b', 'b to lead');
    assert.equal(b.term()?.epoch, 2);
  },
);

test(
  'a stale leader: its fenced writes are refused by epoch and nothing is written',
  { skip },
  async () => {
    const url = await freshDatabase();
    const a = contender(url, 'a');
    const b = contender(url, 'b');
    const termA = await a.attempt();
    assert.deepEqual(termA, { holder: 'a', epoch: 1 });
    // A's controllers write through a store fenced with its term.
    const fenced = await PgStore.open(url);
    opened.push(fenced);
    fenced.setFence({ lease: 'controllers', ...termA });
    await fenced.db.write((c) => c.query('CREATE TABLE probe (what TEXT NOT NULL)'));
    await fenced.db.write((c) => c.query("INSERT INTO probe VALUES ('a, leading')"));
    // A pauses (no more renewals: as if its process were stopped); B takes over after expiry.
    b.start();
    await watch(url, [b], (leading) => leading[0]?.holder === 'b', 'b to take over');
    assert.equal(b.term()?.epoch, 2);
    // A's write, made as if it had not noticed: refused by the fence, nothing written.
    await assert.rejects(
      fenced.db.write((c) => c.query("INSERT INTO probe VALUES ('a, stale')")),
      (error: unknown) => isKilnError(error) && error.code === 'KILN_LEADER_FENCED',
    );
    const rows = await fenced.db.read((c) => c.query<{ what: string }>('SELECT what FROM probe'));
    assert.deepEqual(
      rows.rows.map((r) => r.what),
      ['a, leading'],
    );
    // A itself, when it looks again, knows it lost (its deadline passed long ago).
    assert.equal(a.term(), null);
    assert.equal(await a.attempt(), null);
    assert.equal(a.lastSeen()?.holder, 'b');
  },
);

test(
  'a holder taking back its own expired lease starts a new epoch (an earlier term stays fenced)',
  { skip },
  async () => {
    const url = await freshDatabase();
    const db = database(url);
    const a = contender(url, 'a', 200, 50);
    assert.equal((await a.attempt())?.epoch, 1);
    // Wait (on the database's clock) until the row has expired.
    for (;;) {
      const left = (
        await db.read((c) =>
          c.query<{ left: number }>(
            "SELECT expires_at_ms - (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS left FROM leases WHERE name = 'controllers'",
          ),
        )
      ).rows[0]!.left;
      if (left < 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(a.term(), null, 'past its deadline it no longer believes it leads');
    assert.equal((await a.attempt())?.epoch, 2);
  },
);

test('renewal settings are checked', () => {
  const db = new PgDatabase('postgres://127.0.0.1:1/none');
  opened.push(db);
  assert.throws(() => new LeaderLease({ db, leaseMs: 1000, renewMs: 600 }), /renewMs/);
  assert.throws(() => new LeaderLease({ db, leaseMs: 1000, renewMs: 0 }), /renewMs/);
});

test(
  'a takeover waits for the fenced write in progress: it commits under its term, nothing of it after',
  { skip },
  async () => {
    const url = await freshDatabase();
    const a = contender(url, 'a', 300, 50);
    const b = contender(url, 'b', 300, 50);
    const termA = await a.attempt();
    assert.ok(termA !== null);
    const fenced = await PgStore.open(url);
    opened.push(fenced);
    fenced.setFence({ lease: 'controllers', ...termA });
    await fenced.db.write((c) => c.query('CREATE TABLE probe (what TEXT NOT NULL)'));
    const order: string[] = [];
    let finish!: () => void;
    const finishing = new Promise<void>((resolve) => (finish = resolve));
    let checked!: () => void;
    const inside = new Promise<void>((resolve) => (checked = resolve));
    // A's write passes its fence check, then stays open (a slow controller write).
    const writing = fenced.db
      .write(async (c) => {
        checked();
        await finishing;
        await c.query("INSERT INTO probe VALUES ('a')");
      })
      .then(() => order.push('a committed'));
    await inside;
    let taking: Promise<LeaseTerm | null> = Promise.resolve(null);
    try {
      // The row expires meanwhile (the database's clock); B's takeover must wait for A's write.
      const db = database(url);
      await until(async () => {
        const row = await db.read((c) =>
          c.query<{ left: number }>(
            "SELECT expires_at_ms - (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS left FROM leases WHERE name = 'controllers'",
          ),
        );
        return row.rows[0]!.left < 0;
      }, 'the lease to expire');
      taking = b.attempt().then((term) => {
        order.push('b took over');
        return term;
      });
      // B's statement is blocked on the row A's write holds: let A commit, then B takes over.
      await until(async () => {
        const waiting = await db.read((c) =>
          c.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO leases%'",
          ),
        );
        return waiting.rows[0]!.n === 1;
      }, "b's takeover to wait on the lease row");
    } finally {
      // Whatever failed above, A's transaction ends (closing the pools waits for it).
      finish();
    }
    await writing;
    assert.equal((await taking)?.epoch, 2);
    assert.deepEqual(order, ['a committed', 'b took over']);
    // From then on A's writes are refused.
    await assert.rejects(
      fenced.db.write((c) => c.query("INSERT INTO probe VALUES ('a again')")),
      (error: unknown) => isKilnError(error) && error.code === 'KILN_LEADER_FENCED',
    );
  },
);

test('a long write under the store lock does not hold up a renewal', { skip }, async () => {
  const url = await freshDatabase();
  const a = contender(url, 'a', 600_000, 100);
  assert.equal((await a.attempt())?.epoch, 1);
  const store = await PgStore.open(url);
  opened.push(store);
  let finish!: () => void;
  const finishing = new Promise<void>((resolve) => (finish = resolve));
  let inside!: () => void;
  const holding = new Promise<void>((resolve) => (inside = resolve));
  // An API write (unfenced) that holds the write lock: a gc deleting many objects, say.
  const long = store.db.write(async () => {
    inside();
    await finishing;
  });
  await holding;
  assert.deepEqual(await a.attempt(), { holder: 'a', epoch: 1 });
  finish();
  await long;
});
