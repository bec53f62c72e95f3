// PostgreSQL store, access tables: control-plane bearer tokens and the audit log — the
// PostgreSQL counterpart of the SQLite store's methods named below (same semantics, same
// errors; the contract suite runs on both). Rows map to records with the SQLite module's
// mappers: the columns are the same.

import { isoAt, type Clock } from '../../core/clock.ts';
import type { Page } from '../../registry/types.ts';
import type { AuditRecord, NewAuditRecord, NewToken, TokenRecord } from '../access-records.ts';
import { cursorNumber, decodePageToken, pageOf } from '../page-token.ts';
import type { PageRequest, Store } from '../store.ts';
import { toAudit, toToken, type AuditRow, type TokenRow } from '../sqlite/sqlite-access.ts';
import type { PgDatabase } from './pg-database.ts';

export type AccessTablesMethods = Pick<
  Store,
  | 'addToken'
  | 'findTokenByDigest'
  | 'getToken'
  | 'listTokens'
  | 'revokeToken'
  | 'appendAudit'
  | 'listAudit'
>;

function oneToken(rows: readonly TokenRow[]): TokenRecord | null {
  const row = rows[0];
  return row === undefined ? null : toToken(row);
}

export class PgAccessTables implements AccessTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  async addToken(token: NewToken): Promise<TokenRecord> {
    const result = await this.db.write((c) =>
      c.query<TokenRow>(
        `INSERT INTO control_tokens (id, name, role, team, prefix, sha256, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
        [
          token.id,
          token.name,
          token.role,
          token.team,
          token.prefix,
          token.sha256,
          isoAt(this.clock),
          token.expiresAt,
        ],
      ),
    );
    return toToken(result.rows[0] as TokenRow);
  }

  async findTokenByDigest(sha256: string): Promise<TokenRecord | null> {
    const result = await this.db.read((c) =>
      c.query<TokenRow>('SELECT * FROM control_tokens WHERE sha256 = $1', [sha256]),
    );
    return oneToken(result.rows);
  }

  async getToken(id: string): Promise<TokenRecord | null> {
    const result = await this.db.read((c) =>
      c.query<TokenRow>('SELECT * FROM control_tokens WHERE id = $1', [id]),
    );
    return oneToken(result.rows);
  }

  async listTokens(
    options: { readonly includeRevoked?: boolean } = {},
  ): Promise<readonly TokenRecord[]> {
    const result = await this.db.read((c) =>
      c.query<TokenRow>(
        `SELECT * FROM control_tokens WHERE ($1 OR revoked_at IS NULL)
         ORDER BY created_at COLLATE "C", id COLLATE "C"`,
        [options.includeRevoked === true],
      ),
    );
    return result.rows.map(toToken);
  }

  async revokeToken(id: string): Promise<TokenRecord | null> {
    const result = await this.db.write((c) =>
      c.query<TokenRow>(
        `UPDATE control_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL
         RETURNING *`,
        [isoAt(this.clock), id],
      ),
    );
    return oneToken(result.rows);
  }

  async appendAudit(entry: NewAuditRecord): Promise<AuditRecord> {
    const result = await this.db.write((c) =>
      c.query<AuditRow>(
        `INSERT INTO audit_log (at, token_id, token_name, role, method, route, target, status, code)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
        [
          entry.at,
          entry.tokenId,
          entry.tokenName,
          entry.role,
          entry.method,
          entry.route,
          entry.target,
          entry.status,
          entry.code,
        ],
      ),
    );
    return toAudit(result.rows[0] as AuditRow);
  }

  async listAudit(
    request: PageRequest & { readonly since?: string | undefined },
  ): Promise<Page<AuditRecord>> {
    const before =
      request.pageToken === undefined
        ? Number.MAX_SAFE_INTEGER
        : cursorNumber(decodePageToken(request.pageToken), 'before');
    const result = await this.db.read((c) =>
      c.query<AuditRow>(
        `SELECT * FROM audit_log WHERE id < $1 AND ($2::text IS NULL OR at COLLATE "C" >= $2)
         ORDER BY id DESC LIMIT $3`,
        [before, request.since ?? null, request.limit + 1],
      ),
    );
    return pageOf(result.rows, request.limit, toAudit, (r) => ({ before: r.id }));
  }
}
