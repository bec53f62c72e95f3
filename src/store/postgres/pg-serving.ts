// PostgreSQL store, serving tables: endpoints (the reconciler's desired state), API keys and
// per-team rate limits — the PostgreSQL counterpart of the SQLite store's methods named
// below (same semantics, same errors; the contract suite runs on both). Rows map to records
// with the SQLite modules' mappers: the columns are the same.
//
// An endpoint write is one transaction under the store's write lock: the caller's `check`
// sees the endpoint as it is then, a rollout or experiment owning the endpoint refuses a move
// to another version, and a delete takes the endpoint's traffic state with it (its traffic
// record, its active rollout aborted, its running experiment stopped; its scale count goes by
// the foreign key's cascade), exactly as SqliteStore.deleteEndpoint does.

import { isoAt, type Clock } from '../../core/clock.ts';
import { kilnError } from '../../core/errors.ts';
import type {
  ApiKeyRecord,
  EndpointRecord,
  NewEndpoint,
  NewTeamLimit,
  TeamLimitRecord,
} from '../serving-records.ts';
import type { EndpointWriteOptions, Store } from '../store.ts';
import { activeRolloutStates } from '../traffic-records.ts';
import {
  endpointSelect,
  endpointUpsert,
  endpointValues,
  refuseTrafficOwned,
  toApiKey,
  toEndpoint,
  type ApiKeyRow,
  type EndpointRow,
} from '../sqlite/sqlite-serving.ts';
import { toTeamLimit, type TeamLimitRow } from '../sqlite/sqlite-team-limits.ts';
import type { PgDatabase, PgQueryable } from './pg-database.ts';

export type ServingTablesMethods = Pick<
  Store,
  | 'putEndpoint'
  | 'getEndpoint'
  | 'listEndpoints'
  | 'deleteEndpoint'
  | 'addApiKey'
  | 'listApiKeys'
  | 'revokeApiKey'
  | 'setTeamLimit'
  | 'deleteTeamLimit'
  | 'listTeamLimits'
>;

async function readEndpoint(db: PgQueryable, name: string): Promise<EndpointRecord | null> {
  const row = (await db.query<EndpointRow>(`${endpointSelect} WHERE e.name = $1`, [name])).rows[0];
  return row === undefined ? null : toEndpoint(row);
}

/**
 * A rollout or an experiment owns the endpoint's versions until it ends: moving its stable
 * version meanwhile (a deploy of another version) is refused inside the write's transaction.
 */
async function refuseWhileTrafficOwned(db: PgQueryable, name: string): Promise<void> {
  const rollout = await db.query<{ id: string; state: string }>(
    'SELECT id, state FROM rollouts WHERE endpoint = $1 AND state = ANY($2)',
    [name, activeRolloutStates],
  );
  const experiment = await db.query<{ id: string }>(
    `SELECT id FROM experiments WHERE endpoint = $1 AND state = 'running'`,
    [name],
  );
  refuseTrafficOwned(name, rollout.rows[0], experiment.rows[0]);
}

/**
 * An endpoint is deleted (inside its delete's transaction): its traffic record goes, its
 * active rollout is aborted and its running experiment stopped, so a new endpoint of the same
 * name starts clean; history (events, finished rollouts and experiments) stays.
 */
async function endpointDeleted(c: PgQueryable, clock: Clock, endpoint: string): Promise<void> {
  const now = isoAt(clock);
  await c.query('DELETE FROM endpoint_traffic WHERE endpoint = $1', [endpoint]);
  await c.query(
    `UPDATE rollouts SET state = 'aborted', reason = 'the endpoint was deleted',
       finished_at = $1, updated_at = $1 WHERE endpoint = $2 AND state = ANY($3)`,
    [now, endpoint, activeRolloutStates],
  );
  await c.query(
    `UPDATE experiments SET state = 'stopped', stopped_at = $1
     WHERE endpoint = $2 AND state = 'running'`,
    [now, endpoint],
  );
}

