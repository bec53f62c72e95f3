// PostgreSQL store, access tables: the PostgreSQL counterpart of the SQLite store's methods
// named below (same semantics, same errors; the contract suite runs on both).

import type { Clock } from '../../core/clock.ts';
import type { Store } from '../store.ts';
import type { PgDatabase } from './pg-database.ts';
import { notImplemented } from './not-implemented.ts';

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

export class PgAccessTables implements AccessTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  readonly addToken: Store['addToken'] = notImplemented('addToken');
  readonly findTokenByDigest: Store['findTokenByDigest'] = notImplemented('findTokenByDigest');
  readonly getToken: Store['getToken'] = notImplemented('getToken');
  readonly listTokens: Store['listTokens'] = notImplemented('listTokens');
  readonly revokeToken: Store['revokeToken'] = notImplemented('revokeToken');
  readonly appendAudit: Store['appendAudit'] = notImplemented('appendAudit');
  readonly listAudit: Store['listAudit'] = notImplemented('listAudit');
}
