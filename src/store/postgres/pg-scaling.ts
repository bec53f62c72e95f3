// PostgreSQL store, scaling tables: the PostgreSQL counterpart of the SQLite store's methods
// named below (same semantics, same errors; the contract suite runs on both).

import type { Clock } from '../../core/clock.ts';
import type { Store } from '../store.ts';
import type { PgDatabase } from './pg-database.ts';
import { notImplemented } from './not-implemented.ts';

export type ScalingTablesMethods = Pick<
  Store,
  | 'getEndpointScale'
  | 'listEndpointScales'
  | 'setEndpointScale'
  | 'listScaleEvents'
  | 'mergeDemand'
  | 'listDemand'
  | 'pruneDemand'
  | 'putPool'
  | 'getPool'
  | 'listPools'
  | 'deletePool'
>;

export class PgScalingTables implements ScalingTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  readonly getEndpointScale: Store['getEndpointScale'] = notImplemented('getEndpointScale');
  readonly listEndpointScales: Store['listEndpointScales'] = notImplemented('listEndpointScales');
  readonly setEndpointScale: Store['setEndpointScale'] = notImplemented('setEndpointScale');
  readonly listScaleEvents: Store['listScaleEvents'] = notImplemented('listScaleEvents');
  readonly mergeDemand: Store['mergeDemand'] = notImplemented('mergeDemand');
  readonly listDemand: Store['listDemand'] = notImplemented('listDemand');
  readonly pruneDemand: Store['pruneDemand'] = notImplemented('pruneDemand');
  readonly putPool: Store['putPool'] = notImplemented('putPool');
  readonly getPool: Store['getPool'] = notImplemented('getPool');
  readonly listPools: Store['listPools'] = notImplemented('listPools');
  readonly deletePool: Store['deletePool'] = notImplemented('deletePool');
}
