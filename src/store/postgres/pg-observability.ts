// PostgreSQL store, observability tables: the PostgreSQL counterpart of the SQLite store's methods
// named below (same semantics, same errors; the contract suite runs on both). One module per
// area, as on SQLite: reference profiles (pg-profiles.ts), drift windows (pg-drift.ts),
// predictions and outcomes (pg-quality.ts), cost usage (pg-cost.ts), SLOs (pg-slo.ts).

import type { Clock } from '../../core/clock.ts';
import type { Store } from '../store.ts';
import type { PgDatabase } from './pg-database.ts';
import { PgProfileTables } from './pg-profiles.ts';
import { PgDriftTables } from './pg-drift.ts';
import { PgQualityTables } from './pg-quality.ts';
import { PgCostTables } from './pg-cost.ts';
import { PgSloTables } from './pg-slo.ts';

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

type Args<K extends keyof ObservabilityTablesMethods> = Parameters<Store[K]>;
type Result<K extends keyof ObservabilityTablesMethods> = ReturnType<Store[K]>;

export class PgObservabilityTables implements ObservabilityTablesMethods {
  private readonly profiles: PgProfileTables;
  private readonly drift: PgDriftTables;
  private readonly quality: PgQualityTables;
  private readonly cost: PgCostTables;
  private readonly slo: PgSloTables;

  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {
    this.profiles = new PgProfileTables(db, clock);
    this.drift = new PgDriftTables(db, clock);
    this.quality = new PgQualityTables(db);
    this.cost = new PgCostTables(db);
    this.slo = new PgSloTables(db, clock);
  }

  setVersionProfile(...a: Args<'setVersionProfile'>): Result<'setVersionProfile'> {
    return this.profiles.setVersionProfile(...a);
  }

  getVersionProfile(...a: Args<'getVersionProfile'>): Result<'getVersionProfile'> {
    return this.profiles.getVersionProfile(...a);
  }

  mergeDriftWindows(...a: Args<'mergeDriftWindows'>): Result<'mergeDriftWindows'> {
    return this.drift.mergeWindows(...a);
  }

  listDriftWindows(...a: Args<'listDriftWindows'>): Result<'listDriftWindows'> {
    return this.drift.listWindows(...a);
  }

  pruneDriftWindows(...a: Args<'pruneDriftWindows'>): Result<'pruneDriftWindows'> {
    return this.drift.pruneWindows(...a);
  }

  addPredictions(...a: Args<'addPredictions'>): Result<'addPredictions'> {
    return this.quality.addPredictions(...a);
  }

  joinOutcomes(...a: Args<'joinOutcomes'>): Result<'joinOutcomes'> {
    return this.quality.joinOutcomes(...a);
  }

  listJoinedPredictions(...a: Args<'listJoinedPredictions'>): Result<'listJoinedPredictions'> {
    return this.quality.listJoined(...a);
  }

  prunePredictions(...a: Args<'prunePredictions'>): Result<'prunePredictions'> {
    return this.quality.prunePredictions(...a);
  }

  mergeUsage(...a: Args<'mergeUsage'>): Result<'mergeUsage'> {
    return this.cost.mergeUsage(...a);
  }

  listUsage(...a: Args<'listUsage'>): Result<'listUsage'> {
    return this.cost.listUsage(...a);
  }

  mergeTokenUsage(...a: Args<'mergeTokenUsage'>): Result<'mergeTokenUsage'> {
    return this.cost.mergeTokenUsage(...a);
  }

  listTokenUsage(...a: Args<'listTokenUsage'>): Result<'listTokenUsage'> {
    return this.cost.listTokenUsage(...a);
  }

  pruneUsage(...a: Args<'pruneUsage'>): Result<'pruneUsage'> {
    return this.cost.pruneUsage(...a);
  }

  mergeSliMinutes(...a: Args<'mergeSliMinutes'>): Result<'mergeSliMinutes'> {
    return this.slo.mergeSliMinutes(...a);
  }

  listSliMinutes(...a: Args<'listSliMinutes'>): Result<'listSliMinutes'> {
    return this.slo.listSliMinutes(...a);
  }

  pruneSliMinutes(...a: Args<'pruneSliMinutes'>): Result<'pruneSliMinutes'> {
    return this.slo.pruneSliMinutes(...a);
  }

  listSloAlerts(...a: Args<'listSloAlerts'>): Result<'listSloAlerts'> {
    return this.slo.listSloAlerts(...a);
  }

  applySloAlerts(...a: Args<'applySloAlerts'>): Result<'applySloAlerts'> {
    return this.slo.applySloAlerts(...a);
  }

  listSloAlertEvents(...a: Args<'listSloAlertEvents'>): Result<'listSloAlertEvents'> {
    return this.slo.listSloAlertEvents(...a);
  }
}
