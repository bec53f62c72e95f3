// The embedded default store: one SQLite file in WAL mode, foreign keys on. better-sqlite3 is
// synchronous, so each method runs to completion on the event loop; writes that must be
// atomic across processes (version numbers, alias moves) use BEGIN IMMEDIATE transactions,
// and a busy database is waited on (busy_timeout) before it becomes KILN_STORE_BUSY.

import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { kilnError, KilnError } from '../../core/errors.ts';
import { isoAt, systemClock, type Clock } from '../../core/clock.ts';
import type {
  DemandRow,
  EndpointScaleRecord,
  NewPool,
  PoolRecord,
  ScaleChange,
  ScaleEvent,
} from '../scaling-records.ts';
import type {
  AliasEntry,
  Model,
  ModelVersion,
  Page,
  SigningPolicy,
  TrustedKey,
} from '../../registry/types.ts';
import type {
  EndpointWriteOptions,
  LineageQuery,
  NewModel,
  NewVersion,
  PageRequest,
  Store,
} from '../store.ts';
import { cursorNumber, cursorString, decodePageToken, pageOf } from '../page-token.ts';
import { sqliteMigrations, type Migration } from './migrations.ts';
import { SqliteServingTables, endpointsServing } from './sqlite-serving.ts';
import { SqliteSigningTables } from './sqlite-signing.ts';
import { SqliteTeamLimitTables } from './sqlite-team-limits.ts';
import { SqliteAccessTables } from './sqlite-access.ts';
import { SqliteTrafficTables } from './sqlite-traffic.ts';
import { SqliteRolloutTables } from './sqlite-rollouts.ts';
import { SqliteTrafficDataTables } from './sqlite-traffic-data.ts';
import { SqliteScalingTables } from './sqlite-scaling.ts';
import { SqliteCostTables } from './sqlite-cost.ts';
import type { TokenUsageRow, UsageQuery, UsageRow } from '../cost-records.ts';
import { SqliteSloTables } from './sqlite-slo.ts';
import { SqliteDriftTables } from './sqlite-drift.ts';
import type { DriftWindowQuery, DriftWindowRecord, NewDriftWindow } from '../drift-records.ts';
import { SqliteProfileTables } from './sqlite-profiles.ts';
import type { DataProfile } from '../../observability/profile/data-profile.ts';
import type { VersionProfile } from '../profile-records.ts';
import { SqliteQualityTables } from './sqlite-quality.ts';
import type {
  JoinedPrediction,
  NewPrediction,
  OutcomeItem,
  OutcomeJoinStatus,
} from '../quality-records.ts';
import type { AuditRecord, NewAuditRecord, NewToken, TokenRecord } from '../access-records.ts';
import type {
  EndpointTrafficRecord,
  ExperimentRecord,
  GoldenSet,
  NewTrafficEvent,
  ObservationDelta,
  ObservationQuery,
  ObservationRow,
  OutcomeAggregate,
  OutcomeEntry,
  RolloutRecord,
  TrafficChange,
  TrafficEvent,
} from '../traffic-records.ts';
import type {
  ApiKeyRecord,
  EndpointRecord,
  NewEndpoint,
  NewTeamLimit,
  TeamLimitRecord,
} from '../serving-records.ts';
import {
  toModel,
  toModelVersion,
  versionColumns,
  versionInsertColumns,
  versionInsertValues,
  type FileRow,
  type ModelRow,
  type VersionRow,
} from './sqlite-rows.ts';
import type {
  NewSloAlertEvent,
  SliMinuteRow,
  SloAlertEvent,
  SloAlertRecord,
  SloAlertUpsert,
} from '../slo-records.ts';

export interface SqliteStoreOptions {
  readonly clock?: Clock;
  /** How long a writer waits for another process's lock, in ms. */
  readonly busyTimeoutMs?: number;
  readonly migrations?: readonly Migration[];
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly clock: Clock;

