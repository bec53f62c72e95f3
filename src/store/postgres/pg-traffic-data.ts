// PostgreSQL store, traffic data tables (migration 5): the counterpart of
// sqlite-traffic-data.ts — experiments' caller-reported outcomes, the gateways' observations
// merged into 10 s rows, and golden sets registered with versions. Same semantics, same
// errors (the checks are traffic-data-checks.ts, shared with SQLite); the contract suite
// runs on both.

import { kilnError } from '../../core/errors.ts';
import { isoAt, type Clock } from '../../core/clock.ts';
import type { Store } from '../store.ts';
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
} from '../sqlite/sqlite-traffic-rows.ts';
import type { PgDatabase, PgQueryable } from './pg-database.ts';
import { pgPruneTimeKeyedRows } from './pg-time-keyed-rows.ts';

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

/** The row id of a version that exists and is not deleted; null otherwise. */
export async function pgLiveVersionId(
  c: PgQueryable,
  model: string,
  version: number,
): Promise<number | null> {
  const row = (
    await c.query<{ id: number }>(
      `SELECT v.id FROM model_versions v JOIN models m ON m.id = v.model_id
       WHERE m.name = $1 AND v.version = $2 AND v.deleted_at IS NULL`,
      [model, version],
    )
  ).rows[0];
  return row?.id ?? null;
}

export class PgTrafficDataTables implements TrafficDataTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  // ------------------------------------------------------------ outcomes

  async addOutcomes(experimentId: string, entries: readonly OutcomeEntry[]): Promise<void> {
    await this.db.write(async (c) => {
      const experiment = (
        await c.query<{ variants_json: string }>(
          'SELECT variants_json FROM experiments WHERE id = $1',
          [experimentId],
        )
      ).rows[0];
      if (experiment === undefined) {
        throw kilnError('KILN_EXPERIMENT_NOT_FOUND', { experiment: experimentId });
      }
      const variants = (
        JSON.parse(experiment.variants_json) as { model: string; version: number }[]
      ).map(versionKey);
      const kinds = new Map<string, OutcomeKind>(
        (
          await c.query<{ metric: string; kind: OutcomeKind }>(
            'SELECT DISTINCT metric, kind FROM experiment_outcomes WHERE experiment_id = $1',
            [experimentId],
          )
        ).rows.map((r) => [r.metric, r.kind]),
      );
      const now = isoAt(this.clock);
      for (const group of groupOutcomes(experimentId, variants, kinds, entries)) {
        const existing = (
          await c.query<{ moments_json: string }>(
            `SELECT moments_json FROM experiment_outcomes
             WHERE experiment_id = $1 AND variant = $2 AND metric = $3`,
            [experimentId, group.variant, group.metric],
          )
        ).rows[0];
        await c.query(
          `INSERT INTO experiment_outcomes (experiment_id, variant, metric, kind, moments_json,
             updated_at) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (experiment_id, variant, metric) DO UPDATE SET
             moments_json = EXCLUDED.moments_json, updated_at = EXCLUDED.updated_at`,
          [
            experimentId,
            group.variant,
            group.metric,
            group.kind,
            mergedMomentsJson(existing?.moments_json, group.values),
            now,
          ],
        );
      }
    });
  }

  async listOutcomes(experimentId: string): Promise<readonly OutcomeAggregate[]> {
    const rows = await this.db.read((c) =>
      c.query<OutcomeRow>(
        `SELECT * FROM experiment_outcomes WHERE experiment_id = $1
         ORDER BY metric COLLATE "C", variant COLLATE "C"`,
        [experimentId],
      ),
    );
    return rows.rows.map(toOutcome);
  }

  // ------------------------------------------------------------ observations

  async mergeObservations(
    deltas: readonly ObservationDelta[],
    merge: (existing: unknown, delta: unknown) => unknown,
  ): Promise<void> {
    const keyed = observationKeys(deltas);
    await this.db.write(async (c) => {
      for (const { delta, key } of keyed) {
        const existing = (
          await c.query<{ data_json: string }>(
            `SELECT data_json FROM traffic_observations WHERE endpoint = $1 AND bucket_ms = $2
               AND kind = $3 AND model = $4 AND version = $5 AND slice = $6`,
            key,
          )
        ).rows[0];
        const merged = await merge(
          existing === undefined ? null : (JSON.parse(existing.data_json) as unknown),
          delta.data,
        );
        await c.query(
          `INSERT INTO traffic_observations (endpoint, bucket_ms, kind, model, version, slice,
             data_json) VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (endpoint, bucket_ms, kind, model, version, slice)
             DO UPDATE SET data_json = EXCLUDED.data_json`,
          [...key, JSON.stringify(merged ?? null)],
        );
      }
    });
  }

  async listObservations(query: ObservationQuery): Promise<readonly ObservationRow[]> {
    const values: unknown[] = [query.endpoint, timeMs(query.since, 'since')];
    let filter = '';
    if (query.until !== undefined) {
      values.push(timeMs(query.until, 'until'));
      filter += ` AND bucket_ms < $${values.length}`;
    }
    if (query.kind !== undefined) {
      values.push(query.kind);
      filter += ` AND kind = $${values.length}`;
    }
    const rows = await this.db.read((c) =>
      c.query<ObservationDbRow>(
        `SELECT * FROM traffic_observations WHERE endpoint = $1 AND bucket_ms >= $2${filter}
         ORDER BY bucket_ms, kind COLLATE "C", model COLLATE "C", version, slice COLLATE "C"`,
        values,
      ),
    );
    return rows.rows.map(toObservation);
  }

  pruneObservations(before: string): Promise<number> {
    return pgPruneTimeKeyedRows(this.db, 'traffic_observations', 'bucket_ms', before);
  }

  // ------------------------------------------------------------ golden sets

  async setGoldenSet(golden: Omit<GoldenSet, 'createdAt'>): Promise<GoldenSet> {
    return this.db.write(async (c) => {
      const versionId = await pgLiveVersionId(c, golden.model, golden.version);
      if (versionId === null) {
        throw kilnError('KILN_VERSION_NOT_FOUND', { model: golden.model, version: golden.version });
      }
      await c.query(
        `INSERT INTO golden_sets (version_id, tolerance_json, cases_json, created_at)
         VALUES ($1, $2, $3, $4) ON CONFLICT (version_id) DO UPDATE SET
           tolerance_json = EXCLUDED.tolerance_json, cases_json = EXCLUDED.cases_json,
           created_at = EXCLUDED.created_at`,
        [
          versionId,
          JSON.stringify(golden.tolerance),
          JSON.stringify(golden.cases),
          isoAt(this.clock),
        ],
      );
      const stored = await goldenSetOf(c, golden.model, golden.version);
      if (stored === null) throw kilnError('KILN_INTERNAL', { reason: 'golden set vanished' });
      return stored;
    });
  }

  /** null when the version has none, or is deleted. */
  getGoldenSet(model: string, version: number): Promise<GoldenSet | null> {
    return this.db.read((c) => goldenSetOf(c, model, version));
  }
}

async function goldenSetOf(
  c: PgQueryable,
  model: string,
  version: number,
): Promise<GoldenSet | null> {
  const row = (
    await c.query<GoldenRow>(
      `SELECT m.name AS model, v.version, g.tolerance_json, g.cases_json, g.created_at
       FROM golden_sets g JOIN model_versions v ON v.id = g.version_id
       JOIN models m ON m.id = v.model_id
       WHERE m.name = $1 AND v.version = $2 AND v.deleted_at IS NULL`,
      [model, version],
    )
  ).rows[0];
  return row === undefined ? null : toGoldenSet(row);
}
