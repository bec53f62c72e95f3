// PostgreSQL store, registry tables: models, versions, aliases, lineage and the live blob
// digests — the PostgreSQL counterpart of the SQLite store's methods named below (same
// semantics, same errors; the contract suite runs on both).
//
// Every write runs in PgDatabase.write, one transaction holding the store's write lock, so
// what SQLite gets from being one writer holds across control planes here: the next version
// number is read and bumped under the lock (gapless, never reused), a model created with its
// first version cannot race another registration, an alias moves only onto a version that
// is still live, and gc's view of the live digests cannot change while it deletes.
// Text order is byte order (COLLATE "C") whatever the database's locale, as in SQLite.

import { isoAt, type Clock } from '../../core/clock.ts';
import { kilnError } from '../../core/errors.ts';
import type { AliasEntry, Model, ModelVersion, Page } from '../../registry/types.ts';
import { cursorNumber, cursorString, decodePageToken, pageOf } from '../page-token.ts';
import type { LineageQuery, NewModel, NewVersion, PageRequest, Store } from '../store.ts';
import { activeRolloutStates } from '../traffic-records.ts';
import { trafficUsersOf } from '../version-users.ts';
import {
  toModel,
  toModelVersion,
  versionColumns,
  versionInsertColumns,
  versionInsertValues,
  type FileRow,
  type ModelRow,
  type VersionRow,
} from '../sqlite/sqlite-rows.ts';
import {
  toExperiment,
  toRollout,
  toTrafficRecord,
  type ExperimentRow,
  type RolloutRow,
  type TrafficRow,
} from '../sqlite/sqlite-traffic-rows.ts';
import { isUniqueViolation, type PgDatabase, type PgQueryable } from './pg-database.ts';

export type RegistryTablesMethods = Pick<
  Store,
  | 'createModel'
  | 'getModel'
  | 'listModels'
  | 'createVersion'
  | 'getVersion'
  | 'listVersions'
  | 'deleteVersion'
  | 'setAlias'
  | 'deleteAlias'
  | 'listAliases'
  | 'resolveAlias'
  | 'findByLineage'
  | 'liveBlobDigests'
  | 'withLiveBlobDigests'
>;

const versionSelect = `SELECT ${versionColumns} FROM model_versions v JOIN models m ON m.id = v.model_id`;

async function modelRow(db: PgQueryable, name: string): Promise<ModelRow | undefined> {
  return (await db.query<ModelRow>('SELECT * FROM models WHERE name = $1', [name])).rows[0];
}

async function requireModelRow(db: PgQueryable, name: string): Promise<ModelRow> {
  const row = await modelRow(db, name);
  if (row === undefined) throw kilnError('KILN_MODEL_NOT_FOUND', { model: name });
  return row;
}

async function versionRow(
  db: PgQueryable,
  modelId: number,
  version: number,
): Promise<VersionRow | undefined> {
  const result = await db.query<VersionRow>(
    `${versionSelect} WHERE v.model_id = $1 AND v.version = $2`,
    [modelId, version],
  );
  return result.rows[0];
}

async function toModels(db: PgQueryable, rows: readonly ModelRow[]): Promise<Model[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const stats = await db.query<{ model_id: number; latest: number | null; n: number }>(
    `SELECT model_id, MAX(version) AS latest, COUNT(*) AS n FROM model_versions
       WHERE model_id = ANY($1) AND deleted_at IS NULL GROUP BY model_id`,
    [ids],
  );
  const aliases = await db.query<{ model_id: number; alias: string; version: number }>(
    `SELECT a.model_id, a.alias, v.version FROM aliases a JOIN model_versions v ON v.id = a.version_id
       WHERE a.model_id = ANY($1) ORDER BY a.alias COLLATE "C"`,
    [ids],
  );
  return rows.map((row) =>
    toModel(
      row,
      stats.rows.find((s) => s.model_id === row.id) ?? { latest: null, n: 0 },
      aliases.rows.filter((a) => a.model_id === row.id),
    ),
  );
}

async function toModelOf(db: PgQueryable, row: ModelRow): Promise<Model> {
  const [model] = await toModels(db, [row]);
  if (model === undefined) throw kilnError('KILN_INTERNAL', { reason: 'model vanished' });
  return model;
}

