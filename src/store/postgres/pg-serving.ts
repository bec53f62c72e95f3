// PostgreSQL store, serving tables: the PostgreSQL counterpart of the SQLite store's methods
// named below (same semantics, same errors; the contract suite runs on both).

import type { Clock } from '../../core/clock.ts';
import type { Store } from '../store.ts';
import type { PgDatabase } from './pg-database.ts';
import { notImplemented } from './not-implemented.ts';

export type ServingTablesMethods = Pick<
  Store,
  | 'putEndpoint'
  | 'getEndpoint'
  | 'listEndpoints'
  | 'deleteEndpoint'
  | 'addApiKey'
  | 'listApiKeys'
  | 'revokeApiKey'
  | 'setTeamLimit'
  | 'deleteTeamLimit'
  | 'listTeamLimits'
>;

export class PgServingTables implements ServingTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  readonly putEndpoint: Store['putEndpoint'] = notImplemented('putEndpoint');
  readonly getEndpoint: Store['getEndpoint'] = notImplemented('getEndpoint');
  readonly listEndpoints: Store['listEndpoints'] = notImplemented('listEndpoints');
  readonly deleteEndpoint: Store['deleteEndpoint'] = notImplemented('deleteEndpoint');
  readonly addApiKey: Store['addApiKey'] = notImplemented('addApiKey');
  readonly listApiKeys: Store['listApiKeys'] = notImplemented('listApiKeys');
  readonly revokeApiKey: Store['revokeApiKey'] = notImplemented('revokeApiKey');
  readonly setTeamLimit: Store['setTeamLimit'] = notImplemented('setTeamLimit');
  readonly deleteTeamLimit: Store['deleteTeamLimit'] = notImplemented('deleteTeamLimit');
  readonly listTeamLimits: Store['listTeamLimits'] = notImplemented('listTeamLimits');
}
