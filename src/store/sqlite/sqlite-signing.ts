// SQLite tables for manifest signing: trusted public keys and the signing policy (global
// scope '*' and per-team rows). SqliteStore delegates here.

import type Database from 'better-sqlite3';
import { kilnError } from '../../core/errors.ts';
import { isoAt, type Clock } from '../../core/clock.ts';
import type { SigningPolicy, TrustedKey } from '../../registry/types.ts';

export interface TrustedKeyRow {
  key_id: string;
  name: string;
  team: string | null;
  public_key: string;
  created_at: string;
}

export function toTrustedKey(row: TrustedKeyRow): TrustedKey {
  return {
    keyId: row.key_id,
    name: row.name,
    team: row.team,
    publicKey: row.public_key,
    createdAt: row.created_at,
  };
}

export interface SigningPolicyRow {
  scope: string;
  require_signature: number;
}

/** Rows of signing_policy (scope '*' = the global setting) as one policy. */
export function toSigningPolicy(rows: readonly SigningPolicyRow[]): SigningPolicy {
  const global = rows.find((r) => r.scope === '*');
  return {
    requireSignature: global?.require_signature === 1,
    teams: Object.fromEntries(
      rows
        .filter((r) => r.scope !== '*')
        .map((r) => [r.scope, { requireSignature: r.require_signature === 1 }]),
    ),
  };
}

export class SqliteSigningTables {
  constructor(
    private readonly db: Database.Database,
    private readonly clock: Clock,
  ) {}

  addTrustedKey(key: Omit<TrustedKey, 'createdAt'>): TrustedKey {
    try {
      this.db
        .prepare(
          'INSERT INTO trusted_keys (key_id, name, team, public_key, created_at) VALUES (?, ?, ?, ?, ?)',
        )
        .run(key.keyId, key.name, key.team, key.publicKey, isoAt(this.clock));
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
        throw kilnError('KILN_KEY_EXISTS', { key: key.keyId });
      }
      throw error;
    }
    const row = this.db
      .prepare('SELECT * FROM trusted_keys WHERE key_id = ?')
      .get(key.keyId) as TrustedKeyRow;
    return toTrustedKey(row);
  }

  getTrustedKey(keyId: string): TrustedKey | null {
    const row = this.db.prepare('SELECT * FROM trusted_keys WHERE key_id = ?').get(keyId) as
      TrustedKeyRow | undefined;
    return row === undefined ? null : toTrustedKey(row);
  }

  listTrustedKeys(): TrustedKey[] {
    return (
      this.db.prepare('SELECT * FROM trusted_keys ORDER BY name, key_id').all() as TrustedKeyRow[]
    ).map(toTrustedKey);
  }

  removeTrustedKey(keyId: string): TrustedKey | null {
    const row = this.db
      .prepare('DELETE FROM trusted_keys WHERE key_id = ? RETURNING *')
      .get(keyId) as TrustedKeyRow | undefined;
    return row === undefined ? null : toTrustedKey(row);
  }

  readPolicy(): SigningPolicy {
    const rows = this.db
      .prepare('SELECT scope, require_signature FROM signing_policy ORDER BY scope')
      .all() as SigningPolicyRow[];
    return toSigningPolicy(rows);
  }

  /** team null = the global setting. */
  setPolicy(team: string | null, requireSignature: boolean): SigningPolicy {
    this.db
      .prepare(
        `INSERT INTO signing_policy (scope, require_signature) VALUES (?, ?)
         ON CONFLICT (scope) DO UPDATE SET require_signature = excluded.require_signature`,
      )
      .run(team ?? '*', requireSignature ? 1 : 0);
    return this.readPolicy();
  }
}
