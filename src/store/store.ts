// The control plane's state, behind one interface. SQLite (embedded, default) implements it
// today; PostgreSQL will for the Kubernetes backend. Callers see only this file, and every
// method is async so a networked implementation fits without touching them.
//
// Conflicts the caller can cause (a taken name, an alias on a deleted version) are thrown as
// KilnError with a registry code; "not found" is a null return.

import type { TokenUsageRow, UsageQuery, UsageRow } from './cost-records.ts';
import type {
  JoinedPrediction,
  NewPrediction,
  OutcomeItem,
  OutcomeJoinStatus,
} from './quality-records.ts';
import type {
  ApiKeyRecord,
  EndpointRecord,
  NewEndpoint,
  NewTeamLimit,
  TeamLimitRecord,
} from './serving-records.ts';
import type { AuditRecord, NewAuditRecord, NewToken, TokenRecord } from './access-records.ts';
import type {
  DemandRow,
  EndpointScaleRecord,
  NewPool,
  PoolRecord,
  ScaleChange,
  ScaleEvent,
} from './scaling-records.ts';
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
} from './traffic-records.ts';
import type {
  AliasEntry,
  Model,
  ModelVersion,
  Page,
  SigningPolicy,
  TrustedKey,
} from '../registry/types.ts';
import type {
  NewSloAlertEvent,
  SliMinuteRow,
  SloAlertEvent,
  SloAlertRecord,
  SloAlertUpsert,
} from './slo-records.ts';
import type { DriftWindowQuery, DriftWindowRecord, NewDriftWindow } from './drift-records.ts';
import type { DataProfile } from '../observability/profile/data-profile.ts';
import type { VersionProfile } from './profile-records.ts';

export interface NewModel {
  readonly name: string;
  readonly team: string;
  readonly description: string;
}

/** A version as the registry hands it to the store; the store adds number, times, aliases. */
export type NewVersion = Omit<
  ModelVersion,
  'model' | 'version' | 'aliases' | 'createdAt' | 'deletedAt'
>;

/**
 * `check` runs in an endpoint write's transaction, with the write lock held, on the endpoint as
 * it is then (null: none yet); what it throws aborts the write. The API re-checks a deployer's
 * team there, so an endpoint created or moved to another team since its first check is safe.
 */
export interface EndpointWriteOptions {
  readonly check?: (existing: EndpointRecord | null) => void;
}

export interface PageRequest {
  /** 1..500 */
  readonly limit: number;
  readonly pageToken?: string | undefined;
}

export interface LineageQuery {
  readonly run?: string | undefined;
  readonly datasetUri?: string | undefined;
  readonly datasetVersion?: string | undefined;
  readonly experiment?: string | undefined;
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres';
  close(): Promise<void>;

  createModel(model: NewModel): Promise<Model>;
  getModel(name: string): Promise<Model | null>;
  listModels(request: PageRequest & { readonly team?: string | undefined }): Promise<Page<Model>>;

  /**
   * Assigns the model's next version number atomically, across processes. With
   * `createModel`, a model that does not exist yet is created in the same transaction. With
   * `createModel`, a model created meanwhile by another caller under another team is
   * refused (KILN_MODEL_EXISTS): the caller checked its policy against the team it asked.
   * `check` runs inside the transaction, with the write lock held and before anything is
   * written; what it throws aborts the insert (the registry re-checks the version's blobs
   * there, so a gc in another process cannot delete one between its check and the insert).
   */
  createVersion(
    model: string,
    version: NewVersion,
    /**
     * `check` runs under the write lock before the insert and may refuse it by throwing. An
     * asynchronous one (an object store's HEADs) is awaited inside the transaction on
     * PostgreSQL; SQLite's transaction is synchronous, so it runs just before it there.
     */
    options?: { readonly createModel?: NewModel; readonly check?: () => void | Promise<void> },
  ): Promise<ModelVersion>;
  getVersion(
    model: string,
    version: number,
    options?: { readonly includeDeleted?: boolean },
  ): Promise<ModelVersion | null>;
  listVersions(
    model: string,
    request: PageRequest & { readonly includeDeleted?: boolean },
  ): Promise<Page<ModelVersion>>;
  /** Soft delete; refused with KILN_VERSION_IN_USE while anything points at the version. */
  deleteVersion(model: string, version: number): Promise<ModelVersion>;

  setAlias(
    model: string,
    alias: string,
    version: number,
  ): Promise<{ previousVersion: number | null }>;
  deleteAlias(model: string, alias: string): Promise<AliasEntry | null>;
  listAliases(model: string): Promise<readonly AliasEntry[]>;
  resolveAlias(model: string, alias: string): Promise<number | null>;

  findByLineage(query: LineageQuery, request: PageRequest): Promise<Page<ModelVersion>>;

