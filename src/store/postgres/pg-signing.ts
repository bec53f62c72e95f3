// PostgreSQL store, signing tables: the PostgreSQL counterpart of the SQLite store's methods
// named below (same semantics, same errors; the contract suite runs on both).

import type { Clock } from '../../core/clock.ts';
import type { Store } from '../store.ts';
import type { PgDatabase } from './pg-database.ts';
import { notImplemented } from './not-implemented.ts';

export type SigningTablesMethods = Pick<
  Store,
  | 'addTrustedKey'
  | 'getTrustedKey'
  | 'listTrustedKeys'
  | 'removeTrustedKey'
  | 'getSigningPolicy'
  | 'setSigningPolicy'
>;

export class PgSigningTables implements SigningTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  readonly addTrustedKey: Store['addTrustedKey'] = notImplemented('addTrustedKey');
  readonly getTrustedKey: Store['getTrustedKey'] = notImplemented('getTrustedKey');
  readonly listTrustedKeys: Store['listTrustedKeys'] = notImplemented('listTrustedKeys');
  readonly removeTrustedKey: Store['removeTrustedKey'] = notImplemented('removeTrustedKey');
  readonly getSigningPolicy: Store['getSigningPolicy'] = notImplemented('getSigningPolicy');
  readonly setSigningPolicy: Store['setSigningPolicy'] = notImplemented('setSigningPolicy');
}
