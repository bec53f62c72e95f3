// ControllerLeadership on a real PostgreSQL: the controllers start only under a term, with
// the store fenced by it; on losing the lease the fence moves first (their writes refused at
// once), then they stop; three control planes take over one after another.

import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import { Registry as MetricsRegistry } from 'prom-client';
import { PgDatabase, type PgFence } from '../../../src/store/postgres/pg-database.ts';
import { PgStore } from '../../../src/store/postgres/pg-store.ts';
import { LeaderLease } from '../../../src/control/leader/leader-lease.ts';
import {
  ControllerLeadership,
  registerLeaderMetrics,
} from '../../../src/control/leader/controller-leadership.ts';
import { isKilnError } from '../../../src/core/errors.ts';
import { postgresServer, postgresUnavailable } from '../../helpers/postgres-server.ts';
import { until } from '../../helpers/until.ts';

const skip = postgresUnavailable() ?? false;
const server = skip === false ? await postgresServer() : null;

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close().catch(() => undefined);
});

interface Plane {
  readonly name: string;
  readonly lease: LeaderLease;
  readonly store: PgStore;
  readonly leadership: ControllerLeadership;
  readonly metrics: MetricsRegistry;
  /** What the controllers did: 'lead <epoch>' / 'stop', in order. */
  readonly events: string[];
  /** Whether the controllers are running. */
  running: boolean;
}

async function plane(url: string, name: string): Promise<Plane> {
  const store = await PgStore.open(url);
  opened.push(store);
  const db = new PgDatabase(url, { max: 2 });
  opened.push(db);
  const lease = new LeaderLease({ db, holder: name, leaseMs: 400, renewMs: 50 });
  const events: string[] = [];
  const metrics = new MetricsRegistry();
  const p: Plane = {
    name,
    lease,
    store,
    metrics,
    events,
    running: false,
    leadership: new ControllerLeadership({
      lease,
      fence: (fence: PgFence) => store.setFence(fence),
      lead: async (term) => {
        events.push(`lead ${term.epoch}`);
        // The controllers' first write, under the term's fence.
        await store.db.write((c) =>
          c.query('INSERT INTO probe (who, epoch) VALUES ($1, $2)', [name, term.epoch]),
        );
        p.running = true;
      },
      stepDown: async () => {
        events.push('stop');
        p.running = false;
        return Promise.resolve();
      },
    }),
  };
  registerLeaderMetrics(metrics, lease, p.leadership);
  opened.push({ close: () => p.leadership.close() });
  return p;
}

async function probeTable(url: string): Promise<void> {
  const store = await PgStore.open(url);
  await store.db.write((c) => c.query('CREATE TABLE probe (who TEXT NOT NULL, epoch BIGINT)'));
  await store.close();
}

async function writeAs(p: Plane): Promise<'written' | 'fenced'> {
  try {
    await p.store.db.write((c) =>
      c.query('INSERT INTO probe (who, epoch) VALUES ($1, NULL)', [p.name]),
    );
    return 'written';
  } catch (error) {
    if (isKilnError(error) && error.code === 'KILN_LEADER_FENCED') return 'fenced';
    throw error;
  }
}

test(
  "before its first term a control plane's controller writes are refused",
  { skip },
  async () => {
    const url = await server!.createDatabase();
    await probeTable(url);
    const a = await plane(url, 'a');
    assert.equal(await writeAs(a), 'fenced');
    assert.equal(a.leadership.leading(), false);
  },
);

test(
  'three control planes: one runs the controllers; each loss stops them and fences at once; the next takes over',
  { skip },
  async () => {
    const url = await server!.createDatabase();
    await probeTable(url);
    const planes = await Promise.all(['a', 'b', 'c'].map((n) => plane(url, n)));
    const check = (): Plane | undefined => {
      const running = planes.filter((p) => p.running);
      assert.ok(
        running.length <= 1,
        `controllers running in ${running.map((p) => p.name).join(', ')}`,
      );
      const leading = planes.filter((p) => p.leadership.leading());
      assert.ok(leading.length <= 1, `leading: ${leading.map((p) => p.name).join(', ')}`);
      return running[0];
    };
    for (const p of planes) p.leadership.start();
    const seen: string[] = [];
    let previousEpoch = 0;
    for (let round = 0; round < 3; round += 1) {
      let leader: Plane | undefined;
      await until(
        () => (leader = check()) !== undefined && !seen.includes(leader.name),
        `leader ${round + 1}`,
      );
      assert.ok(leader !== undefined);
      seen.push(leader.name);
      const epoch = leader.lease.term()?.epoch ?? 0;
      assert.ok(epoch > previousEpoch);
      previousEpoch = epoch;
      assert.equal(await writeAs(leader), 'written');
      assert.match(
        await leader.metrics.metrics(),
        new RegExp(`kiln_control_leader\\{holder="${leader.name}"\\} 1`),
      );
      assert.match(await leader.metrics.metrics(), new RegExp(`kiln_control_lease_epoch ${epoch}`));
      // Crashes (stops renewing): lost at its deadline, controllers stopped, fenced from then on.
      const current = leader;
      await current.lease.close({ release: false });
      await current.leadership.lost;
      assert.deepEqual(current.events, [`lead ${epoch}`, 'stop']);
      assert.equal(current.running, false);
      assert.equal(await writeAs(current), 'fenced');
      assert.match(
        await current.metrics.metrics(),
        new RegExp(`kiln_control_leader\\{holder="${current.name}"\\} 0`),
      );
    }
    check();
    const rows = await planes[0]!.store.db.read((c) =>
      c.query<{ who: string; epoch: number | null }>(
        'SELECT who, epoch FROM probe ORDER BY epoch NULLS LAST',
      ),
    );
    assert.deepEqual(
      rows.rows.filter((r) => r.epoch !== null).map((r) => r.who),
      seen,
    );
  },
);
