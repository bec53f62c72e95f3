// SQLite tables for serving: endpoints (the reconciler's desired state) and API keys.
// Kept apart from the registry tables' code; SqliteStore delegates here.

import type Database from 'better-sqlite3';
import { kilnError } from '../../core/errors.ts';
import { isoAt, type Clock } from '../../core/clock.ts';
import type {
  ApiKeyRecord,
  EndpointConfig,
  EndpointRecord,
  NewEndpoint,
} from '../serving-records.ts';
import type { EndpointWriteOptions } from '../store.ts';

export interface EndpointRow {
  name: string;
  team: string;
  model: string;
  version: number;
  ref: string;
  replicas: number;
  config_json: string;
  created_at: string;
  updated_at: string;
}

export interface ApiKeyRow {
  id: string;
  name: string;
  sha256: string;
  prefix: string;
  team: string | null;
  endpoint: string | null;
  created_at: string;
}

export const endpointSelect = `SELECT e.name, e.team, m.name AS model, v.version, e.ref, e.replicas,
  e.config_json, e.created_at, e.updated_at
  FROM endpoints e JOIN models m ON m.id = e.model_id JOIN model_versions v ON v.id = e.version_id`;

export function toEndpoint(row: EndpointRow): EndpointRecord {
  return {
    name: row.name,
    team: row.team,
    model: row.model,
    version: row.version,
    ref: row.ref,
    replicas: row.replicas,
    config: JSON.parse(row.config_json) as EndpointConfig,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toApiKey(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: row.id,
    name: row.name,
    sha256: row.sha256,
    prefix: row.prefix,
    team: row.team,
    endpoint: row.endpoint,
    createdAt: row.created_at,
  };
}

/** Names of endpoints serving a version (by row id): such a version cannot be deleted. */
export function endpointsServing(db: Database.Database, versionId: number): string[] {
  return (
    db.prepare('SELECT name FROM endpoints WHERE version_id = ? ORDER BY name').all(versionId) as {
      name: string;
    }[]
  ).map((r) => r.name);
}

/**
 * Refuses an endpoint move while its active rollout or running experiment (as read inside the
 * write's transaction) owns its versions.
 */
export function refuseTrafficOwned(
  name: string,
  rollout: { readonly id: string; readonly state: string } | undefined,
  experiment: { readonly id: string } | undefined,
): void {
  if (rollout !== undefined) {
    throw kilnError('KILN_ROLLOUT_IN_PROGRESS', {
      endpoint: name,
      rollout: rollout.id,
      state: rollout.state,
    });
  }
  if (experiment !== undefined) {
    throw kilnError('KILN_EXPERIMENT_IN_PROGRESS', {
      endpoint: name,
      experiment: experiment.id,
      reason: 'a deploy of another version must wait until it is stopped',
    });
  }
}

/** The endpoint upsert, with the dialect's placeholders (`?` or `$n`) for `endpointValues`. */
export function endpointUpsert(placeholder: (index: number) => string): string {
  const values = Array.from({ length: 9 }, (_, i) => placeholder(i + 1)).join(', ');
  return `INSERT INTO endpoints (name, team, model_id, version_id, ref, replicas, config_json,
      created_at, updated_at) VALUES (${values})
    ON CONFLICT (name) DO UPDATE SET team = excluded.team, model_id = excluded.model_id,
      version_id = excluded.version_id, ref = excluded.ref, replicas = excluded.replicas,
      config_json = excluded.config_json, updated_at = excluded.updated_at`;
}

export function endpointValues(
  endpoint: NewEndpoint,
  target: { readonly model_id: number; readonly version_id: number },
  now: string,
): unknown[] {
  return [
    endpoint.name,
    endpoint.team,
    target.model_id,
    target.version_id,
    endpoint.ref,
    endpoint.replicas,
    JSON.stringify(endpoint.config),
    now,
    now,
  ];
}

export class SqliteServingTables {
  constructor(
    private readonly db: Database.Database,
    private readonly clock: Clock,
  ) {}

  /**
   * A rollout or an experiment owns the endpoint's versions until it ends: moving its stable
   * version meanwhile (a deploy of another version) is refused here, inside the write's
   * transaction, so a rollout started between a deploy's own check and its write cannot lose
   * its baseline. Table names are migration 5's (sqlite-traffic.ts).
   */
  private refuseWhileTrafficOwned(name: string): void {
    const rollout = this.db
      .prepare(
        `SELECT id, state FROM rollouts WHERE endpoint = ?
           AND state IN ('starting', 'running', 'paused')`,
      )
      .get(name) as { id: string; state: string } | undefined;
    const experiment = this.db
      .prepare(`SELECT id FROM experiments WHERE endpoint = ? AND state = 'running'`)
      .get(name) as { id: string } | undefined;
    refuseTrafficOwned(name, rollout, experiment);
  }

  putEndpoint(
    endpoint: NewEndpoint,
    options: EndpointWriteOptions = {},
  ): { endpoint: EndpointRecord; created: boolean } {
    const put = this.db.transaction(() => {
      const before = this.getEndpoint(endpoint.name);
      options.check?.(before);
      if (
        before !== null &&
        (before.model !== endpoint.model || before.version !== endpoint.version)
      ) {
        this.refuseWhileTrafficOwned(endpoint.name);
      }
      const target = this.db
        .prepare(
          `SELECT m.id AS model_id, v.id AS version_id, v.deleted_at FROM models m
           JOIN model_versions v ON v.model_id = m.id WHERE m.name = ? AND v.version = ?`,
        )
        .get(endpoint.model, endpoint.version) as
        { model_id: number; version_id: number; deleted_at: string | null } | undefined;
      if (target === undefined || target.deleted_at !== null) {
        throw kilnError('KILN_VERSION_NOT_FOUND', {
          model: endpoint.model,
          version: endpoint.version,
        });
      }
      const existing = this.db.prepare('SELECT 1 FROM endpoints WHERE name = ?').get(endpoint.name);
      this.db
        .prepare(endpointUpsert(() => '?'))
        .run(...endpointValues(endpoint, target, isoAt(this.clock)));
      const record = this.getEndpoint(endpoint.name);
      if (record === null) throw kilnError('KILN_INTERNAL', { reason: 'endpoint vanished' });
      return { endpoint: record, created: existing === undefined };
    });
    return put.immediate();
  }

  getEndpoint(name: string): EndpointRecord | null {
    const row = this.db.prepare(`${endpointSelect} WHERE e.name = ?`).get(name) as
      EndpointRow | undefined;
    return row === undefined ? null : toEndpoint(row);
  }

  listEndpoints(): EndpointRecord[] {
    return (this.db.prepare(`${endpointSelect} ORDER BY e.name`).all() as EndpointRow[]).map(
      toEndpoint,
    );
  }

  deleteEndpoint(name: string, options: EndpointWriteOptions = {}): EndpointRecord | null {
    const remove = this.db.transaction(() => {
      const record = this.getEndpoint(name);
      options.check?.(record);
      if (record !== null) this.db.prepare('DELETE FROM endpoints WHERE name = ?').run(name);
      return record;
    });
    return remove.immediate();
  }

  addApiKey(key: Omit<ApiKeyRecord, 'createdAt'>): ApiKeyRecord {
    this.db
      .prepare(
        `INSERT INTO api_keys (id, name, sha256, prefix, team, endpoint, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(key.id, key.name, key.sha256, key.prefix, key.team, key.endpoint, isoAt(this.clock));
    const row = this.db.prepare('SELECT * FROM api_keys WHERE id = ?').get(key.id) as ApiKeyRow;
    return toApiKey(row);
  }

  listApiKeys(): ApiKeyRecord[] {
    return (
      this.db
        .prepare('SELECT * FROM api_keys WHERE revoked_at IS NULL ORDER BY name, id')
        .all() as ApiKeyRow[]
    ).map(toApiKey);
  }

  revokeApiKey(id: string): ApiKeyRecord | null {
    const row = this.db
      .prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING *')
      .get(isoAt(this.clock), id) as ApiKeyRow | undefined;
    return row === undefined ? null : toApiKey(row);
  }
}
