// The controllers' lease on PostgreSQL: of all the control planes on one database, the one
// holding the `controllers` row of `leases` runs the reconciler and the other controllers.
//
//   follower ──attempt (row free or expired)──▶ leader ──renew every renewMs──▶ leader
//      ▲                                          │
//      └── renewal refused (another holder) ──────┤  or no renewal succeeded before the
//          or the local deadline passed ──────────┘  local deadline: lost at once
//
// Expiry is judged by the DATABASE's clock (`clock_timestamp()`): the row stores when it
// expires in the database's epoch ms, and only the database compares it, so control planes
// with skewed clocks agree on who holds it. A holder judges its own lease only by elapsed
// time on its monotonic clock: a renewal sent at local time t extends the row to (database
// time when it ran) + leaseMs, which is never earlier than t + leaseMs in real time, so the
// holder stops believing it leads (t + leaseMs) before any other can take over (the row's
// expiry). `term()` checks that deadline on every call, so a late timer never stretches it.
//
// Every change of holder, and a holder taking its own expired lease back, raises the epoch: a
// term is (holder, epoch), and the leader's controllers write through a store fenced with it
// (PgDatabase.setFence), so a write from an earlier term is refused (KILN_LEADER_FENCED) even
// if its process has not noticed yet (paused, partitioned).
//
// Lease statements are single statements outside the store's write lock, so a long write
// (a gc, a large registration) never delays a renewal. What keeps fencing exact is the row
// lock instead: a fenced write reads the lease row FOR SHARE (PgDatabase.checkFence), so a
// takeover's UPDATE of that row waits for the fenced transaction in progress to commit, and
// no write checked under one term commits after the next term began.

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { PgDatabase } from '../../store/postgres/pg-database.ts';

/** The lease the controllers run under (the shared contract's name). */
export const controllersLease = 'controllers';

/** A leader's term: fences every write its controllers make. */
export interface LeaseTerm {
  readonly holder: string;
  readonly epoch: number;
}

/** What the row said at the last attempt (metrics, status): null before any row exists. */
export interface LeaseHolder {
  readonly holder: string;
  readonly epoch: number;
}

export interface LeaderLeaseOptions {
  /** An unfenced database handle (its own small pool, so API load never delays a renewal). */
  readonly db: PgDatabase;
  readonly name?: string;
  /** This control plane's id: unique per process (default host/pid/random). */
  readonly holder?: string;
  /** How long a renewal holds the lease, ms (default 10 000). */
  readonly leaseMs?: number;
  /** How often the holder renews and a follower tries, ms (default 2 500; < leaseMs / 2). */
  readonly renewMs?: number;
  readonly log?: (message: string) => void;
}

/** Told of every change: a new term when this process gains the lease, null when it loses it. */
export type LeaseListener = (term: LeaseTerm | null) => void;

const acquireSql = `
  INSERT INTO leases (name, holder, epoch, expires_at_ms, renewed_at)
  SELECT $1, $2, 1, now.ms + $3,
         to_char(now.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    FROM (SELECT clock_timestamp() AS at,
                 (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms) AS now
  ON CONFLICT (name) DO UPDATE SET
    holder = EXCLUDED.holder,
    -- the database's now is EXCLUDED.expires_at_ms - $3
    epoch = CASE WHEN leases.holder = EXCLUDED.holder
                  AND leases.expires_at_ms > EXCLUDED.expires_at_ms - $3
                 THEN leases.epoch ELSE leases.epoch + 1 END,
    expires_at_ms = EXCLUDED.expires_at_ms,
    renewed_at = EXCLUDED.renewed_at
  WHERE leases.holder = EXCLUDED.holder OR leases.expires_at_ms <= EXCLUDED.expires_at_ms - $3
  RETURNING holder, epoch`;

const currentSql = `
  SELECT holder, epoch,
         expires_at_ms - (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS left_ms
    FROM leases WHERE name = $1`;

export class LeaderLease {
  readonly name: string;
  readonly holder: string;
  readonly leaseMs: number;
  readonly renewMs: number;
  #term: LeaseTerm | null = null;
  /** performance.now() past which this process no longer believes it holds the lease. */
  #deadline = 0;
  #lastSeen: LeaseHolder | null = null;
  /** As a follower: how long the holder's lease had left at the last attempt, ms. */
  #holderLeftMs: number | null = null;
  #timer: NodeJS.Timeout | null = null;
  #deadlineTimer: NodeJS.Timeout | null = null;
  #attempt: Promise<LeaseTerm | null> | null = null;
  #running = false;
  readonly #listeners: LeaseListener[] = [];

