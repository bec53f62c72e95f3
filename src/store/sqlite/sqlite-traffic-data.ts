// SQLite tables for the data traffic management judges with (migration 5): experiments'
// caller-reported outcomes, the gateways' observations merged into 10 s rows, and golden
// sets registered with versions. SqliteStore delegates here.

import type Database from 'better-sqlite3';
import { kilnError } from '../../core/errors.ts';
import { isoAt, type Clock } from '../../core/clock.ts';
import {
  versionKey,
  type GoldenSet,
  type ObservationDelta,
  type ObservationQuery,
  type ObservationRow,
  type OutcomeAggregate,
  type OutcomeEntry,
  type OutcomeKind,
} from '../traffic-records.ts';
import {
  groupOutcomes,
  mergedMomentsJson,
  observationKeys,
  timeMs,
} from '../traffic-data-checks.ts';
import {
  toGoldenSet,
  toObservation,
  toOutcome,
  type GoldenRow,
  type ObservationDbRow,
  type OutcomeRow,
} from './sqlite-traffic-rows.ts';

/** The row id of a version that exists and is not deleted; null otherwise. */
export function liveVersionId(
  db: Database.Database,
  model: string,
  version: number,
): number | null {
  const row = db
    .prepare(
      `SELECT v.id FROM model_versions v JOIN models m ON m.id = v.model_id
       WHERE m.name = ? AND v.version = ? AND v.deleted_at IS NULL`,
    )
    .get(model, version) as { id: number } | undefined;
  return row?.id ?? null;
}

// Other modules import timeMs from here; it is the stores' shared check now.
export { timeMs };

export class SqliteTrafficDataTables {
  constructor(
    private readonly db: Database.Database,
    private readonly clock: Clock,
  ) {}

  // ------------------------------------------------------------ outcomes

  addOutcomes(experimentId: string, entries: readonly OutcomeEntry[]): void {
    const merge = this.db.transaction(() => {
      const experiment = this.db
        .prepare('SELECT variants_json FROM experiments WHERE id = ?')
        .get(experimentId) as { variants_json: string } | undefined;
      if (experiment === undefined) {
        throw kilnError('KILN_EXPERIMENT_NOT_FOUND', { experiment: experimentId });
      }
      const variants = (
        JSON.parse(experiment.variants_json) as { model: string; version: number }[]
      ).map(versionKey);
      const kinds = new Map<string, OutcomeKind>(
        (
          this.db
            .prepare(
              'SELECT DISTINCT metric, kind FROM experiment_outcomes WHERE experiment_id = ?',
            )
            .all(experimentId) as { metric: string; kind: OutcomeKind }[]
        ).map((r) => [r.metric, r.kind]),
      );
      const now = isoAt(this.clock);
      for (const group of groupOutcomes(experimentId, variants, kinds, entries)) {
        const existing = this.db
          .prepare(
            `SELECT moments_json FROM experiment_outcomes
             WHERE experiment_id = ? AND variant = ? AND metric = ?`,
          )
          .get(experimentId, group.variant, group.metric) as { moments_json: string } | undefined;
        this.db
          .prepare(
            `INSERT INTO experiment_outcomes (experiment_id, variant, metric, kind, moments_json,
               updated_at) VALUES (?, ?, ?, ?, ?, ?)
             ON CONFLICT (experiment_id, variant, metric) DO UPDATE SET
               moments_json = excluded.moments_json, updated_at = excluded.updated_at`,
          )
          .run(
            experimentId,
            group.variant,
            group.metric,
            group.kind,
            mergedMomentsJson(existing?.moments_json, group.values),
            now,
          );
      }
    });
    merge.immediate();
  }

  listOutcomes(experimentId: string): OutcomeAggregate[] {
    return (
      this.db
        .prepare(
          'SELECT * FROM experiment_outcomes WHERE experiment_id = ? ORDER BY metric, variant',
        )
        .all(experimentId) as OutcomeRow[]
    ).map(toOutcome);
  }