  /** Digests of every blob that a live (not deleted) version references. */
  liveBlobDigests(): Promise<ReadonlySet<string>>;
  /**
   * Runs `work` with the digests live versions reference, holding the write lock across
   * processes: no version can be recorded until it returns. gc deletes blobs inside it, so a
   * blob it deletes is one no version names, now or later (createVersion's `check` finds it
   * gone). An asynchronous `work` (an object store's deletes) is awaited under the lock on
   * PostgreSQL; on SQLite, whose transaction is synchronous, its asynchronous remainder runs
   * after the lock is released — safe there because one control plane serves a home and the
   * Registry's in-process blobUse lock keeps its registrations out meanwhile.
   */
  withLiveBlobDigests<T>(work: (live: ReadonlySet<string>) => T | Promise<T>): Promise<T>;

  addTrustedKey(key: Omit<TrustedKey, 'createdAt'>): Promise<TrustedKey>;
  getTrustedKey(keyId: string): Promise<TrustedKey | null>;
  listTrustedKeys(): Promise<readonly TrustedKey[]>;
  removeTrustedKey(keyId: string): Promise<TrustedKey | null>;

  getSigningPolicy(): Promise<SigningPolicy>;
  /** team null = the global setting. */
  setSigningPolicy(team: string | null, requireSignature: boolean): Promise<SigningPolicy>;

  /**
   * Creates or replaces an endpoint (desired state); `created` tells which. Moving an
   * existing endpoint to another model or version is refused while a rollout is active on it
   * (KILN_ROLLOUT_IN_PROGRESS) or an experiment runs (KILN_EXPERIMENT_IN_PROGRESS), checked
   * inside the write's transaction.
   */
  putEndpoint(
    endpoint: NewEndpoint,
    options?: EndpointWriteOptions,
  ): Promise<{ endpoint: EndpointRecord; created: boolean }>;
  getEndpoint(name: string): Promise<EndpointRecord | null>;
  listEndpoints(): Promise<readonly EndpointRecord[]>;
  deleteEndpoint(name: string, options?: EndpointWriteOptions): Promise<EndpointRecord | null>;

  addApiKey(key: Omit<ApiKeyRecord, 'createdAt'>): Promise<ApiKeyRecord>;
  /** Live (not revoked) keys. */
  listApiKeys(): Promise<readonly ApiKeyRecord[]>;
  revokeApiKey(id: string): Promise<ApiKeyRecord | null>;

  /** Creates or replaces a team's rate limit. */
  setTeamLimit(limit: NewTeamLimit): Promise<TeamLimitRecord>;
  /** Removes it (the team is unlimited again); null when it had none. */
  deleteTeamLimit(team: string): Promise<TeamLimitRecord | null>;
  listTeamLimits(): Promise<readonly TeamLimitRecord[]>;

  /** Control-plane bearer tokens, kept as digests; token ids are unique, names need not be. */
  addToken(token: NewToken): Promise<TokenRecord>;
  /** The token with this digest, revoked and expired ones included (the caller decides). */
  findTokenByDigest(sha256: string): Promise<TokenRecord | null>;
  getToken(id: string): Promise<TokenRecord | null>;
  listTokens(options?: { readonly includeRevoked?: boolean }): Promise<readonly TokenRecord[]>;
  /** Marks it revoked (from then on refused); null when there is no live token with this id. */
  revokeToken(id: string): Promise<TokenRecord | null>;

  /** Appends one entry to the audit log (never updated or deleted through this interface). */
  appendAudit(entry: NewAuditRecord): Promise<AuditRecord>;
  /** Newest first; `since` (ISO 8601) keeps entries at or after it. */
  listAudit(
    request: PageRequest & { readonly since?: string | undefined },
  ): Promise<Page<AuditRecord>>;

  // --- traffic management (traffic-records.ts) ---------------------------------------