/** Versions with their files and aliases, read in two statements whatever their number. */
async function hydrate(db: PgQueryable, rows: readonly VersionRow[]): Promise<ModelVersion[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const files = await db.query<FileRow & { version_id: number }>(
    `SELECT version_id, path, size, sha256 FROM version_files WHERE version_id = ANY($1)
       ORDER BY path COLLATE "C"`,
    [ids],
  );
  const aliases = await db.query<{ version_id: number; alias: string }>(
    `SELECT version_id, alias FROM aliases WHERE version_id = ANY($1) ORDER BY alias COLLATE "C"`,
    [ids],
  );
  return rows.map((row) =>
    toModelVersion(
      row,
      files.rows.filter((f) => f.version_id === row.id),
      aliases.rows.filter((a) => a.version_id === row.id).map((a) => a.alias),
    ),
  );
}

async function hydrateOne(db: PgQueryable, row: VersionRow): Promise<ModelVersion> {
  const [version] = await hydrate(db, [row]);
  if (version === undefined) throw kilnError('KILN_INTERNAL', { reason: 'version vanished' });
  return version;
}

/** pageOf over rows already hydrated (in the same order). */
function pageOfHydrated<Row, Item>(
  rows: readonly Row[],
  items: readonly Item[],
  limit: number,
  cursorOf: (row: Row) => Readonly<Record<string, string | number>>,
): Page<Item> {
  return pageOf(
    rows.map((row, i) => ({ row, item: items[i] as Item })),
    limit,
    (r) => r.item,
    (r) => cursorOf(r.row),
  );
}

async function liveDigests(db: PgQueryable): Promise<Set<string>> {
  const rows = await db.query<{ sha256: string }>(
    `SELECT DISTINCT f.sha256 FROM version_files f
       JOIN model_versions v ON v.id = f.version_id WHERE v.deleted_at IS NULL`,
  );
  return new Set(rows.rows.map((r) => r.sha256));
}

/**
 * What of the traffic state keeps a version from being deleted: endpoints whose traffic runs
 * it, active rollouts and running experiments naming it (read in the delete's transaction).
 */
async function trafficUsers(
  c: PgQueryable,
  clock: Clock,
  model: string,
  version: number,
): Promise<string[]> {
  const traffic = await c.query<TrafficRow>(
    'SELECT * FROM endpoint_traffic ORDER BY endpoint COLLATE "C"',
  );
  const rollouts = await c.query<RolloutRow>(
    `SELECT * FROM rollouts WHERE state = ANY($1)
       ORDER BY created_at COLLATE "C" DESC, id COLLATE "C" DESC`,
    [activeRolloutStates],
  );
  const experiments = await c.query<ExperimentRow>(
    `SELECT * FROM experiments WHERE state = 'running'
       ORDER BY created_at COLLATE "C" DESC, id COLLATE "C" DESC`,
  );
  const state = {
    traffic: traffic.rows.map(toTrafficRecord),
    activeRollouts: rollouts.rows.map(toRollout),
    runningExperiments: experiments.rows.map(toExperiment),
  };
  return trafficUsersOf({ model, version }, state, clock.now());
}

