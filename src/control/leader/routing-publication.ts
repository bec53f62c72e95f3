// The routing snapshot through the store (issue 17), so gateways may follow any control plane:
//
//   leader:   Reconciler.routing ──publish──▶ RoutingPublisher ──fenced write──▶ routing_snapshots
//   follower: routing_snapshots ──poll──▶ RoutingFollower ──mirror──▶ its own RoutingTable ──▶ gateways
//
// The leader writes through its fenced database handle, so a deposed leader cannot overwrite
// its successor's snapshot. Writes are coalesced: only the newest snapshot waiting is written.
// A follower serves exactly what was published (version included), and while no leader
// publishes it keeps serving the last one — as the gateways keep theirs.

import { routingPublishedChannel } from '../../store/postgres/pg-listener.ts';
import type { RoutingSnapshot } from '../../gateway/routing-snapshot.ts';
import { isoAt, type Clock } from '../../core/clock.ts';
import type { PgDatabase, PgQueryable } from '../../store/postgres/pg-database.ts';
import { RoutingTable } from '../routing-table.ts';

/** The one row gateways' routing lives in. */
const snapshotName = 'gateways';

export interface PublishedRouting {
  readonly version: number;
  readonly holder: string;
  readonly epoch: number;
  readonly snapshot: RoutingSnapshot;
}

export async function readPublishedRouting(db: PgDatabase): Promise<PublishedRouting | null> {
  return db.read(async (c) => readRow(c));
}

async function readRow(c: PgQueryable): Promise<PublishedRouting | null> {
  const result = await c.query<{
    version: number;
    holder: string;
    epoch: number;
    snapshot_json: string;
  }>('SELECT version, holder, epoch, snapshot_json FROM routing_snapshots WHERE name = $1', [
    snapshotName,
  ]);
  const row = result.rows[0];
  if (row === undefined) return null;
  return {
    version: row.version,
    holder: row.holder,
    epoch: row.epoch,
    snapshot: JSON.parse(row.snapshot_json) as RoutingSnapshot,
  };
}

export class RoutingPublisher {
  #pending: RoutingSnapshot | null = null;
  #writing: Promise<void> | null = null;

  constructor(
    /** The leader's fenced handle: a write after the term ended is refused. */
    private readonly db: PgDatabase,
    private readonly term: { readonly holder: string; readonly epoch: number },
    private readonly clock: Clock,
    private readonly log: (message: string) => void = () => undefined,
  ) {}

  /** Queues `snapshot` for the store (replacing one still waiting). */
  publish(snapshot: RoutingSnapshot): void {
    this.#pending = snapshot;
    this.#writing ??= this.drain().finally(() => (this.#writing = null));
  }

  /** Resolves once everything queued so far is written (or refused). */
  async flushed(): Promise<void> {
    while (this.#writing !== null) await this.#writing;
  }

  private async drain(): Promise<void> {
    for (let next = this.#pending; next !== null; next = this.#pending) {
      this.#pending = null;
      try {
        await this.write(next);
      } catch (error) {
        this.log(`routing snapshot ${next.version} not published: ${(error as Error).message}`);
      }
    }
  }

  private async write(snapshot: RoutingSnapshot): Promise<void> {
    await this.db.write(async (c) => {
      await c.query(
        `INSERT INTO routing_snapshots (name, version, holder, epoch, snapshot_json, published_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (name) DO UPDATE SET version = EXCLUDED.version, holder = EXCLUDED.holder,
           epoch = EXCLUDED.epoch, snapshot_json = EXCLUDED.snapshot_json,
           published_at = EXCLUDED.published_at`,
        [
          snapshotName,
          snapshot.version,
          this.term.holder,
          this.term.epoch,
          JSON.stringify(snapshot),
          isoAt(this.clock),
        ],
      );
      // Followers read it now, not at their next poll (pg-listener.ts).
      await c.query('SELECT pg_notify($1, $2)', [
        routingPublishedChannel,
        String(snapshot.version),
      ]);
    });
  }
}

/** A follower's copy of the leader's routing, read from the store every pollMs. */
export class RoutingFollower {
  readonly routing: RoutingTable;
  #timer: NodeJS.Timeout | null = null;
  #reading: Promise<void> | null = null;
  #firstRead!: () => void;
  #lastProblem = '';

  constructor(
    private readonly db: PgDatabase,
    clock: Clock,
    private readonly pollMs = 250,
    private readonly log: (message: string) => void = () => undefined,
  ) {
    this.routing = new RoutingTable(
      { auth: 'dev', endpoints: [], apiKeys: [], teamLimits: [] },
      clock,
    );
    // No gateway gets the empty placeholder: polls wait for the first published snapshot.
    this.routing.holdUntil(new Promise<void>((resolve) => (this.#firstRead = resolve)));
  }

  start(): void {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => void this.poll(), this.pollMs);
    this.#timer.unref();
    void this.poll();
  }

  /** One read of the store (a read in progress is joined). */
  poll(): Promise<void> {
    this.#reading ??= this.readOnce().finally(() => (this.#reading = null));
    return this.#reading;
  }

  async close(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#reading;
    this.routing.close();
  }

  private async readOnce(): Promise<void> {
    try {
      const published = await readPublishedRouting(this.db);
      this.#lastProblem = '';
      if (published === null) return;
      this.routing.mirror(published.snapshot);
      this.#firstRead();
    } catch (error) {
      // The database away: keep serving the last snapshot; say so once per problem.
      const problem = (error as Error).message;
      if (problem !== this.#lastProblem) this.log(`routing snapshot not read: ${problem}`);
      this.#lastProblem = problem;
    }
  }
}