  // ------------------------------------------------------------ observations

  mergeObservations(
    deltas: readonly ObservationDelta[],
    merge: (existing: unknown, delta: unknown) => unknown,
  ): void {
    const keyed = observationKeys(deltas);
    const write = this.db.transaction(() => {
      const read = this.db.prepare(
        `SELECT data_json FROM traffic_observations WHERE endpoint = ? AND bucket_ms = ?
           AND kind = ? AND model = ? AND version = ? AND slice = ?`,
      );
      const upsert = this.db.prepare(
        `INSERT INTO traffic_observations (endpoint, bucket_ms, kind, model, version, slice,
           data_json) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (endpoint, bucket_ms, kind, model, version, slice)
           DO UPDATE SET data_json = excluded.data_json`,
      );
      for (const { delta, key } of keyed) {
        const existing = read.get(...key) as { data_json: string } | undefined;
        const merged = merge(
          existing === undefined ? null : (JSON.parse(existing.data_json) as unknown),
          delta.data,
        );
        upsert.run(...key, JSON.stringify(merged ?? null));
      }
    });
    write.immediate();
  }

  listObservations(query: ObservationQuery): ObservationRow[] {
    const since = timeMs(query.since, 'since');
    const until = query.until === undefined ? null : timeMs(query.until, 'until');
    return (
      this.db
        .prepare(
          `SELECT * FROM traffic_observations WHERE endpoint = ? AND bucket_ms >= ?
             AND (? IS NULL OR bucket_ms < ?) AND (? IS NULL OR kind = ?)
           ORDER BY bucket_ms, kind, model, version, slice`,
        )
        .all(
          query.endpoint,
          since,
          until,
          until,
          query.kind ?? null,
          query.kind ?? null,
        ) as ObservationDbRow[]
    ).map(toObservation);
  }

  pruneObservations(before: string): number {
    const beforeMs = timeMs(before, 'before');
    return this.db.prepare('DELETE FROM traffic_observations WHERE bucket_ms < ?').run(beforeMs)
      .changes;
  }

  // ------------------------------------------------------------ golden sets

  setGoldenSet(golden: Omit<GoldenSet, 'createdAt'>): GoldenSet {
    const put = this.db.transaction((): GoldenSet => {
      const versionId = liveVersionId(this.db, golden.model, golden.version);
      if (versionId === null) {
        throw kilnError('KILN_VERSION_NOT_FOUND', { model: golden.model, version: golden.version });
      }
      this.db
        .prepare(
          `INSERT INTO golden_sets (version_id, tolerance_json, cases_json, created_at)
           VALUES (?, ?, ?, ?) ON CONFLICT (version_id) DO UPDATE SET
             tolerance_json = excluded.tolerance_json, cases_json = excluded.cases_json,
             created_at = excluded.created_at`,
        )
        .run(
          versionId,
          JSON.stringify(golden.tolerance),
          JSON.stringify(golden.cases),
          isoAt(this.clock),
        );
      const stored = this.getGoldenSet(golden.model, golden.version);
      if (stored === null) throw kilnError('KILN_INTERNAL', { reason: 'golden set vanished' });
      return stored;
    });
    return put.immediate();
  }

  /** null when the version has none, or is deleted. */
  getGoldenSet(model: string, version: number): GoldenSet | null {
    const row = this.db
      .prepare(
        `SELECT m.name AS model, v.version, g.tolerance_json, g.cases_json, g.created_at
         FROM golden_sets g JOIN model_versions v ON v.id = g.version_id
         JOIN models m ON m.id = v.model_id
         WHERE m.name = ? AND v.version = ? AND v.deleted_at IS NULL`,
      )
      .get(model, version) as GoldenRow | undefined;
    return row === undefined ? null : toGoldenSet(row);
  }
}