export class PgServingTables implements ServingTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  // ---------------------------------------------------------------- endpoints

  putEndpoint(
    endpoint: NewEndpoint,
    options: EndpointWriteOptions = {},
  ): Promise<{ endpoint: EndpointRecord; created: boolean }> {
    return this.db.write(async (c) => {
      const before = await readEndpoint(c, endpoint.name);
      await Promise.resolve(options.check?.(before));
      if (
        before !== null &&
        (before.model !== endpoint.model || before.version !== endpoint.version)
      ) {
        await refuseWhileTrafficOwned(c, endpoint.name);
      }
      const target = (
        await c.query<{ model_id: number; version_id: number; deleted_at: string | null }>(
          `SELECT m.id AS model_id, v.id AS version_id, v.deleted_at FROM models m
           JOIN model_versions v ON v.model_id = m.id WHERE m.name = $1 AND v.version = $2`,
          [endpoint.model, endpoint.version],
        )
      ).rows[0];
      if (target === undefined || target.deleted_at !== null) {
        throw kilnError('KILN_VERSION_NOT_FOUND', {
          model: endpoint.model,
          version: endpoint.version,
        });
      }
      await c.query(
        endpointUpsert((i) => `$${i}`),
        endpointValues(endpoint, target, isoAt(this.clock)),
      );
      const record = await readEndpoint(c, endpoint.name);
      if (record === null) throw kilnError('KILN_INTERNAL', { reason: 'endpoint vanished' });
      return { endpoint: record, created: before === null };
    });
  }

  getEndpoint(name: string): Promise<EndpointRecord | null> {
    return this.db.read((c) => readEndpoint(c, name));
  }

  async listEndpoints(): Promise<readonly EndpointRecord[]> {
    const rows = await this.db.read((c) =>
      c.query<EndpointRow>(`${endpointSelect} ORDER BY e.name COLLATE "C"`),
    );
    return rows.rows.map(toEndpoint);
  }

  deleteEndpoint(name: string, options: EndpointWriteOptions = {}): Promise<EndpointRecord | null> {
    return this.db.write(async (c) => {
      const record = await readEndpoint(c, name);
      await Promise.resolve(options.check?.(record));
      if (record === null) return null;
      await endpointDeleted(c, this.clock, name);
      await c.query('DELETE FROM endpoints WHERE name = $1', [name]);
      return record;
    });
  }

  // ---------------------------------------------------------------- API keys

  async addApiKey(key: Omit<ApiKeyRecord, 'createdAt'>): Promise<ApiKeyRecord> {
    const result = await this.db.write((c) =>
      c.query<ApiKeyRow>(
        `INSERT INTO api_keys (id, name, sha256, prefix, team, endpoint, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
        [key.id, key.name, key.sha256, key.prefix, key.team, key.endpoint, isoAt(this.clock)],
      ),
    );
    return toApiKey(result.rows[0] as ApiKeyRow);
  }

  async listApiKeys(): Promise<readonly ApiKeyRecord[]> {
    const rows = await this.db.read((c) =>
      c.query<ApiKeyRow>(
        `SELECT * FROM api_keys WHERE revoked_at IS NULL
         ORDER BY name COLLATE "C", id COLLATE "C"`,
      ),
    );
    return rows.rows.map(toApiKey);
  }

  async revokeApiKey(id: string): Promise<ApiKeyRecord | null> {
    const result = await this.db.write((c) =>
      c.query<ApiKeyRow>(
        `UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL RETURNING *`,
        [isoAt(this.clock), id],
      ),
    );
    const row = result.rows[0];
    return row === undefined ? null : toApiKey(row);
  }

  // ---------------------------------------------------------------- team limits

  async setTeamLimit(limit: NewTeamLimit): Promise<TeamLimitRecord> {
    const result = await this.db.write((c) =>
      c.query<TeamLimitRow>(
        `INSERT INTO team_limits (team, requests_per_second, burst, updated_at)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (team) DO UPDATE SET requests_per_second = excluded.requests_per_second,
           burst = excluded.burst, updated_at = excluded.updated_at
         RETURNING *`,
        [limit.team, limit.requestsPerSecond, limit.burst, isoAt(this.clock)],
      ),
    );
    return toTeamLimit(result.rows[0] as TeamLimitRow);
  }

  async deleteTeamLimit(team: string): Promise<TeamLimitRecord | null> {
    const result = await this.db.write((c) =>
      c.query<TeamLimitRow>('DELETE FROM team_limits WHERE team = $1 RETURNING *', [team]),
    );
    const row = result.rows[0];
    return row === undefined ? null : toTeamLimit(row);
  }

  async listTeamLimits(): Promise<readonly TeamLimitRecord[]> {
    const rows = await this.db.read((c) =>
      c.query<TeamLimitRow>('SELECT * FROM team_limits ORDER BY team COLLATE "C"'),
    );
    return rows.rows.map(toTeamLimit);
  }
}
