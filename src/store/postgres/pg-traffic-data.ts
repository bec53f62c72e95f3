// PostgreSQL store, trafficData tables: the PostgreSQL counterpart of the SQLite store's methods
// named below (same semantics, same errors; the contract suite runs on both).

import type { Clock } from '../../core/clock.ts';
import type { Store } from '../store.ts';
import type { PgDatabase } from './pg-database.ts';
import { notImplemented } from './not-implemented.ts';

export type TrafficDataTablesMethods = Pick<
  Store,
  | 'addOutcomes'
  | 'listOutcomes'
  | 'mergeObservations'
  | 'listObservations'
  | 'pruneObservations'
  | 'setGoldenSet'
  | 'getGoldenSet'
>;

export class PgTrafficDataTables implements TrafficDataTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  readonly addOutcomes: Store['addOutcomes'] = notImplemented('addOutcomes');
  readonly listOutcomes: Store['listOutcomes'] = notImplemented('listOutcomes');
  readonly mergeObservations: Store['mergeObservations'] = notImplemented('mergeObservations');
  readonly listObservations: Store['listObservations'] = notImplemented('listObservations');
  readonly pruneObservations: Store['pruneObservations'] = notImplemented('pruneObservations');
  readonly setGoldenSet: Store['setGoldenSet'] = notImplemented('setGoldenSet');
  readonly getGoldenSet: Store['getGoldenSet'] = notImplemented('getGoldenSet');
}
