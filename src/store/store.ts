// The control plane's state, behind one interface. SQLite (embedded, default) implements it
// today; PostgreSQL will for the Kubernetes backend. Callers see only this file, and every
// method is async so a networked implementation fits without touching them.
//
// Conflicts the caller can cause (a taken name, an alias on a deleted version) are thrown as
// KilnError with a registry code; "not found" is a null return.

import type {
  ApiKeyRecord,
  EndpointRecord,
  NewEndpoint,
  NewTeamLimit,
  TeamLimitRecord,
} from './serving-records.ts';
import type { AuditRecord, NewAuditRecord, NewToken, TokenRecord } from './access-records.ts';
import type {
  AliasEntry,
  Model,
  ModelVersion,
  Page,
  SigningPolicy,
  TrustedKey,
} from '../registry/types.ts';

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
    options?: { readonly createModel?: NewModel; readonly check?: () => void },
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
   * Runs `work` (synchronous) with the digests live versions reference, holding the write
   * lock across processes: no version can be recorded until it returns. gc deletes blobs
   * inside it, so a blob it deletes is one no version names, now or later (createVersion's
   * `check` finds it gone).
   */
  withLiveBlobDigests<T>(work: (live: ReadonlySet<string>) => T): Promise<T>;

  addTrustedKey(key: Omit<TrustedKey, 'createdAt'>): Promise<TrustedKey>;
  getTrustedKey(keyId: string): Promise<TrustedKey | null>;
  listTrustedKeys(): Promise<readonly TrustedKey[]>;
  removeTrustedKey(keyId: string): Promise<TrustedKey | null>;

  getSigningPolicy(): Promise<SigningPolicy>;
  /** team null = the global setting. */
  setSigningPolicy(team: string | null, requireSignature: boolean): Promise<SigningPolicy>;

  /** Creates or replaces an endpoint (desired state); `created` tells which. */
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
}
