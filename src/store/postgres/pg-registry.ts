// PostgreSQL store, registry tables: the PostgreSQL counterpart of the SQLite store's methods
// named below (same semantics, same errors; the contract suite runs on both).

import type { Clock } from '../../core/clock.ts';
import type { Store } from '../store.ts';
import type { PgDatabase } from './pg-database.ts';
import { notImplemented } from './not-implemented.ts';

export type RegistryTablesMethods = Pick<
  Store,
  | 'createModel'
  | 'getModel'
  | 'listModels'
  | 'createVersion'
  | 'getVersion'
  | 'listVersions'
  | 'deleteVersion'
  | 'setAlias'
  | 'deleteAlias'
  | 'listAliases'
  | 'resolveAlias'
  | 'findByLineage'
  | 'liveBlobDigests'
  | 'withLiveBlobDigests'
>;

export class PgRegistryTables implements RegistryTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  readonly createModel: Store['createModel'] = notImplemented('createModel');
  readonly getModel: Store['getModel'] = notImplemented('getModel');
  readonly listModels: Store['listModels'] = notImplemented('listModels');
  readonly createVersion: Store['createVersion'] = notImplemented('createVersion');
  readonly getVersion: Store['getVersion'] = notImplemented('getVersion');
  readonly listVersions: Store['listVersions'] = notImplemented('listVersions');
  readonly deleteVersion: Store['deleteVersion'] = notImplemented('deleteVersion');
  readonly setAlias: Store['setAlias'] = notImplemented('setAlias');
  readonly deleteAlias: Store['deleteAlias'] = notImplemented('deleteAlias');
  readonly listAliases: Store['listAliases'] = notImplemented('listAliases');
  readonly resolveAlias: Store['resolveAlias'] = notImplemented('resolveAlias');
  readonly findByLineage: Store['findByLineage'] = notImplemented('findByLineage');
  readonly liveBlobDigests: Store['liveBlobDigests'] = notImplemented('liveBlobDigests');
  readonly withLiveBlobDigests: Store['withLiveBlobDigests'] =
    notImplemented('withLiveBlobDigests');
}