  /** null: the endpoint has never had a traffic change (its stable version takes all). */
  getEndpointTraffic(endpoint: string): Promise<EndpointTrafficRecord | null>;
  listEndpointTraffic(): Promise<readonly EndpointTrafficRecord[]>;
  /**
   * Applies `change` in one transaction: the traffic record (created if absent, revision + 1),
   * the endpoint's stable version, the rollout's or experiment's record, and the history event.
   * Refused: the endpoint does not exist (KILN_ENDPOINT_NOT_FOUND), `expectRevision` is not the
   * stored revision (KILN_TRAFFIC_CONFLICT), a rollout created while another is active on the
   * endpoint or an experiment created while a rollout is (KILN_ROLLOUT_IN_PROGRESS), an
   * experiment or a rollout created while an experiment runs (KILN_EXPERIMENT_IN_PROGRESS), a
   * rollout or experiment id that does not exist or is another endpoint's
   * (KILN_ROLLOUT_NOT_FOUND, KILN_EXPERIMENT_NOT_FOUND), an experiment stopped twice
   * (KILN_EXPERIMENT_STOPPED), a version the change starts naming (or the new stable one) that
   * does not exist or is deleted (KILN_VERSION_NOT_FOUND). A refused change writes nothing.
   * Deleting an endpoint deletes its traffic record, aborts its active rollout and stops its
   * running experiment (its history, rollouts and experiments stay). A version the traffic
   * runs (policy, shadow, staged, unexpired warm) or an active rollout or running experiment
   * names cannot be deleted (KILN_VERSION_IN_USE).
   */
  updateEndpointTraffic(endpoint: string, change: TrafficChange): Promise<EndpointTrafficRecord>;
  /** A history event with no traffic change (a rollout's step analysis, a failed blue-green). */
  appendTrafficEvent(event: NewTrafficEvent): Promise<TrafficEvent>;
  /** Newest first. */
  listTrafficEvents(
    endpoint: string,
    request: PageRequest & { readonly since?: string | undefined },
  ): Promise<Page<TrafficEvent>>;

  getRollout(id: string): Promise<RolloutRecord | null>;
  /** The endpoint's rollout in state starting, running or paused (at most one). */
  getActiveRollout(endpoint: string): Promise<RolloutRecord | null>;
  /** Newest first; `active` keeps starting/running/paused ones. */
  listRollouts(query: {
    readonly endpoint?: string;
    readonly active?: boolean;
  }): Promise<readonly RolloutRecord[]>;

  getExperiment(id: string): Promise<ExperimentRecord | null>;
  /** Newest first. */
  listExperiments(query: {
    readonly endpoint?: string;
    readonly state?: ExperimentRecord['state'];
  }): Promise<readonly ExperimentRecord[]>;
  /**
   * Merges outcomes into the per (variant, metric) aggregates in one transaction. A metric
   * keeps the kind it was first reported with: another kind for it refuses the whole call
   * (KILN_VALIDATION_FAILED) and nothing is merged; so does a variant that is not one of the
   * experiment's (`model:version`), a rate value other than 0 or 1, or a non-finite value.
   * Unknown experiment: KILN_EXPERIMENT_NOT_FOUND. A stopped experiment still takes outcomes
   * (conversions arrive late); the caller decides whether to refuse them.
   */
  addOutcomes(experimentId: string, entries: readonly OutcomeEntry[]): Promise<void>;
  listOutcomes(experimentId: string): Promise<readonly OutcomeAggregate[]>;

  /**
   * Merges gateway observations into their rows (endpoint, bucketStart, kind, model, version,
   * slice) in one transaction: `merge(existing data or null, delta data)` gives the new data.
   * A bucketStart that is not an ISO time on an observationBucketMs boundary refuses the whole
   * call (KILN_VALIDATION_FAILED), as does anything `merge` throws: nothing is merged.
   */
  mergeObservations(
    deltas: readonly ObservationDelta[],
    merge: (existing: unknown, delta: unknown) => unknown,
  ): Promise<void>;
  listObservations(query: ObservationQuery): Promise<readonly ObservationRow[]>;
  /** Deletes rows whose bucketStart < before; returns how many. */
  pruneObservations(before: string): Promise<number>;

  /** Replaces a version's golden set; the version must exist (KILN_VERSION_NOT_FOUND). */
  setGoldenSet(golden: Omit<GoldenSet, 'createdAt'>): Promise<GoldenSet>;
  getGoldenSet(model: string, version: number): Promise<GoldenSet | null>;

  // --- autoscaling and pools (scaling-records.ts, issue 14) ---------------------------

  getEndpointScale(endpoint: string): Promise<EndpointScaleRecord | null>;
  listEndpointScales(): Promise<readonly EndpointScaleRecord[]>;
  /**
   * Writes an endpoint's current count (created if absent) and its event in one transaction.
   * Refused: the endpoint does not exist (KILN_ENDPOINT_NOT_FOUND), `expectReplicas` given
   * and not the stored count (KILN_SCALE_CONFLICT). Deleting an endpoint deletes its count
   * (its events stay).
   */
  setEndpointScale(change: ScaleChange): Promise<EndpointScaleRecord>;
  /** Newest first. */
  listScaleEvents(query: {
    readonly endpoint?: string;
    readonly since?: string;
    readonly limit?: number;
  }): Promise<readonly ScaleEvent[]>;
  /** Adds rows into the stored minute rows (same endpoint and minute: counts and sketches add). */
  mergeDemand(rows: readonly DemandRow[]): Promise<void>;
  /** Oldest first; minuteStart in [since, until). */
  listDemand(query: {
    readonly endpoint: string;
    readonly since: string;
    readonly until?: string;
  }): Promise<readonly DemandRow[]>;
  /** Deletes rows whose minuteStart < before; returns how many. */
  pruneDemand(before: string): Promise<number>;