export class PgRegistryTables implements RegistryTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  // ---------------------------------------------------------------- models

  async createModel(model: NewModel): Promise<Model> {
    try {
      return await this.db.write(async (c) => {
        await c.query(
          'INSERT INTO models (name, team, description, created_at) VALUES ($1, $2, $3, $4)',
          [model.name, model.team, model.description, isoAt(this.clock)],
        );
        return toModelOf(c, await requireModelRow(c, model.name));
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw kilnError('KILN_MODEL_EXISTS', { model: model.name });
      throw error;
    }
  }

  getModel(name: string): Promise<Model | null> {
    return this.db.read(async (c) => {
      const row = await modelRow(c, name);
      return row === undefined ? null : toModelOf(c, row);
    });
  }

  listModels(request: PageRequest & { readonly team?: string | undefined }): Promise<Page<Model>> {
    return this.db.read(async (c) => {
      const after =
        request.pageToken === undefined
          ? ''
          : cursorString(decodePageToken(request.pageToken), 'after');
      const rows = await c.query<ModelRow>(
        `SELECT * FROM models WHERE name COLLATE "C" > $1 AND ($2::text IS NULL OR team = $2)
           ORDER BY name COLLATE "C" LIMIT $3`,
        [after, request.team ?? null, request.limit + 1],
      );
      const models = await toModels(c, rows.rows);
      return pageOfHydrated(rows.rows, models, request.limit, (r) => ({ after: r.name }));
    });
  }

  // ---------------------------------------------------------------- versions

  createVersion(
    model: string,
    input: NewVersion,
    options: { readonly createModel?: NewModel; readonly check?: () => void | Promise<void> } = {},
  ): Promise<ModelVersion> {
    return this.db.write(async (c) => {
      // Awaited: a check may be async (an object store's blob check), and it runs under the lock.
      await Promise.resolve(options.check?.());
      const create = options.createModel;
      if (create !== undefined && (await modelRow(c, model)) === undefined) {
        await c.query(
          'INSERT INTO models (name, team, description, created_at) VALUES ($1, $2, $3, $4)',
          [model, create.team, create.description, isoAt(this.clock)],
        );
      }
      const m = await requireModelRow(c, model);
      // Created meanwhile by someone else, for another team: the signing policy the caller
      // checked was that of the team it asked for, not this one's.
      if (create !== undefined && m.team !== create.team) {
        throw kilnError('KILN_MODEL_EXISTS', { model });
      }
      const next = await c.query<{ n: number }>(
        'UPDATE models SET next_version = next_version + 1 WHERE id = $1 RETURNING next_version - 1 AS n',
        [m.id],
      );
      const n = next.rows[0]?.n;
      if (n === undefined) throw kilnError('KILN_INTERNAL', { reason: 'model vanished' });
      const inserted = await c.query<{ id: number }>(
        `INSERT INTO model_versions (${versionInsertColumns})
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
         RETURNING id`,
        versionInsertValues(m.id, n, input, isoAt(this.clock)),
      );
      const versionId = inserted.rows[0]?.id;
      for (const f of input.files) {
        await c.query(
          'INSERT INTO version_files (version_id, path, size, sha256) VALUES ($1, $2, $3, $4)',
          [versionId, f.path, f.size, f.sha256],
        );
      }
      const row = await versionRow(c, m.id, n);
      if (row === undefined) {
        throw kilnError('KILN_INTERNAL', { reason: 'inserted version vanished' });
      }
      return hydrateOne(c, row);
    });
  }

  getVersion(
    model: string,
    version: number,
    options: { readonly includeDeleted?: boolean } = {},
  ): Promise<ModelVersion | null> {
    return this.db.read(async (c) => {
      const m = await modelRow(c, model);
      if (m === undefined) return null;
      const row = await versionRow(c, m.id, version);
      if (row === undefined) return null;
      if (row.deleted_at !== null && options.includeDeleted !== true) return null;
      return hydrateOne(c, row);
    });
  }

  listVersions(
    model: string,
    request: PageRequest & { readonly includeDeleted?: boolean },
  ): Promise<Page<ModelVersion>> {
    return this.db.read(async (c) => {
      const m = await requireModelRow(c, model);
      const before =
        request.pageToken === undefined
          ? Number.MAX_SAFE_INTEGER
          : cursorNumber(decodePageToken(request.pageToken), 'before');
      const rows = await c.query<VersionRow>(
        `${versionSelect} WHERE v.model_id = $1 AND v.version < $2
           AND ($3 OR v.deleted_at IS NULL) ORDER BY v.version DESC LIMIT $4`,
        [m.id, before, request.includeDeleted === true, request.limit + 1],
      );
      const versions = await hydrate(c, rows.rows);
      return pageOfHydrated(rows.rows, versions, request.limit, (r) => ({ before: r.version }));
    });
  }

  deleteVersion(model: string, version: number): Promise<ModelVersion> {
    return this.db.write(async (c) => {
      const m = await requireModelRow(c, model);
      const row = await versionRow(c, m.id, version);
      if (row === undefined || row.deleted_at !== null) {
        throw kilnError('KILN_VERSION_NOT_FOUND', { model, version });
      }
      const users = await this.versionUsers(c, row.id, model, version);
      if (users.length > 0) {
        throw kilnError(
          'KILN_VERSION_IN_USE',
          { model, version, users: users.join(', ') },
          { users },
        );
      }
      await c.query('UPDATE model_versions SET deleted_at = $1 WHERE id = $2', [
        isoAt(this.clock),
        row.id,
      ]);
      const updated = await versionRow(c, m.id, version);
      if (updated === undefined) {
        throw kilnError('KILN_INTERNAL', { reason: 'deleted version vanished' });
      }
      return hydrateOne(c, updated);
    });
  }

  /** Aliases, endpoints, then traffic, rollouts and experiments naming the version. */
  private async versionUsers(
    c: PgQueryable,
    versionId: number,
    model: string,
    version: number,
  ): Promise<string[]> {
    const aliases = await c.query<{ alias: string }>(
      'SELECT alias FROM aliases WHERE version_id = $1 ORDER BY alias COLLATE "C"',
      [versionId],
    );
    const endpoints = await c.query<{ name: string }>(
      'SELECT name FROM endpoints WHERE version_id = $1 ORDER BY name COLLATE "C"',
      [versionId],
    );
    return [
      ...aliases.rows.map((a) => `alias ${a.alias}`),
      ...endpoints.rows.map((e) => `endpoint ${e.name}`),
      ...(await trafficUsers(c, this.clock, model, version)),
    ];
  }

  // ---------------------------------------------------------------- aliases

  setAlias(
    model: string,
    alias: string,
    version: number,
  ): Promise<{ previousVersion: number | null }> {
    return this.db.write(async (c) => {
      const m = await requireModelRow(c, model);
      const target = await versionRow(c, m.id, version);
      if (target === undefined) throw kilnError('KILN_VERSION_NOT_FOUND', { model, version });
      if (target.deleted_at !== null) throw kilnError('KILN_VERSION_DELETED', { model, version });
      const previous = await c.query<{ version: number }>(
        `SELECT v.version FROM aliases a JOIN model_versions v ON v.id = a.version_id
         WHERE a.model_id = $1 AND a.alias = $2`,
        [m.id, alias],
      );
      await c.query(
        `INSERT INTO aliases (model_id, alias, version_id, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (model_id, alias) DO UPDATE SET version_id = excluded.version_id,
           updated_at = excluded.updated_at`,
        [m.id, alias, target.id, isoAt(this.clock)],
      );
      return { previousVersion: previous.rows[0]?.version ?? null };
    });
  }

  deleteAlias(model: string, alias: string): Promise<AliasEntry | null> {
    return this.db.write(async (c) => {
      const m = await requireModelRow(c, model);
      const row = await c.query<{ alias: string; version: number; updated_at: string }>(
        `SELECT a.alias, v.version, a.updated_at FROM aliases a
         JOIN model_versions v ON v.id = a.version_id WHERE a.model_id = $1 AND a.alias = $2`,
        [m.id, alias],
      );
      const found = row.rows[0];
      if (found === undefined) return null;
      await c.query('DELETE FROM aliases WHERE model_id = $1 AND alias = $2', [m.id, alias]);
      return { alias: found.alias, version: found.version, updatedAt: found.updated_at };
    });
  }

  listAliases(model: string): Promise<readonly AliasEntry[]> {
    return this.db.read(async (c) => {
      const m = await requireModelRow(c, model);
      const rows = await c.query<{ alias: string; version: number; updated_at: string }>(
        `SELECT a.alias, v.version, a.updated_at FROM aliases a
           JOIN model_versions v ON v.id = a.version_id WHERE a.model_id = $1
           ORDER BY a.alias COLLATE "C"`,
        [m.id],
      );
      return rows.rows.map((r) => ({
        alias: r.alias,
        version: r.version,
        updatedAt: r.updated_at,
      }));
    });
  }

  resolveAlias(model: string, alias: string): Promise<number | null> {
    return this.db.read(async (c) => {
      const row = await c.query<{ version: number }>(
        `SELECT v.version FROM aliases a JOIN models m ON m.id = a.model_id
           JOIN model_versions v ON v.id = a.version_id WHERE m.name = $1 AND a.alias = $2`,
        [model, alias],
      );
      return row.rows[0]?.version ?? null;
    });
  }

  // ---------------------------------------------------------------- lineage and blobs

  findByLineage(query: LineageQuery, request: PageRequest): Promise<Page<ModelVersion>> {
    return this.db.read(async (c) => {
      const after =
        request.pageToken === undefined
          ? 0
          : cursorNumber(decodePageToken(request.pageToken), 'after');
      const rows = await c.query<VersionRow>(
        `${versionSelect} WHERE v.deleted_at IS NULL AND v.id > $1
           AND ($2::text IS NULL OR v.lineage_run = $2)
           AND ($3::text IS NULL OR v.lineage_dataset_uri = $3)
           AND ($4::text IS NULL OR v.lineage_dataset_version = $4)
           AND ($5::text IS NULL OR v.lineage_experiment = $5)
         ORDER BY v.id LIMIT $6`,
        [
          after,
          query.run ?? null,
          query.datasetUri ?? null,
          query.datasetVersion ?? null,
          query.experiment ?? null,
          request.limit + 1,
        ],
      );
      const versions = await hydrate(c, rows.rows);
      return pageOfHydrated(rows.rows, versions, request.limit, (r) => ({ after: r.id }));
    });
  }

  liveBlobDigests(): Promise<ReadonlySet<string>> {
    return this.db.read(liveDigests);
  }

  withLiveBlobDigests<T>(work: (live: ReadonlySet<string>) => T | Promise<T>): Promise<T> {
    // The write lock is taken before the read, so no registration lands in between; `work`
    // (gc deleting blobs, perhaps asynchronously) finishes before the lock is let go.
    return this.db.write(async (c) => await work(await liveDigests(c)));
  }
}
