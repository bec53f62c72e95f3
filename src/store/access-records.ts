// Persisted access control of the control plane: bearer tokens (kept as sha256 digests
// only) and the audit log of mutating calls.

/**
 * What a token may do. reader: every read. deployer: reads, uploads blobs, and registers,
 * deploys and deletes within its team. admin: everything (keys, policies, tokens, audit).
 * gateway: reads the routing snapshot only (what a gateway process polls).
 */
export type TokenRole = 'admin' | 'deployer' | 'reader' | 'gateway';

export const tokenRoles: readonly TokenRole[] = ['admin', 'deployer', 'reader', 'gateway'];

export interface TokenRecord {
  readonly id: string;
  readonly name: string;
  readonly role: TokenRole;
  /** The team a deployer acts within; null for the other roles. */
  readonly team: string | null;
  /** First characters of the token, to recognise it in lists. */
  readonly prefix: string;
  /** sha256 of the whole token, hex; the token itself is never stored. */
  readonly sha256: string;
  readonly createdAt: string;
  /** null = never expires. */
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
}

export type NewToken = Omit<TokenRecord, 'createdAt' | 'revokedAt'>;

export interface AuditRecord {
  /** Increasing with time; the log is append-only. */
  readonly id: number;
  readonly at: string;
  /** Who: the token used (null when none was valid, or in --dev mode). */
  readonly tokenId: string | null;
  readonly tokenName: string | null;
  readonly role: TokenRole | null;
  /** What: the HTTP method, the route pattern and the object it named. */
  readonly method: string;
  readonly route: string;
  readonly target: string;
  /** Outcome: the HTTP status and, for a failure, the error code. */
  readonly status: number;
  readonly code: string | null;
}

export type NewAuditRecord = Omit<AuditRecord, 'id'>;
