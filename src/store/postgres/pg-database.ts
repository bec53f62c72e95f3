// The PostgreSQL store's connection pool and its two ways in: `read` (one statement or a few,
// no transaction) and `write` (one transaction that holds the store's write lock).
//
// The write lock is a transaction-scoped advisory lock: every write transaction of every
// control plane on this database takes it first, so writes are serialised exactly as SQLite's
// BEGIN IMMEDIATE serialises them, and the invariants the SQLite store keeps by being the one
// writer (gapless version numbers, alias moves checked against the version's state, gc never
// racing a registration) hold across processes by the same reasoning. Constraints (UNIQUE,
// CHECK, foreign keys) stay as the second line: a write that slips past a check still fails.
//
// Fencing: a store opened for a leader carries its lease (name, holder, epoch). Every write
// transaction then checks, under the write lock, that the lease row still names that holder
// and epoch; a leader that lost its lease (paused, partitioned, slow) has its write refused
// with KILN_LEADER_FENCED and nothing is written.

import pg from 'pg';
import { kilnError, KilnError } from '../../core/errors.ts';

/** One client inside a transaction or a pooled query: what area modules run SQL on. */
export interface PgQueryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: readonly unknown[],
  ): Promise<pg.QueryResult<R>>;
}

export interface PgFence {
  readonly lease: string;
  readonly holder: string;
  readonly epoch: number;
}

/** The advisory lock key every write transaction takes ('kiln' as a 32-bit number). */
export const writeLockKey = 0x6b696c6e;

/** How long opening a connection may take before the store is reported unavailable. */
export const defaultConnectionTimeoutMs = 10_000;

/** SQLSTATEs a write retries: serialization failure, deadlock. */
const retryable = new Set(['40001', '40P01']);

export class PgDatabase {
  readonly pool: pg.Pool;
  private fence: PgFence | null = null;
  /** Notified (pg_notify) by every write transaction as it commits; null: none. */
  private readonly notifyChannel: string | null;

  constructor(
    url: string,
    options: {
      readonly max?: number;
      readonly connectionTimeoutMillis?: number;
      /**
       * A channel every committed write notifies (PostgreSQL NOTIFY, delivered at commit):
       * the API's store notifies the leader's reconciler of a change made on any control
       * plane (pg-listener.ts), instead of it finding the change at its next periodic pass.
       */
      readonly notifyChannel?: string;
    } = {},
  ) {
    this.notifyChannel = options.notifyChannel ?? null;
    this.pool = new pg.Pool({
      connectionString: url,
      max: options.max ?? 8,
      // A server that accepts the connection and never answers (a black-holed address, a
      // proxy in front of a dead server) is KILN_STORE_UNAVAILABLE after this, not a hang.
      connectionTimeoutMillis: options.connectionTimeoutMillis ?? defaultConnectionTimeoutMs,
      // BIGINT (int8) and NUMERIC come back as strings by default; the store's numbers fit
      // in a double (counts, epoch milliseconds), so parse them here once.
      types: {
        getTypeParser: ((oid: number, format?: string) => {
          if (oid === 20 || oid === 1700) return (value: string) => Number(value);
          return pg.types.getTypeParser(oid, format as 'text') as (value: string) => unknown;
        }) as typeof pg.types.getTypeParser,
      },
    });
    // An idle client's connection dropping (server restart) must not crash the process: the
    // next query gets a fresh connection or a clear error.
    this.pool.on('error', () => undefined);
  }

  /** From now on every write checks this lease (null: no fencing). */
  setFence(fence: PgFence | null): void {
    this.fence = fence;
  }

  async read<T>(work: (db: PgQueryable) => Promise<T>): Promise<T> {
    try {
      return await work(this.pool);
    } catch (error) {
      throw mapPgError(error);
    }
  }

  /**
   * Runs `work` in one transaction holding the write lock (and the fence check, when set).
   * What it throws rolls everything back. Serialization failures and deadlocks are retried.
   */
  async write<T>(work: (db: PgQueryable) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      const client = await this.connect();
      try {
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock($1)', [writeLockKey]);
        await this.checkFence(client);
        const result = await work(client);
        if (this.notifyChannel !== null)
          await client.query("SELECT pg_notify($1, '')", [this.notifyChannel]);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        const code = (error as { code?: unknown }).code;
        if (typeof code === 'string' && retryable.has(code) && attempt < 5) continue;
        throw mapPgError(error);
      } finally {
        client.release();
      }
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private async connect(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (error) {
      throw mapPgError(error);
    }
  }

  private async checkFence(client: PgQueryable): Promise<void> {
    const fence = this.fence;
    if (fence === null) return;
    // FOR SHARE: the lease row cannot change hands until this transaction ends, so no write
    // checked under one term commits after the next term began (a takeover waits for it).
    const row = await client.query<{ holder: string; epoch: number }>(
      'SELECT holder, epoch FROM leases WHERE name = $1 FOR SHARE',
      [fence.lease],
    );
    const current = row.rows[0];
    if (current === undefined || current.holder !== fence.holder || current.epoch !== fence.epoch) {
      throw kilnError('KILN_LEADER_FENCED', {
        epoch: fence.epoch,
        current: current === undefined ? 'none' : `${current.holder} at epoch ${current.epoch}`,
      });
    }
  }
}

/**
 * Connection and permission failures become KILN_STORE_UNAVAILABLE naming the cause; other
 * errors pass through (KilnErrors unchanged, constraint violations for the caller to map).
 */
export function mapPgError(error: unknown): unknown {
  if (error instanceof KilnError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const message = errorText(error);
  // pg-pool's wording when no pooled connection came free in time: the store is busy, not gone.
  if (message === 'timeout exceeded when trying to connect') {
    return kilnError('KILN_STORE_BUSY', {
      reason: 'every PostgreSQL connection of this control plane stayed in use',
    });
  }
  if (
    connectionLost.test(message) ||
    code === 'ECONNREFUSED' ||
    code === 'EHOSTUNREACH' ||
    code === 'ENETUNREACH' ||
    code === 'ENOTFOUND' ||
    code === 'ECONNRESET' ||
    code === 'ETIMEDOUT' ||
    code === '28P01' || // invalid password
    code === '28000' || // invalid authorization
    code === '3D000' || // database does not exist
    code === '42501' || // insufficient privilege
    code === '57P01' || // admin shutdown
    code === '57P03' // cannot connect now (starting up)
  ) {
    return kilnError('KILN_STORE_UNAVAILABLE', { reason: `PostgreSQL: ${message}` });
  }
  return error;
}

/** What pg says (without a code) when opening a connection times out or one drops in use. */
const connectionLost =
  /Connection terminated due to connection timeout|Connection terminated unexpectedly|timeout expired/;

/** An error's message; a connection refused on every address (AggregateError) has none. */
function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.message !== '') return error.message;
  const inner = error instanceof AggregateError ? (error.errors as unknown[]) : [];
  const code = (error as { code?: unknown }).code;
  return inner.length > 0
    ? inner.map(errorText).join('; ')
    : typeof code === 'string'
      ? code
      : error.name;
}

/** SQLSTATE 23505: a UNIQUE or PRIMARY KEY constraint refused the row. */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '23505';
}