  private readonly serving: SqliteServingTables;
  private readonly signing: SqliteSigningTables;
  private readonly teamLimits: SqliteTeamLimitTables;
  private readonly access: SqliteAccessTables;
  private readonly traffic: SqliteTrafficTables;
  private readonly rollouts: SqliteRolloutTables;
  private readonly trafficData: SqliteTrafficDataTables;
  private readonly scaling: SqliteScalingTables;
  private readonly cost: SqliteCostTables;
  private readonly slo: SqliteSloTables;
  private readonly drift: SqliteDriftTables;
  private readonly profiles: SqliteProfileTables;
  private readonly quality: SqliteQualityTables;

  private constructor(db: Database.Database, clock: Clock) {
    this.db = db;
    this.clock = clock;
    this.serving = new SqliteServingTables(db, clock);
    this.signing = new SqliteSigningTables(db, clock);
    this.teamLimits = new SqliteTeamLimitTables(db, clock);
    this.access = new SqliteAccessTables(db, clock);
    this.rollouts = new SqliteRolloutTables(db);
    this.traffic = new SqliteTrafficTables(db, clock, this.rollouts);
    this.trafficData = new SqliteTrafficDataTables(db, clock);
    this.scaling = new SqliteScalingTables(db, clock);
    this.cost = new SqliteCostTables(db);
    this.slo = new SqliteSloTables(db, clock);
    this.drift = new SqliteDriftTables(db, clock);
    this.profiles = new SqliteProfileTables(db, clock);
    this.quality = new SqliteQualityTables(db);
  }

