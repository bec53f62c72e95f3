// The PostgreSQL store (`kiln up --store postgres://…` or KILN_STORE_URL): the same Store as
// the embedded SQLite one, for several control planes on one database. Methods live in
// per-area table modules; this class opens the pool, applies the migrations (the SQLite
// migrations expressed for PostgreSQL, pg-migrations.ts) and delegates.

import { isoAt, systemClock, type Clock } from '../../core/clock.ts';
import { kilnError } from '../../core/errors.ts';
import type { Store } from '../store.ts';
import type { Migration } from '../sqlite/migrations.ts';
import { PgDatabase, type PgFence } from './pg-database.ts';
import { postgresMigrations } from './pg-migrations.ts';
import { PgRegistryTables } from './pg-registry.ts';
import { PgSigningTables } from './pg-signing.ts';
import { PgServingTables } from './pg-serving.ts';
import { PgAccessTables } from './pg-access.ts';
import { PgTrafficTables } from './pg-traffic.ts';
import { PgTrafficDataTables } from './pg-traffic-data.ts';
import { PgScalingTables } from './pg-scaling.ts';
import { PgObservabilityTables } from './pg-observability.ts';

export interface PgStoreOptions {
  readonly clock?: Clock;
  readonly migrations?: readonly Migration[];
  /** Most connections this store opens (default 8). */
  readonly maxConnections?: number;
  /** A channel every committed write notifies (PgDatabase's notifyChannel). */
  readonly notifyChannel?: string;
}

export class PgStore implements Store {
  readonly kind = 'postgres' as const;
  readonly db: PgDatabase;
  private readonly registry: PgRegistryTables;
  private readonly signing: PgSigningTables;
  private readonly serving: PgServingTables;
  private readonly access: PgAccessTables;
  private readonly traffic: PgTrafficTables;
  private readonly trafficData: PgTrafficDataTables;
  private readonly scaling: PgScalingTables;
  private readonly observability: PgObservabilityTables;

  private constructor(db: PgDatabase, clock: Clock) {
    this.db = db;
    this.registry = new PgRegistryTables(db, clock);
    this.signing = new PgSigningTables(db, clock);
    this.serving = new PgServingTables(db, clock);
    this.access = new PgAccessTables(db, clock);
    this.traffic = new PgTrafficTables(db, clock);
    this.trafficData = new PgTrafficDataTables(db, clock);
    this.scaling = new PgScalingTables(db, clock);
    this.observability = new PgObservabilityTables(db, clock);
  }

  /** Connects and migrates; KILN_STORE_UNAVAILABLE when the server cannot be reached or used. */
  static async open(url: string, options: PgStoreOptions = {}): Promise<PgStore> {
    const clock = options.clock ?? systemClock;
    const db = new PgDatabase(url, {
      max: options.maxConnections ?? 8,
      ...(options.notifyChannel === undefined ? {} : { notifyChannel: options.notifyChannel }),
    });
    try {
      await migrate(db, options.migrations ?? postgresMigrations, clock);
    } catch (error) {
      await db.close().catch(() => undefined);
      throw error;
    }
    return new PgStore(db, clock);
  }

  /** Writes from now on are refused (KILN_LEADER_FENCED) unless this lease is still held. */
  setFence(fence: PgFence | null): void {
    this.db.setFence(fence);
  }

  close(): Promise<void> {
    return this.db.close();
  }

  createModel(...args: Parameters<Store['createModel']>): ReturnType<Store['createModel']> {
    return this.registry.createModel(...args);
  }

  getModel(...args: Parameters<Store['getModel']>): ReturnType<Store['getModel']> {
    return this.registry.getModel(...args);
  }

  listModels(...args: Parameters<Store['listModels']>): ReturnType<Store['listModels']> {
    return this.registry.listModels(...args);
  }

  createVersion(...args: Parameters<Store['createVersion']>): ReturnType<Store['createVersion']> {
    return this.registry.createVersion(...args);
  }

