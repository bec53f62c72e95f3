// PostgreSQL store, observability tables: the PostgreSQL counterpart of the SQLite store's methods
// named below (same semantics, same errors; the contract suite runs on both).

import type { Clock } from '../../core/clock.ts';
import type { Store } from '../store.ts';
import type { PgDatabase } from './pg-database.ts';
import { notImplemented } from './not-implemented.ts';

export type ObservabilityTablesMethods = Pick<
  Store,
  | 'setVersionProfile'
  | 'getVersionProfile'
  | 'mergeDriftWindows'
  | 'listDriftWindows'
  | 'pruneDriftWindows'
  | 'addPredictions'
  | 'joinOutcomes'
  | 'listJoinedPredictions'
  | 'prunePredictions'
  | 'mergeUsage'
  | 'listUsage'
  | 'mergeTokenUsage'
  | 'listTokenUsage'
  | 'pruneUsage'
  | 'mergeSliMinutes'
  | 'listSliMinutes'
  | 'pruneSliMinutes'
  | 'listSloAlerts'
  | 'applySloAlerts'
  | 'listSloAlertEvents'
>;

export class PgObservabilityTables implements ObservabilityTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  readonly setVersionProfile: Store['setVersionProfile'] = notImplemented('setVersionProfile');
  readonly getVersionProfile: Store['getVersionProfile'] = notImplemented('getVersionProfile');
  readonly mergeDriftWindows: Store['mergeDriftWindows'] = notImplemented('mergeDriftWindows');
  readonly listDriftWindows: Store['listDriftWindows'] = notImplemented('listDriftWindows');
  readonly pruneDriftWindows: Store['pruneDriftWindows'] = notImplemented('pruneDriftWindows');
  readonly addPredictions: Store['addPredictions'] = notImplemented('addPredictions');
  readonly joinOutcomes: Store['joinOutcomes'] = notImplemented('joinOutcomes');
  readonly listJoinedPredictions: Store['listJoinedPredictions'] =
    notImplemented('listJoinedPredictions');
  readonly prunePredictions: Store['prunePredictions'] = notImplemented('prunePredictions');
  readonly mergeUsage: Store['mergeUsage'] = notImplemented('mergeUsage');
  readonly listUsage: Store['listUsage'] = notImplemented('listUsage');
  readonly mergeTokenUsage: Store['mergeTokenUsage'] = notImplemented('mergeTokenUsage');
  readonly listTokenUsage: Store['listTokenUsage'] = notImplemented('listTokenUsage');
  readonly pruneUsage: Store['pruneUsage'] = notImplemented('pruneUsage');
  readonly mergeSliMinutes: Store['mergeSliMinutes'] = notImplemented('mergeSliMinutes');
  readonly listSliMinutes: Store['listSliMinutes'] = notImplemented('listSliMinutes');
  readonly pruneSliMinutes: Store['pruneSliMinutes'] = notImplemented('pruneSliMinutes');
  readonly listSloAlerts: Store['listSloAlerts'] = notImplemented('listSloAlerts');
  readonly applySloAlerts: Store['applySloAlerts'] = notImplemented('applySloAlerts');
  readonly listSloAlertEvents: Store['listSloAlertEvents'] = notImplemented('listSloAlertEvents');
}
