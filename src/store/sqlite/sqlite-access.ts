// SQLite tables for control-plane access (migration 4): bearer tokens and the audit log.
// SqliteStore delegates here.

import type Database from 'better-sqlite3';
import { isoAt, type Clock } from '../../core/clock.ts';
import type { Page } from '../../registry/types.ts';
import type {
  AuditRecord,
  NewAuditRecord,
  NewToken,
  TokenRecord,
  TokenRole,
} from '../access-records.ts';
import { cursorNumber, decodePageToken, pageOf } from '../page-token.ts';
import type { PageRequest } from '../store.ts';

export interface TokenRow {
  id: string;
  name: string;
  role: string;
  team: string | null;
  prefix: string;
  sha256: string;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

export interface AuditRow {
  id: number;
  at: string;
  token_id: string | null;
  token_name: string | null;
  role: string | null;
  method: string;
  route: string;
  target: string;
  status: number;
  code: string | null;
}

export function toToken(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    name: row.name,
    role: row.role as TokenRole,
    team: row.team,
    prefix: row.prefix,
    sha256: row.sha256,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

export function toAudit(row: AuditRow): AuditRecord {
  return {
    id: row.id,
    at: row.at,
    tokenId: row.token_id,
    tokenName: row.token_name,
    role: row.role as TokenRole | null,
    method: row.method,
    route: row.route,
    target: row.target,
    status: row.status,
    code: row.code,
  };
}

export class SqliteAccessTables {
  constructor(
    private readonly db: Database.Database,
    private readonly clock: Clock,
  ) {}

  addToken(token: NewToken): TokenRecord {
    const row = this.db
      .prepare(
        `INSERT INTO control_tokens (id, name, role, team, prefix, sha256, created_at, expires_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
      )
      .get(
        token.id,
        token.name,
        token.role,
        token.team,
        token.prefix,
        token.sha256,
        isoAt(this.clock),
        token.expiresAt,
      ) as TokenRow;
    return toToken(row);
  }

  findByDigest(sha256: string): TokenRecord | null {
    const row = this.db.prepare('SELECT * FROM control_tokens WHERE sha256 = ?').get(sha256) as
      TokenRow | undefined;
    return row === undefined ? null : toToken(row);
  }

  get(id: string): TokenRecord | null {
    const row = this.db.prepare('SELECT * FROM control_tokens WHERE id = ?').get(id) as
      TokenRow | undefined;
    return row === undefined ? null : toToken(row);
  }

  list(includeRevoked: boolean): TokenRecord[] {
    return (
      this.db
        .prepare(
          `SELECT * FROM control_tokens WHERE (? OR revoked_at IS NULL)
           ORDER BY created_at, id`,
        )
        .all(includeRevoked ? 1 : 0) as TokenRow[]
    ).map(toToken);
  }

  revoke(id: string): TokenRecord | null {
    const row = this.db
      .prepare(
        'UPDATE control_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL RETURNING *',
      )
      .get(isoAt(this.clock), id) as TokenRow | undefined;
    return row === undefined ? null : toToken(row);
  }

  appendAudit(entry: NewAuditRecord): AuditRecord {
    const row = this.db
      .prepare(
        `INSERT INTO audit_log (at, token_id, token_name, role, method, route, target, status, code)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
      )
      .get(
        entry.at,
        entry.tokenId,
        entry.tokenName,
        entry.role,
        entry.method,
        entry.route,
        entry.target,
        entry.status,
        entry.code,
      ) as AuditRow;
    return toAudit(row);
  }

  listAudit(request: PageRequest & { readonly since?: string | undefined }): Page<AuditRecord> {
    const before =
      request.pageToken === undefined
        ? Number.MAX_SAFE_INTEGER
        : cursorNumber(decodePageToken(request.pageToken), 'before');
    const rows = this.db
      .prepare(
        `SELECT * FROM audit_log WHERE id < ? AND (? IS NULL OR at >= ?)
         ORDER BY id DESC LIMIT ?`,
      )
      .all(before, request.since ?? null, request.since ?? null, request.limit + 1) as AuditRow[];
    return pageOf(rows, request.limit, toAudit, (r) => ({ before: r.id }));
  }
}