  getVersion(...args: Parameters<Store['getVersion']>): ReturnType<Store['getVersion']> {
    return this.registry.getVersion(...args);
  }

  listVersions(...args: Parameters<Store['listVersions']>): ReturnType<Store['listVersions']> {
    return this.registry.listVersions(...args);
  }

  deleteVersion(...args: Parameters<Store['deleteVersion']>): ReturnType<Store['deleteVersion']> {
    return this.registry.deleteVersion(...args);
  }

  setAlias(...args: Parameters<Store['setAlias']>): ReturnType<Store['setAlias']> {
    return this.registry.setAlias(...args);
  }

  deleteAlias(...args: Parameters<Store['deleteAlias']>): ReturnType<Store['deleteAlias']> {
    return this.registry.deleteAlias(...args);
  }

  listAliases(...args: Parameters<Store['listAliases']>): ReturnType<Store['listAliases']> {
    return this.registry.listAliases(...args);
  }

  resolveAlias(...args: Parameters<Store['resolveAlias']>): ReturnType<Store['resolveAlias']> {
    return this.registry.resolveAlias(...args);
  }

  findByLineage(...args: Parameters<Store['findByLineage']>): ReturnType<Store['findByLineage']> {
    return this.registry.findByLineage(...args);
  }

  liveBlobDigests(
    ...args: Parameters<Store['liveBlobDigests']>
  ): ReturnType<Store['liveBlobDigests']> {
    return this.registry.liveBlobDigests(...args);
  }

  withLiveBlobDigests<T>(work: (live: ReadonlySet<string>) => T | Promise<T>): Promise<T> {
    return this.registry.withLiveBlobDigests(work);
  }

  addTrustedKey(...args: Parameters<Store['addTrustedKey']>): ReturnType<Store['addTrustedKey']> {
    return this.signing.addTrustedKey(...args);
  }

  getTrustedKey(...args: Parameters<Store['getTrustedKey']>): ReturnType<Store['getTrustedKey']> {
    return this.signing.getTrustedKey(...args);
  }

  listTrustedKeys(
    ...args: Parameters<Store['listTrustedKeys']>
  ): ReturnType<Store['listTrustedKeys']> {
    return this.signing.listTrustedKeys(...args);
  }

  removeTrustedKey(
    ...args: Parameters<Store['removeTrustedKey']>
  ): ReturnType<Store['removeTrustedKey']> {
    return this.signing.removeTrustedKey(...args);
  }

  getSigningPolicy(
    ...args: Parameters<Store['getSigningPolicy']>
  ): ReturnType<Store['getSigningPolicy']> {
    return this.signing.getSigningPolicy(...args);
  }

  setSigningPolicy(
    ...args: Parameters<Store['setSigningPolicy']>
  ): ReturnType<Store['setSigningPolicy']> {
    return this.signing.setSigningPolicy(...args);
  }

  putEndpoint(...args: Parameters<Store['putEndpoint']>): ReturnType<Store['putEndpoint']> {
    return this.serving.putEndpoint(...args);
  }

  getEndpoint(...args: Parameters<Store['getEndpoint']>): ReturnType<Store['getEndpoint']> {
    return this.serving.getEndpoint(...args);
  }

  listEndpoints(...args: Parameters<Store['listEndpoints']>): ReturnType<Store['listEndpoints']> {
    return this.serving.listEndpoints(...args);
  }

  deleteEndpoint(
    ...args: Parameters<Store['deleteEndpoint']>
  ): ReturnType<Store['deleteEndpoint']> {
    return this.serving.deleteEndpoint(...args);
  }

  addApiKey(...args: Parameters<Store['addApiKey']>): ReturnType<Store['addApiKey']> {
    return this.serving.addApiKey(...args);
  }

  listApiKeys(...args: Parameters<Store['listApiKeys']>): ReturnType<Store['listApiKeys']> {
    return this.serving.listApiKeys(...args);
  }