  static open(path: string, options: SqliteStoreOptions = {}): SqliteStore {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 10_000}`);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    const store = new SqliteStore(db, options.clock ?? systemClock);
    store.guard(() => store.migrate(options.migrations ?? sqliteMigrations));
    return store;
  }

  /** Applies pending migrations in one immediate transaction; refuses a newer database. */
  private migrate(migrations: readonly Migration[]): void {
    this.db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
    const apply = this.db.transaction(() => {
      const row = this.db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as {
        v: number | null;
      };
      const current = row.v ?? 0;
      const latest = migrations.at(-1)?.version ?? 0;
      if (current > latest) throw kilnError('KILN_STORE_SCHEMA_NEWER', { current, latest });
      for (const m of migrations) {
        if (m.version <= current) continue;
        this.db.exec(m.sql);
        this.db
          .prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
          .run(m.version, m.name, isoAt(this.clock));
      }
    });
    apply.immediate();
  }

  /** Runs a synchronous body, mapping SQLite lock timeouts to a retryable KilnError. */
  private guard<T>(body: () => T): T {
    try {
      return body();
    } catch (error) {
      if (error instanceof KilnError) throw error;
      if (isBusy(error)) {
        throw kilnError('KILN_STORE_BUSY', { reason: (error as Error).message });
      }
      throw error;
    }
  }

  /** Runs a body as a settled promise: failures reject, never throw synchronously. */
  private run<T>(body: () => T): Promise<T> {
    try {
      return Promise.resolve(this.guard(body));
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  close(): Promise<void> {
    this.db.close();
    return Promise.resolve();
  }

  // ---------------------------------------------------------------- models

  private modelRow(name: string): ModelRow | undefined {
    return this.db.prepare('SELECT * FROM models WHERE name = ?').get(name) as ModelRow | undefined;
  }

  private requireModelRow(name: string): ModelRow {
    const row = this.modelRow(name);
    if (row === undefined) throw kilnError('KILN_MODEL_NOT_FOUND', { model: name });
    return row;
  }

  private toModel(row: ModelRow): Model {
    const stats = this.db
      .prepare(
        `SELECT MAX(version) AS latest, COUNT(*) AS n FROM model_versions
         WHERE model_id = ? AND deleted_at IS NULL`,
      )
      .get(row.id) as { latest: number | null; n: number };
    const aliasRows = this.db
      .prepare(
        `SELECT a.alias, v.version FROM aliases a JOIN model_versions v ON v.id = a.version_id
         WHERE a.model_id = ? ORDER BY a.alias`,
      )
      .all(row.id) as { alias: string; version: number }[];
    return toModel(row, stats, aliasRows);
  }

  createModel(model: NewModel): Promise<Model> {
    return this.run(() => {
      try {
        this.db
          .prepare('INSERT INTO models (name, team, description, created_at) VALUES (?, ?, ?, ?)')
          .run(model.name, model.team, model.description, isoAt(this.clock));
      } catch (error) {
        if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
          throw kilnError('KILN_MODEL_EXISTS', { model: model.name });
        }
        throw error;
      }
      return this.toModel(this.requireModelRow(model.name));
    });
  }

  getModel(name: string): Promise<Model | null> {
    return this.run(() => {
      const row = this.modelRow(name);
      return row === undefined ? null : this.toModel(row);
    });
  }

  listModels(request: PageRequest & { readonly team?: string | undefined }): Promise<Page<Model>> {
    return this.run(() => {
      const after =
        request.pageToken === undefined
          ? ''
          : cursorString(decodePageToken(request.pageToken), 'after');
      const rows = this.db
        .prepare(
          `SELECT * FROM models WHERE name > ? AND (? IS NULL OR team = ?)
             ORDER BY name LIMIT ?`,
        )
        .all(after, request.team ?? null, request.team ?? null, request.limit + 1) as ModelRow[];
      return pageOf(
        rows,
        request.limit,
        (r) => this.toModel(r),
        (r) => ({ after: r.name }),
      );
    });
  }

  // ---------------------------------------------------------------- versions

  private filesOf(versionId: number): FileRow[] {
    return this.db
      .prepare('SELECT path, size, sha256 FROM version_files WHERE version_id = ? ORDER BY path')
      .all(versionId) as FileRow[];
  }

  private aliasesOf(versionId: number): string[] {
    return (
      this.db
        .prepare('SELECT alias FROM aliases WHERE version_id = ? ORDER BY alias')
        .all(versionId) as { alias: string }[]
    ).map((r) => r.alias);
  }

  private hydrate(row: VersionRow): ModelVersion {
    return toModelVersion(row, this.filesOf(row.id), this.aliasesOf(row.id));
  }

  private versionRow(modelId: number, version: number): VersionRow | undefined {
    return this.db
      .prepare(
        `SELECT ${versionColumns} FROM model_versions v JOIN models m ON m.id = v.model_id
         WHERE v.model_id = ? AND v.version = ?`,
      )
      .get(modelId, version) as VersionRow | undefined;
  }

  async createVersion(
    model: string,
    input: NewVersion,
    options: {
      readonly createModel?: NewModel;
      readonly check?: () => void | Promise<void>;
    } = {},
  ): Promise<ModelVersion> {
    // A synchronous check runs under the lock; an asynchronous one (an object store's HEADs)
    // cannot, so the first run only starts it and commits nothing, and the insert follows
    // once it passed (see Store.createVersion).
    type Started = { readonly pending: Promise<void> };
    const insert = this.db.transaction((check: boolean): ModelVersion | Started => {
      const pending = check ? options.check?.() : undefined;
      if (pending !== undefined) return { pending };
      const create = options.createModel;
      if (create !== undefined && this.modelRow(model) === undefined) {
        this.db
          .prepare('INSERT INTO models (name, team, description, created_at) VALUES (?, ?, ?, ?)')
          .run(model, create.team, create.description, isoAt(this.clock));
      }
      const m = this.requireModelRow(model);
      // Created meanwhile by someone else, for another team: the signing policy the caller
      // checked was that of the team it asked for, not this one's.
      if (create !== undefined && m.team !== create.team)
        throw kilnError('KILN_MODEL_EXISTS', { model });
      const { n } = this.db
        .prepare(
          'UPDATE models SET next_version = next_version + 1 WHERE id = ? RETURNING next_version - 1 AS n',
        )
        .get(m.id) as { n: number };
      const result = this.db
        .prepare(
          `INSERT INTO model_versions (${versionInsertColumns})
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(...versionInsertValues(m.id, n, input, isoAt(this.clock)));
      const versionId = Number(result.lastInsertRowid);
      const addFile = this.db.prepare(
        'INSERT INTO version_files (version_id, path, size, sha256) VALUES (?, ?, ?, ?)',
      );
      for (const f of input.files) addFile.run(versionId, f.path, f.size, f.sha256);
      const row = this.versionRow(m.id, n);
      if (row === undefined)
        throw kilnError('KILN_INTERNAL', { reason: 'inserted version vanished' });
      return this.hydrate(row);
    });
    const first = await this.run(() => insert.immediate(true));
    if (!('pending' in first)) return first;
    await first.pending;
    return (await this.run(() => insert.immediate(false))) as ModelVersion;
  }

  getVersion(
    model: string,
    version: number,
    options: { readonly includeDeleted?: boolean } = {},
  ): Promise<ModelVersion | null> {
    return this.run(() => {
      const m = this.modelRow(model);
      if (m === undefined) return null;
      const row = this.versionRow(m.id, version);
      if (row === undefined) return null;
      if (row.deleted_at !== null && options.includeDeleted !== true) return null;
      return this.hydrate(row);
    });
  }

  listVersions(
    model: string,
    request: PageRequest & { readonly includeDeleted?: boolean },
  ): Promise<Page<ModelVersion>> {
    return this.run(() => {
      const m = this.requireModelRow(model);
      const before =
        request.pageToken === undefined
          ? Number.MAX_SAFE_INTEGER
          : cursorNumber(decodePageToken(request.pageToken), 'before');
      const rows = this.db
        .prepare(
          `SELECT ${versionColumns} FROM model_versions v JOIN models m ON m.id = v.model_id
             WHERE v.model_id = ? AND v.version < ? AND (? OR v.deleted_at IS NULL)
             ORDER BY v.version DESC LIMIT ?`,
        )
        .all(
          m.id,
          before,
          request.includeDeleted === true ? 1 : 0,
          request.limit + 1,
        ) as VersionRow[];
      return pageOf(
        rows,
        request.limit,
        (r) => this.hydrate(r),
        (r) => ({ before: r.version }),
      );
    });
  }

  deleteVersion(model: string, version: number): Promise<ModelVersion> {
    const remove = this.db.transaction((): ModelVersion => {
      const m = this.requireModelRow(model);
      const row = this.versionRow(m.id, version);
      if (row === undefined || row.deleted_at !== null) {
        throw kilnError('KILN_VERSION_NOT_FOUND', { model, version });
      }
      const users = [
        ...this.aliasesOf(row.id).map((a) => `alias ${a}`),
        ...endpointsServing(this.db, row.id).map((e) => `endpoint ${e}`),
        ...this.traffic.versionUsers(model, version),
      ];
      if (users.length > 0) {
        throw kilnError(
          'KILN_VERSION_IN_USE',
          { model, version, users: users.join(', ') },
          { users },
        );
      }
      this.db
        .prepare('UPDATE model_versions SET deleted_at = ? WHERE id = ?')
        .run(isoAt(this.clock), row.id);
      const updated = this.versionRow(m.id, version);
      if (updated === undefined)
        throw kilnError('KILN_INTERNAL', { reason: 'deleted version vanished' });
      return this.hydrate(updated);
    });
    return this.run(() => remove.immediate());
  }

  // ---------------------------------------------------------------- aliases

  setAlias(
    model: string,
    alias: string,
    version: number,
  ): Promise<{ previousVersion: number | null }> {
    const move = this.db.transaction((): { previousVersion: number | null } => {
      const m = this.requireModelRow(model);
      const target = this.versionRow(m.id, version);
      if (target === undefined) throw kilnError('KILN_VERSION_NOT_FOUND', { model, version });
      if (target.deleted_at !== null) throw kilnError('KILN_VERSION_DELETED', { model, version });
      const previous = this.db
        .prepare(
          `SELECT v.version FROM aliases a JOIN model_versions v ON v.id = a.version_id
           WHERE a.model_id = ? AND a.alias = ?`,
        )
        .get(m.id, alias) as { version: number } | undefined;
      this.db
        .prepare(
          `INSERT INTO aliases (model_id, alias, version_id, updated_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (model_id, alias) DO UPDATE SET version_id = excluded.version_id,
             updated_at = excluded.updated_at`,
        )
        .run(m.id, alias, target.id, isoAt(this.clock));
      return { previousVersion: previous?.version ?? null };
    });
    return this.run(() => move.immediate());
  }

  deleteAlias(model: string, alias: string): Promise<AliasEntry | null> {
    const remove = this.db.transaction((): AliasEntry | null => {
      const m = this.requireModelRow(model);
      const row = this.db
        .prepare(
          `SELECT a.alias, v.version, a.updated_at FROM aliases a
           JOIN model_versions v ON v.id = a.version_id WHERE a.model_id = ? AND a.alias = ?`,
        )
        .get(m.id, alias) as { alias: string; version: number; updated_at: string } | undefined;
      if (row === undefined) return null;
      this.db.prepare('DELETE FROM aliases WHERE model_id = ? AND alias = ?').run(m.id, alias);
      return { alias: row.alias, version: row.version, updatedAt: row.updated_at };
    });
    return this.run(() => remove.immediate());
  }

  listAliases(model: string): Promise<readonly AliasEntry[]> {
    return this.run(() => {
      const m = this.requireModelRow(model);
      const rows = this.db
        .prepare(
          `SELECT a.alias, v.version, a.updated_at FROM aliases a
             JOIN model_versions v ON v.id = a.version_id WHERE a.model_id = ? ORDER BY a.alias`,
        )
        .all(m.id) as { alias: string; version: number; updated_at: string }[];
      return rows.map((r) => ({ alias: r.alias, version: r.version, updatedAt: r.updated_at }));
    });
  }

  resolveAlias(model: string, alias: string): Promise<number | null> {
    return this.run(() => {
      const row = this.db
        .prepare(
          `SELECT v.version FROM aliases a JOIN models m ON m.id = a.model_id
             JOIN model_versions v ON v.id = a.version_id WHERE m.name = ? AND a.alias = ?`,
        )
        .get(model, alias) as { version: number } | undefined;
      return row?.version ?? null;
    });
  }

  // ---------------------------------------------------------------- lineage and blobs

  findByLineage(query: LineageQuery, request: PageRequest): Promise<Page<ModelVersion>> {
    return this.run(() => {
      const after =
        request.pageToken === undefined
          ? 0
          : cursorNumber(decodePageToken(request.pageToken), 'after');
      const rows = this.db
        .prepare(
          `SELECT ${versionColumns} FROM model_versions v JOIN models m ON m.id = v.model_id
             WHERE v.deleted_at IS NULL AND v.id > ?
               AND (? IS NULL OR v.lineage_run = ?)
               AND (? IS NULL OR v.lineage_dataset_uri = ?)
               AND (? IS NULL OR v.lineage_dataset_version = ?)
               AND (? IS NULL OR v.lineage_experiment = ?)
             ORDER BY v.id LIMIT ?`,
        )
        .all(
          after,
          ...[query.run, query.datasetUri, query.datasetVersion, query.experiment].flatMap((q) => [
            q ?? null,
            q ?? null,
          ]),
          request.limit + 1,
        ) as VersionRow[];
      return pageOf(
        rows,
        request.limit,
        (r) => this.hydrate(r),
        (r) => ({ after: r.id }),
      );
    });
  }

  liveBlobDigests(): Promise<ReadonlySet<string>> {
    return this.run(() => this.liveDigests());
  }

  async withLiveBlobDigests<T>(work: (live: ReadonlySet<string>) => T | Promise<T>): Promise<T> {
    // IMMEDIATE: the write lock is taken before the read, so no insert lands in between. An
    // asynchronous `work` continues after the commit (see Store.withLiveBlobDigests).
    // (Boxed: better-sqlite3 refuses a transaction function that returns a promise.)
    const locked = this.db.transaction(() => ({ result: work(this.liveDigests()) }));
    return await (
      await this.run(() => locked.immediate())
    ).result;
  }

  private liveDigests(): Set<string> {
    const rows = this.db
      .prepare(
        `SELECT DISTINCT f.sha256 FROM version_files f
           JOIN model_versions v ON v.id = f.version_id WHERE v.deleted_at IS NULL`,
      )
      .all() as { sha256: string }[];
    return new Set(rows.map((r) => r.sha256));
  }

  // ---------------------------------------------------------------- signing

  addTrustedKey(key: Omit<TrustedKey, 'createdAt'>): Promise<TrustedKey> {
    return this.run(() => this.signing.addTrustedKey(key));
  }

  getTrustedKey(keyId: string): Promise<TrustedKey | null> {
    return this.run(() => this.signing.getTrustedKey(keyId));
  }

  listTrustedKeys(): Promise<readonly TrustedKey[]> {
    return this.run(() => this.signing.listTrustedKeys());
  }

  removeTrustedKey(keyId: string): Promise<TrustedKey | null> {
    return this.run(() => this.signing.removeTrustedKey(keyId));
  }

  getSigningPolicy(): Promise<SigningPolicy> {
    return this.run(() => this.signing.readPolicy());
  }

  setSigningPolicy(team: string | null, requireSignature: boolean): Promise<SigningPolicy> {
    return this.run(() => this.signing.setPolicy(team, requireSignature));
  }

  // ---------------------------------------------------------------- serving

  putEndpoint(
    endpoint: NewEndpoint,
    options: EndpointWriteOptions = {},
  ): Promise<{ endpoint: EndpointRecord; created: boolean }> {
    return this.run(() => this.serving.putEndpoint(endpoint, options));
  }

  getEndpoint(name: string): Promise<EndpointRecord | null> {
    return this.run(() => this.serving.getEndpoint(name));
  }

  listEndpoints(): Promise<readonly EndpointRecord[]> {
    return this.run(() => this.serving.listEndpoints());
  }

  deleteEndpoint(name: string, options: EndpointWriteOptions = {}): Promise<EndpointRecord | null> {
    // The serving delete nests as a savepoint; its traffic state goes in the same transaction.
    const remove = this.db.transaction((): EndpointRecord | null => {
      const removed = this.serving.deleteEndpoint(name, options);
      if (removed !== null) this.traffic.endpointDeleted(name);
      return removed;
    });
    return this.run(() => remove.immediate());
  }

  addApiKey(key: Omit<ApiKeyRecord, 'createdAt'>): Promise<ApiKeyRecord> {
    return this.run(() => this.serving.addApiKey(key));
  }

  listApiKeys(): Promise<readonly ApiKeyRecord[]> {
    return this.run(() => this.serving.listApiKeys());
  }

  revokeApiKey(id: string): Promise<ApiKeyRecord | null> {
    return this.run(() => this.serving.revokeApiKey(id));
  }

  setTeamLimit(limit: NewTeamLimit): Promise<TeamLimitRecord> {
    return this.run(() => this.teamLimits.set(limit));
  }

  deleteTeamLimit(team: string): Promise<TeamLimitRecord | null> {
    return this.run(() => this.teamLimits.delete(team));
  }

  listTeamLimits(): Promise<readonly TeamLimitRecord[]> {
    return this.run(() => this.teamLimits.list());
  }

  // ---------------------------------------------------------------- access

  addToken(token: NewToken): Promise<TokenRecord> {
    return this.run(() => this.access.addToken(token));
  }

  findTokenByDigest(sha256: string): Promise<TokenRecord | null> {
    return this.run(() => this.access.findByDigest(sha256));
  }

  getToken(id: string): Promise<TokenRecord | null> {
    return this.run(() => this.access.get(id));
  }

  listTokens(options: { readonly includeRevoked?: boolean } = {}): Promise<readonly TokenRecord[]> {
    return this.run(() => this.access.list(options.includeRevoked === true));
  }

  revokeToken(id: string): Promise<TokenRecord | null> {
    return this.run(() => this.access.revoke(id));
  }

  appendAudit(entry: NewAuditRecord): Promise<AuditRecord> {
    return this.run(() => this.access.appendAudit(entry));
  }

  listAudit(
    request: PageRequest & { readonly since?: string | undefined },
  ): Promise<Page<AuditRecord>> {
    return this.run(() => this.access.listAudit(request));
  }
  // ---------------------------------------------------------------- traffic management

  getEndpointTraffic(endpoint: string): Promise<EndpointTrafficRecord | null> {
    return this.run(() => this.traffic.get(endpoint));
  }

  listEndpointTraffic(): Promise<readonly EndpointTrafficRecord[]> {
    return this.run(() => this.traffic.list());
  }

  updateEndpointTraffic(endpoint: string, change: TrafficChange): Promise<EndpointTrafficRecord> {
    return this.run(() => this.traffic.update(endpoint, change));
  }

  appendTrafficEvent(event: NewTrafficEvent): Promise<TrafficEvent> {
    return this.run(() => this.traffic.appendEvent(event));
  }

  listTrafficEvents(
    endpoint: string,
    request: PageRequest & { readonly since?: string | undefined },
  ): Promise<Page<TrafficEvent>> {
    return this.run(() => this.traffic.listEvents(endpoint, request));
  }

  getRollout(id: string): Promise<RolloutRecord | null> {
    return this.run(() => this.rollouts.getRollout(id));
  }

  getActiveRollout(endpoint: string): Promise<RolloutRecord | null> {
    return this.run(() => this.rollouts.getActiveRollout(endpoint));
  }

  listRollouts(query: {
    readonly endpoint?: string;
    readonly active?: boolean;
  }): Promise<readonly RolloutRecord[]> {
    return this.run(() => this.rollouts.listRollouts(query));
  }

  getExperiment(id: string): Promise<ExperimentRecord | null> {
    return this.run(() => this.rollouts.getExperiment(id));
  }

  listExperiments(query: {
    readonly endpoint?: string;
    readonly state?: ExperimentRecord['state'];
  }): Promise<readonly ExperimentRecord[]> {
    return this.run(() => this.rollouts.listExperiments(query));
  }

  addOutcomes(experimentId: string, entries: readonly OutcomeEntry[]): Promise<void> {
    return this.run(() => this.trafficData.addOutcomes(experimentId, entries));
  }

  listOutcomes(experimentId: string): Promise<readonly OutcomeAggregate[]> {
    return this.run(() => this.trafficData.listOutcomes(experimentId));
  }

  mergeObservations(
    deltas: readonly ObservationDelta[],
    merge: (existing: unknown, delta: unknown) => unknown,
  ): Promise<void> {
    return this.run(() => this.trafficData.mergeObservations(deltas, merge));
  }

  listObservations(query: ObservationQuery): Promise<readonly ObservationRow[]> {
    return this.run(() => this.trafficData.listObservations(query));
  }

  pruneObservations(before: string): Promise<number> {
    return this.run(() => this.trafficData.pruneObservations(before));
  }

  setGoldenSet(golden: Omit<GoldenSet, 'createdAt'>): Promise<GoldenSet> {
    return this.run(() => this.trafficData.setGoldenSet(golden));
  }

  getGoldenSet(model: string, version: number): Promise<GoldenSet | null> {
    return this.run(() => this.trafficData.getGoldenSet(model, version));
  }
  // ---------------------------------------------------------------- autoscaling and pools

  getEndpointScale(endpoint: string): Promise<EndpointScaleRecord | null> {
    return this.run(() => this.scaling.getScale(endpoint));
  }

  listEndpointScales(): Promise<readonly EndpointScaleRecord[]> {
    return this.run(() => this.scaling.listScales());
  }

  setEndpointScale(change: ScaleChange): Promise<EndpointScaleRecord> {
    return this.run(() => this.scaling.setScale(change));
  }

  listScaleEvents(query: {
    readonly endpoint?: string;
    readonly since?: string;
    readonly limit?: number;
  }): Promise<readonly ScaleEvent[]> {
    return this.run(() => this.scaling.listEvents(query));
  }

  mergeDemand(rows: readonly DemandRow[]): Promise<void> {
    return this.run(() => this.scaling.mergeDemand(rows));
  }

  listDemand(query: {
    readonly endpoint: string;
    readonly since: string;
    readonly until?: string;
  }): Promise<readonly DemandRow[]> {
    return this.run(() => this.scaling.listDemand(query));
  }

  pruneDemand(before: string): Promise<number> {
    return this.run(() => this.scaling.pruneDemand(before));
  }

  putPool(pool: NewPool): Promise<PoolRecord> {
    return this.run(() => this.scaling.putPool(pool));
  }

  getPool(name: string): Promise<PoolRecord | null> {
    return this.run(() => this.scaling.getPool(name));
  }

  listPools(): Promise<readonly PoolRecord[]> {
    return this.run(() => this.scaling.listPools());
  }

  deletePool(name: string): Promise<PoolRecord | null> {
    return this.run(() => this.scaling.deletePool(name));
  }

  // ---------------------------------------------------------------- issue 15 B: reference profiles

  setVersionProfile(model: string, version: number, profile: DataProfile): Promise<VersionProfile> {
    return this.run(() => this.profiles.setVersionProfile(model, version, profile));
  }

  getVersionProfile(model: string, version: number): Promise<VersionProfile | null> {
    return this.run(() => this.profiles.getVersionProfile(model, version));
  }

  // ---------------------------------------------------------------- issue 15 C: drift windows

  mergeDriftWindows(rows: readonly NewDriftWindow[]): Promise<void> {
    return this.run(() => this.drift.mergeWindows(rows));
  }

  listDriftWindows(query: DriftWindowQuery): Promise<readonly DriftWindowRecord[]> {
    return this.run(() => this.drift.listWindows(query));
  }

  pruneDriftWindows(before: string): Promise<number> {
    return this.run(() => this.drift.pruneWindows(before));
  }

  // ---------------------------------------------------------------- issue 15 D: predictions and outcomes

  addPredictions(rows: readonly NewPrediction[]): Promise<number> {
    return this.run(() => this.quality.addPredictions(rows));
  }

  joinOutcomes(
    endpoint: string,
    items: readonly OutcomeItem[],
    windowStartMs: number,
    nowMs: number,
  ): Promise<readonly OutcomeJoinStatus[]> {
    return this.run(() => this.quality.joinOutcomes(endpoint, items, windowStartMs, nowMs));
  }

  listJoinedPredictions(query: {
    readonly endpoint: string;
    readonly sinceMs: number;
    readonly untilMs?: number;
    readonly slice?: string;
  }): Promise<readonly JoinedPrediction[]> {
    return this.run(() => this.quality.listJoined(query));
  }

  prunePredictions(
    endpoint: string,
    unjoinedBeforeMs: number,
    joinedBeforeMs: number,
  ): Promise<number> {
    return this.run(() =>
      this.quality.prunePredictions(endpoint, unjoinedBeforeMs, joinedBeforeMs),
    );
  }

  // ---------------------------------------------------------------- issue 15 E: cost and usage

  mergeUsage(rows: readonly UsageRow[]): Promise<void> {
    return this.run(() => this.cost.mergeUsage(rows));
  }

  listUsage(query: UsageQuery): Promise<readonly UsageRow[]> {
    return this.run(() => this.cost.listUsage(query));
  }

  mergeTokenUsage(rows: readonly TokenUsageRow[]): Promise<void> {
    return this.run(() => this.cost.mergeTokenUsage(rows));
  }

  listTokenUsage(query: UsageQuery): Promise<readonly TokenUsageRow[]> {
    return this.run(() => this.cost.listTokenUsage(query));
  }

  pruneUsage(before: string): Promise<number> {
    return this.run(() => this.cost.pruneUsage(before));
  }

  // ---------------------------------------------------------------- issue 15 F: SLO alerts

  mergeSliMinutes(rows: readonly SliMinuteRow[]): Promise<void> {
    return this.run(() => this.slo.mergeSliMinutes(rows));
  }

  listSliMinutes(query: {
    readonly endpoint: string;
    readonly since: string;
    readonly until?: string;
  }): Promise<readonly SliMinuteRow[]> {
    return this.run(() => this.slo.listSliMinutes(query));
  }

  pruneSliMinutes(before: string): Promise<number> {
    return this.run(() => this.slo.pruneSliMinutes(before));
  }

  listSloAlerts(endpoint?: string): Promise<readonly SloAlertRecord[]> {
    return this.run(() => this.slo.listSloAlerts(endpoint));
  }

  applySloAlerts(
    upserts: readonly SloAlertUpsert[],
    events: readonly NewSloAlertEvent[],
  ): Promise<void> {
    return this.run(() => this.slo.applySloAlerts(upserts, events));
  }

  listSloAlertEvents(query: {
    readonly endpoint: string;
    readonly limit?: number;
  }): Promise<readonly SloAlertEvent[]> {
    return this.run(() => this.slo.listSloAlertEvents(query));
  }
}
