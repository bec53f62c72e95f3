// PostgreSQL store, signing tables: trusted public keys and the signing policy (global scope
// '*' and per-team rows) — the PostgreSQL counterpart of the SQLite store's methods named
// below (same semantics, same errors; the contract suite runs on both). Rows map to records
// with the SQLite module's mappers: the columns are the same.

import { isoAt, type Clock } from '../../core/clock.ts';
import { kilnError } from '../../core/errors.ts';
import type { SigningPolicy, TrustedKey } from '../../registry/types.ts';
import type { Store } from '../store.ts';
import {
  toSigningPolicy,
  toTrustedKey,
  type SigningPolicyRow,
  type TrustedKeyRow,
} from '../sqlite/sqlite-signing.ts';
import { isUniqueViolation, type PgDatabase, type PgQueryable } from './pg-database.ts';

export type SigningTablesMethods = Pick<
  Store,
  | 'addTrustedKey'
  | 'getTrustedKey'
  | 'listTrustedKeys'
  | 'removeTrustedKey'
  | 'getSigningPolicy'
  | 'setSigningPolicy'
>;

async function readPolicy(db: PgQueryable): Promise<SigningPolicy> {
  const rows = await db.query<SigningPolicyRow>(
    'SELECT scope, require_signature FROM signing_policy ORDER BY scope COLLATE "C"',
  );
  return toSigningPolicy(rows.rows);
}

export class PgSigningTables implements SigningTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  async addTrustedKey(key: Omit<TrustedKey, 'createdAt'>): Promise<TrustedKey> {
    try {
      const row = await this.db.write((c) =>
        c.query<TrustedKeyRow>(
          `INSERT INTO trusted_keys (key_id, name, team, public_key, created_at)
           VALUES ($1, $2, $3, $4, $5) RETURNING *`,
          [key.keyId, key.name, key.team, key.publicKey, isoAt(this.clock)],
        ),
      );
      return toTrustedKey(row.rows[0] as TrustedKeyRow);
    } catch (error) {
      if (isUniqueViolation(error)) throw kilnError('KILN_KEY_EXISTS', { key: key.keyId });
      throw error;
    }
  }

  async getTrustedKey(keyId: string): Promise<TrustedKey | null> {
    const row = await this.db.read((c) =>
      c.query<TrustedKeyRow>('SELECT * FROM trusted_keys WHERE key_id = $1', [keyId]),
    );
    const found = row.rows[0];
    return found === undefined ? null : toTrustedKey(found);
  }

  async listTrustedKeys(): Promise<readonly TrustedKey[]> {
    const rows = await this.db.read((c) =>
      c.query<TrustedKeyRow>(
        'SELECT * FROM trusted_keys ORDER BY name COLLATE "C", key_id COLLATE "C"',
      ),
    );
    return rows.rows.map(toTrustedKey);
  }

  async removeTrustedKey(keyId: string): Promise<TrustedKey | null> {
    const row = await this.db.write((c) =>
      c.query<TrustedKeyRow>('DELETE FROM trusted_keys WHERE key_id = $1 RETURNING *', [keyId]),
    );
    const found = row.rows[0];
    return found === undefined ? null : toTrustedKey(found);
  }

  getSigningPolicy(): Promise<SigningPolicy> {
    return this.db.read(readPolicy);
  }

  /** team null = the global setting. */
  setSigningPolicy(team: string | null, requireSignature: boolean): Promise<SigningPolicy> {
    return this.db.write(async (c) => {
      await c.query(
        `INSERT INTO signing_policy (scope, require_signature) VALUES ($1, $2)
         ON CONFLICT (scope) DO UPDATE SET require_signature = excluded.require_signature`,
        [team ?? '*', requireSignature ? 1 : 0],
      );
      return readPolicy(c);
    });
  }
}