  revokeApiKey(...args: Parameters<Store['revokeApiKey']>): ReturnType<Store['revokeApiKey']> {
    return this.serving.revokeApiKey(...args);
  }

  setTeamLimit(...args: Parameters<Store['setTeamLimit']>): ReturnType<Store['setTeamLimit']> {
    return this.serving.setTeamLimit(...args);
  }

  deleteTeamLimit(
    ...args: Parameters<Store['deleteTeamLimit']>
  ): ReturnType<Store['deleteTeamLimit']> {
    return this.serving.deleteTeamLimit(...args);
  }

  listTeamLimits(
    ...args: Parameters<Store['listTeamLimits']>
  ): ReturnType<Store['listTeamLimits']> {
    return this.serving.listTeamLimits(...args);
  }

  addToken(...args: Parameters<Store['addToken']>): ReturnType<Store['addToken']> {
    return this.access.addToken(...args);
  }

  findTokenByDigest(
    ...args: Parameters<Store['findTokenByDigest']>
  ): ReturnType<Store['findTokenByDigest']> {
    return this.access.findTokenByDigest(...args);
  }

  getToken(...args: Parameters<Store['getToken']>): ReturnType<Store['getToken']> {
    return this.access.getToken(...args);
  }

  listTokens(...args: Parameters<Store['listTokens']>): ReturnType<Store['listTokens']> {
    return this.access.listTokens(...args);
  }

  revokeToken(...args: Parameters<Store['revokeToken']>): ReturnType<Store['revokeToken']> {
    return this.access.revokeToken(...args);
  }

  appendAudit(...args: Parameters<Store['appendAudit']>): ReturnType<Store['appendAudit']> {
    return this.access.appendAudit(...args);
  }

  listAudit(...args: Parameters<Store['listAudit']>): ReturnType<Store['listAudit']> {
    return this.access.listAudit(...args);
  }

  getEndpointTraffic(
    ...args: Parameters<Store['getEndpointTraffic']>
  ): ReturnType<Store['getEndpointTraffic']> {
    return this.traffic.getEndpointTraffic(...args);
  }

  listEndpointTraffic(
    ...args: Parameters<Store['listEndpointTraffic']>
  ): ReturnType<Store['listEndpointTraffic']> {
    return this.traffic.listEndpointTraffic(...args);
  }

  updateEndpointTraffic(
    ...args: Parameters<Store['updateEndpointTraffic']>
  ): ReturnType<Store['updateEndpointTraffic']> {
    return this.traffic.updateEndpointTraffic(...args);
  }

  appendTrafficEvent(
    ...args: Parameters<Store['appendTrafficEvent']>
  ): ReturnType<Store['appendTrafficEvent']> {
    return this.traffic.appendTrafficEvent(...args);
  }

  listTrafficEvents(
    ...args: Parameters<Store['listTrafficEvents']>
  ): ReturnType<Store['listTrafficEvents']> {
    return this.traffic.listTrafficEvents(...args);
  }

  getRollout(...args: Parameters<Store['getRollout']>): ReturnType<Store['getRollout']> {
    return this.traffic.getRollout(...args);
  }

  getActiveRollout(
    ...args: Parameters<Store['getActiveRollout']>
  ): ReturnType<Store['getActiveRollout']> {
    return this.traffic.getActiveRollout(...args);
  }

  listRollouts(...args: Parameters<Store['listRollouts']>): ReturnType<Store['listRollouts']> {
    return this.traffic.listRollouts(...args);
  }

  getExperiment(...args: Parameters<Store['getExperiment']>): ReturnType<Store['getExperiment']> {
    return this.traffic.getExperiment(...args);
  }

  listExperiments(
    ...args: Parameters<Store['listExperiments']>
  ): ReturnType<Store['listExperiments']> {
    return this.traffic.listExperiments(...args);
  }

  addOutcomes(...args: Parameters<Store['addOutcomes']>): ReturnType<Store['addOutcomes']> {
    return this.trafficData.addOutcomes(...args);
  }