  /** Creates or updates a pool (KILN_VALIDATION_FAILED for workers < 1 or budget <= 0). */
  putPool(pool: NewPool): Promise<PoolRecord>;
  getPool(name: string): Promise<PoolRecord | null>;
  listPools(): Promise<readonly PoolRecord[]>;
  /** Refused while an endpoint is deployed on it (KILN_POOL_IN_USE). */
  deletePool(name: string): Promise<PoolRecord | null>;

  // --- issue 15 B: reference profiles (profile-records.ts) ---------------------------------------------

  /** Replaces a version's reference profile; the version must exist (KILN_VERSION_NOT_FOUND). */
  setVersionProfile(model: string, version: number, profile: DataProfile): Promise<VersionProfile>;
  /** null when the version has none, or is deleted. */
  getVersionProfile(model: string, version: number): Promise<VersionProfile | null>;

  // --- issue 15 C: drift windows (drift-records.ts) ---------------------------------------------
  /**
   * Merges each profile into its window (endpoint, version, window start, slice) in one
   * transaction; KILN_VALIDATION_FAILED for a window start off its length or sketches that do
   * not merge with the stored ones (the whole call is refused).
   */
  mergeDriftWindows(rows: readonly NewDriftWindow[]): Promise<void>;
  /** Oldest first; windowStart in [since, until). */
  listDriftWindows(query: DriftWindowQuery): Promise<readonly DriftWindowRecord[]>;
  /** Deletes windows that started before `before`; returns how many. */
  pruneDriftWindows(before: string): Promise<number>;

  // --- issue 15 D: predictions and outcomes (quality-records.ts) ---------------------------------------------
  /** Stores the gateways' predictions; a request id already stored is kept. Returns how many added. */
  addPredictions(rows: readonly NewPrediction[]): Promise<number>;
  /**
   * Joins outcomes to an endpoint's predictions (one transaction): one status per item, in
   * order; predictions made before `windowStartMs` are `expired`.
   */
  joinOutcomes(
    endpoint: string,
    items: readonly OutcomeItem[],
    windowStartMs: number,
    nowMs: number,
  ): Promise<readonly OutcomeJoinStatus[]>;
  /** Joined predictions made in [sinceMs, untilMs), oldest first; `slice`: that slice only. */
  listJoinedPredictions(query: {
    readonly endpoint: string;
    readonly sinceMs: number;
    readonly untilMs?: number;
    readonly slice?: string;
  }): Promise<readonly JoinedPrediction[]>;
  /** Deletes unjoined predictions made before one time and joined ones before another. */
  prunePredictions(
    endpoint: string,
    unjoinedBeforeMs: number,
    joinedBeforeMs: number,
  ): Promise<number>;

  // --- issue 15 E: cost and usage (cost-records.ts) ---------------------------------------------
  /** Adds replica time into the hour rows (same endpoint, team, hour and shape: seconds add). */
  mergeUsage(rows: readonly UsageRow[]): Promise<void>;
  /** Oldest hour first; hourStart in [since, until). */
  listUsage(query: UsageQuery): Promise<readonly UsageRow[]>;
  /** Adds LLM tokens into the hour rows (same endpoint, team and hour: counts add). */
  mergeTokenUsage(rows: readonly TokenUsageRow[]): Promise<void>;
  listTokenUsage(query: UsageQuery): Promise<readonly TokenUsageRow[]>;
  /** Deletes usage and token rows whose hour starts before `before`; returns how many. */
  pruneUsage(before: string): Promise<number>;

  // --- issue 15 F: SLO alerts (slo-records.ts) ---------------------------------------------
  /** Adds SLI counts into the per-minute rows (sums; partial minutes merge safely). */
  mergeSliMinutes(rows: readonly SliMinuteRow[]): Promise<void>;
  /** An endpoint's SLI rows with minuteStart in [since, until), oldest first. */
  listSliMinutes(query: {
    readonly endpoint: string;
    readonly since: string;
    readonly until?: string;
  }): Promise<readonly SliMinuteRow[]>;
  /** Deletes SLI rows before `before`; returns how many. */
  pruneSliMinutes(before: string): Promise<number>;
  /** Current alert states, of one endpoint or all. */
  listSloAlerts(endpoint?: string): Promise<readonly SloAlertRecord[]>;
  /** One evaluation's state changes and transition events, in one transaction. */
  applySloAlerts(
    upserts: readonly SloAlertUpsert[],
    events: readonly NewSloAlertEvent[],
  ): Promise<void>;
  /** An endpoint's alert transitions, newest first (default 100). */
  listSloAlertEvents(query: {
    readonly endpoint: string;
    readonly limit?: number;
  }): Promise<readonly SloAlertEvent[]>;
}