  constructor(private readonly options: LeaderLeaseOptions) {
    this.name = options.name ?? controllersLease;
    this.holder =
      options.holder ?? `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
    this.leaseMs = options.leaseMs ?? 10_000;
    this.renewMs = options.renewMs ?? 2_500;
    if (!(this.renewMs > 0 && this.renewMs * 2 <= this.leaseMs))
      throw new Error(`invalid lease: renewMs ${this.renewMs} must be > 0 and <= leaseMs / 2`);
  }

  /** The term this process holds now, or null (checked against the deadline on every call). */
  term(): LeaseTerm | null {
    if (this.#term !== null && performance.now() >= this.#deadline) this.lose('lease expired');
    return this.#term;
  }

  /** Who held the lease at the last attempt (this process or another). */
  lastSeen(): LeaseHolder | null {
    return this.#lastSeen;
  }

  onChange(listener: LeaseListener): void {
    this.#listeners.push(listener);
  }

  /** Tries now and then every renewMs (sooner when the holder's lease runs out first). */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.schedule(0);
  }

  /**
   * One round: acquires the lease if it is free or expired, renews it if held. Resolves to
   * the term held afterwards (null: another holds it). A round in progress is joined.
   */
  attempt(): Promise<LeaseTerm | null> {
    this.#attempt ??= this.attemptNow().finally(() => (this.#attempt = null));
    return this.#attempt;
  }

  /**
   * Stops trying. With `release` (a clean shutdown) a held lease expires now, so another
   * control plane takes over at its next attempt rather than after the lease time; without
   * (a crash, as tests simulate) it runs out on its own.
   */
  async close(options: { readonly release?: boolean } = {}): Promise<void> {
    this.#running = false;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#attempt?.catch(() => undefined);
    const held = this.#term;
    if (held === null) return;
    this.lose('closed');
    if (options.release === false) return;
    await this.options.db
      .read((c) =>
        c.query(
          'UPDATE leases SET expires_at_ms = 0 WHERE name = $1 AND holder = $2 AND epoch = $3',
          [this.name, held.holder, held.epoch],
        ),
      )
      .catch(() => undefined);
  }

  private async attemptNow(): Promise<LeaseTerm | null> {
    const sentAt = performance.now();
    let row: LeaseHolder | undefined;
    try {
      // One statement, autocommitted: not under the write lock (see the top of this file).
      const result = await this.options.db.read((c) =>
        c.query<{ holder: string; epoch: number }>(acquireSql, [
          this.name,
          this.holder,
          this.leaseMs,
        ]),
      );
      row = result.rows[0];
    } catch (error) {
      // Unreachable database: keep the term until its deadline (term() drops it then).
      this.options.log?.(`lease ${this.name}: ${(error as Error).message}`);
      return this.term();
    }
    if (row === undefined) {
      const seen = await this.current();
      this.#lastSeen = seen === null ? null : { holder: seen.holder, epoch: seen.epoch };
      this.#holderLeftMs = seen?.leftMs ?? null;
      if (this.#term !== null) this.lose(`taken by ${this.#lastSeen?.holder ?? 'another'}`);
      return null;
    }
    this.#lastSeen = { holder: row.holder, epoch: row.epoch };
    this.#holderLeftMs = null;
    this.hold({ holder: row.holder, epoch: row.epoch }, sentAt + this.leaseMs);
    return this.term();
  }

  /** The row as it is now, and how long it has left (for a follower's next try). */
  private async current(): Promise<(LeaseHolder & { readonly leftMs: number }) | null> {
    try {
      const result = await this.options.db.read((c) =>
        c.query<{ holder: string; epoch: number; left_ms: number }>(currentSql, [this.name]),
      );
      const row = result.rows[0];
      return row === undefined
        ? null
        : { holder: row.holder, epoch: row.epoch, leftMs: row.left_ms };
    } catch {
      return null;
    }
  }

  private hold(term: LeaseTerm, deadline: number): void {
    if (performance.now() >= deadline) {
      // Renewed too late to count: the lease may have run out in between.
      if (this.#term !== null) this.lose('renewal arrived after the deadline');
      return;
    }
    this.#deadline = deadline;
    if (this.#deadlineTimer !== null) clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = setTimeout(() => this.term(), deadline - performance.now() + 1);
    this.#deadlineTimer.unref();
    const before = this.#term;
    if (before !== null && before.epoch === term.epoch) return;
    if (before !== null) this.lose(`epoch moved to ${term.epoch}`);
    this.#term = term;
    this.options.log?.(`lease ${this.name}: leading (epoch ${term.epoch})`);
    this.tell(term);
  }

  private lose(reason: string): void {
    if (this.#term === null) return;
    const epoch = this.#term.epoch;
    this.#term = null;
    if (this.#deadlineTimer !== null) clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = null;
    this.options.log?.(`lease ${this.name}: lost (epoch ${epoch}: ${reason})`);
    this.tell(null);
  }

  private tell(term: LeaseTerm | null): void {
    for (const listener of this.#listeners) {
      try {
        listener(term);
      } catch (error) {
        this.options.log?.(`lease ${this.name}: listener failed: ${(error as Error).message}`);
      }
    }
  }

  private schedule(waitMs: number): void {
    if (!this.#running) return;
    this.#timer = setTimeout(() => {
      void this.attempt().then((term) => {
        // A holder renews every renewMs; a follower tries again when the holder's lease runs
        // out (as the database counts it), but at least every renewMs.
        const leftMs = this.#holderLeftMs;
        const next =
          term !== null || leftMs === null
            ? this.renewMs
            : Math.max(5, Math.min(this.renewMs, leftMs + 5));
        this.schedule(next);
      });
    }, waitMs);
    this.#timer.unref();
  }
}