  listOutcomes(...args: Parameters<Store['listOutcomes']>): ReturnType<Store['listOutcomes']> {
    return this.trafficData.listOutcomes(...args);
  }

  mergeObservations(
    ...args: Parameters<Store['mergeObservations']>
  ): ReturnType<Store['mergeObservations']> {
    return this.trafficData.mergeObservations(...args);
  }

  listObservations(
    ...args: Parameters<Store['listObservations']>
  ): ReturnType<Store['listObservations']> {
    return this.trafficData.listObservations(...args);
  }

  pruneObservations(
    ...args: Parameters<Store['pruneObservations']>
  ): ReturnType<Store['pruneObservations']> {
    return this.trafficData.pruneObservations(...args);
  }

  setGoldenSet(...args: Parameters<Store['setGoldenSet']>): ReturnType<Store['setGoldenSet']> {
    return this.trafficData.setGoldenSet(...args);
  }

  getGoldenSet(...args: Parameters<Store['getGoldenSet']>): ReturnType<Store['getGoldenSet']> {
    return this.trafficData.getGoldenSet(...args);
  }

  getEndpointScale(
    ...args: Parameters<Store['getEndpointScale']>
  ): ReturnType<Store['getEndpointScale']> {
    return this.scaling.getEndpointScale(...args);
  }

  listEndpointScales(
    ...args: Parameters<Store['listEndpointScales']>
  ): ReturnType<Store['listEndpointScales']> {
    return this.scaling.listEndpointScales(...args);
  }

  setEndpointScale(
    ...args: Parameters<Store['setEndpointScale']>
  ): ReturnType<Store['setEndpointScale']> {
    return this.scaling.setEndpointScale(...args);
  }

  listScaleEvents(
    ...args: Parameters<Store['listScaleEvents']>
  ): ReturnType<Store['listScaleEvents']> {
    return this.scaling.listScaleEvents(...args);
  }

  mergeDemand(...args: Parameters<Store['mergeDemand']>): ReturnType<Store['mergeDemand']> {
    return this.scaling.mergeDemand(...args);
  }

  listDemand(...args: Parameters<Store['listDemand']>): ReturnType<Store['listDemand']> {
    return this.scaling.listDemand(...args);
  }

  pruneDemand(...args: Parameters<Store['pruneDemand']>): ReturnType<Store['pruneDemand']> {
    return this.scaling.pruneDemand(...args);
  }

  putPool(...args: Parameters<Store['putPool']>): ReturnType<Store['putPool']> {
    return this.scaling.putPool(...args);
  }

  getPool(...args: Parameters<Store['getPool']>): ReturnType<Store['getPool']> {
    return this.scaling.getPool(...args);
  }

  listPools(...args: Parameters<Store['listPools']>): ReturnType<Store['listPools']> {
    return this.scaling.listPools(...args);
  }

  deletePool(...args: Parameters<Store['deletePool']>): ReturnType<Store['deletePool']> {
    return this.scaling.deletePool(...args);
  }

  setVersionProfile(
    ...args: Parameters<Store['setVersionProfile']>
  ): ReturnType<Store['setVersionProfile']> {
    return this.observability.setVersionProfile(...args);
  }

  getVersionProfile(
    ...args: Parameters<Store['getVersionProfile']>
  ): ReturnType<Store['getVersionProfile']> {
    return this.observability.getVersionProfile(...args);
  }

  mergeDriftWindows(
    ...args: Parameters<Store['mergeDriftWindows']>
  ): ReturnType<Store['mergeDriftWindows']> {
    return this.observability.mergeDriftWindows(...args);
  }

  listDriftWindows(
    ...args: Parameters<Store['listDriftWindows']>
  ): ReturnType<Store['listDriftWindows']> {
    return this.observability.listDriftWindows(...args);
  }

  pruneDriftWindows(
    ...args: Parameters<Store['pruneDriftWindows']>
  ): ReturnType<Store['pruneDriftWindows']> {
    return this.observability.pruneDriftWindows(...args);
  }

  addPredictions(
    ...args: Parameters<Store['addPredictions']>
  ): ReturnType<Store['addPredictions']> {
    return this.observability.addPredictions(...args);
  }

  joinOutcomes(...args: Parameters<Store['joinOutcomes']>): ReturnType<Store['joinOutcomes']> {
    return this.observability.joinOutcomes(...args);
  }

  listJoinedPredictions(
    ...args: Parameters<Store['listJoinedPredictions']>
  ): ReturnType<Store['listJoinedPredictions']> {
    return this.observability.listJoinedPredictions(...args);
  }

  prunePredictions(
    ...args: Parameters<Store['prunePredictions']>
  ): ReturnType<Store['prunePredictions']> {
    return this.observability.prunePredictions(...args);
  }

  mergeUsage(...args: Parameters<Store['mergeUsage']>): ReturnType<Store['mergeUsage']> {
    return this.observability.mergeUsage(...args);
  }

  listUsage(...args: Parameters<Store['listUsage']>): ReturnType<Store['listUsage']> {
    return this.observability.listUsage(...args);
  }

  mergeTokenUsage(
    ...args: Parameters<Store['mergeTokenUsage']>
  ): ReturnType<Store['mergeTokenUsage']> {
    return this.observability.mergeTokenUsage(...args);
  }

  listTokenUsage(
    ...args: Parameters<Store['listTokenUsage']>
  ): ReturnType<Store['listTokenUsage']> {
    return this.observability.listTokenUsage(...args);
  }

  pruneUsage(...args: Parameters<Store['pruneUsage']>): ReturnType<Store['pruneUsage']> {
    return this.observability.pruneUsage(...args);
  }

  mergeSliMinutes(
    ...args: Parameters<Store['mergeSliMinutes']>
  ): ReturnType<Store['mergeSliMinutes']> {
    return this.observability.mergeSliMinutes(...args);
  }

  listSliMinutes(
    ...args: Parameters<Store['listSliMinutes']>
  ): ReturnType<Store['listSliMinutes']> {
    return this.observability.listSliMinutes(...args);
  }

  pruneSliMinutes(
    ...args: Parameters<Store['pruneSliMinutes']>
  ): ReturnType<Store['pruneSliMinutes']> {
    return this.observability.pruneSliMinutes(...args);
  }

  listSloAlerts(...args: Parameters<Store['listSloAlerts']>): ReturnType<Store['listSloAlerts']> {
    return this.observability.listSloAlerts(...args);
  }

  applySloAlerts(
    ...args: Parameters<Store['applySloAlerts']>
  ): ReturnType<Store['applySloAlerts']> {
    return this.observability.applySloAlerts(...args);
  }

  listSloAlertEvents(
    ...args: Parameters<Store['listSloAlertEvents']>
  ): ReturnType<Store['listSloAlertEvents']> {
    return this.observability.listSloAlertEvents(...args);
  }
}

/**
 * Applies pending migrations in one transaction under the write lock (two control planes
 * starting together migrate once); refuses a database whose schema is newer than this code.
 */
async function migrate(
  db: PgDatabase,
  migrations: readonly Migration[],
  clock: Clock,
): Promise<void> {
  await db.write(async (client) => {
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
    const row = await client.query<{ v: number | null }>(
      'SELECT MAX(version) AS v FROM schema_migrations',
    );
    const current = row.rows[0]?.v ?? 0;
    const latest = migrations.at(-1)?.version ?? 0;
    if (current > latest) throw kilnError('KILN_STORE_SCHEMA_NEWER', { current, latest });
    for (const m of migrations) {
      if (m.version <= current) continue;
      await client.query(m.sql);
      await client.query(
        'INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)',
        [m.version, m.name, isoAt(clock)],
      );
    }
  });
}
