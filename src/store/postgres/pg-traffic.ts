// PostgreSQL store, traffic tables (migration 5): the counterpart of sqlite-traffic.ts — each
// endpoint's traffic record and the history of changes; rollouts and experiments, written
// inside a change, are in pg-rollouts.ts. Same semantics, same errors (the decisions are
// traffic-change.ts, shared with SQLite); the contract suite runs on both.
//
// A change is one `db.write` transaction: it holds the store's write lock (every control
// plane's writes take it), so every check sees the rows other writers committed, and whatever
// it refuses (a KilnError thrown inside) rolls back all of it: a refused change writes nothing.

import { kilnError } from '../../core/errors.ts';
import { isoAt, type Clock } from '../../core/clock.ts';
import type { Page } from '../../registry/types.ts';
import { cursorNumber, decodePageToken, pageOf } from '../page-token.ts';
import type { PageRequest, Store } from '../store.ts';
import type {
  EndpointTrafficRecord,
  ExperimentRecord,
  NewTrafficEvent,
  RolloutRecord,
  TrafficChange,
  TrafficEvent,
  VersionRef,
} from '../traffic-records.ts';
import {
  checkExpectedRevision,
  mismatch,
  trafficRowValues,
  versionsToCheck,
} from '../traffic-change.ts';
import { canonicalTime } from '../traffic-data-checks.ts';
import {
  jsonText,
  toTrafficEvent,
  toTrafficRecord,
  type TrafficEventRow,
  type TrafficRow,
} from '../sqlite/sqlite-traffic-rows.ts';
import type { PgDatabase, PgQueryable } from './pg-database.ts';
import { pgLiveVersionId } from './pg-traffic-data.ts';
import {
  createExperiment,
  createRollout,
  getActiveRollout,
  getExperiment,
  getRollout,
  listExperiments,
  listRollouts,
  patchRollout,
  stopExperiment,
} from './pg-rollouts.ts';

export type TrafficTablesMethods = Pick<
  Store,
  | 'getEndpointTraffic'
  | 'listEndpointTraffic'
  | 'updateEndpointTraffic'
  | 'appendTrafficEvent'
  | 'listTrafficEvents'
  | 'getRollout'
  | 'getActiveRollout'
  | 'listRollouts'
  | 'getExperiment'
  | 'listExperiments'
>;

async function trafficOf(c: PgQueryable, endpoint: string): Promise<EndpointTrafficRecord | null> {
  const row = (
    await c.query<TrafficRow>('SELECT * FROM endpoint_traffic WHERE endpoint = $1', [endpoint])
  ).rows[0];
  return row === undefined ? null : toTrafficRecord(row);
}

async function allTraffic(c: PgQueryable): Promise<EndpointTrafficRecord[]> {
  const rows = await c.query<TrafficRow>(
    'SELECT * FROM endpoint_traffic ORDER BY endpoint COLLATE "C"',
  );
  return rows.rows.map(toTrafficRecord);
}

async function insertEvent(
  c: PgQueryable,
  event: NewTrafficEvent,
  at: string,
): Promise<TrafficEvent> {
  const row = (
    await c.query<TrafficEventRow>(
      `INSERT INTO traffic_events (endpoint, at, actor, action, reason, detail_json)
       VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
      [event.endpoint, at, event.actor, event.action, event.reason, jsonText(event.detail)],
    )
  ).rows[0];
  if (row === undefined) throw kilnError('KILN_INTERNAL', { reason: 'traffic event not written' });
  return toTrafficEvent(row);
}

export class PgTrafficTables implements TrafficTablesMethods {
  constructor(
    readonly db: PgDatabase,
    readonly clock: Clock,
  ) {}

  // ------------------------------------------------------------ traffic records

  getEndpointTraffic(endpoint: string): Promise<EndpointTrafficRecord | null> {
    return this.db.read((c) => trafficOf(c, endpoint));
  }

  listEndpointTraffic(): Promise<readonly EndpointTrafficRecord[]> {
    return this.db.read((c) => allTraffic(c));
  }

  updateEndpointTraffic(endpoint: string, change: TrafficChange): Promise<EndpointTrafficRecord> {
    return this.db.write(async (c) => {
      const stable = (
        await c.query<VersionRef>(
          `SELECT m.name AS model, v.version FROM endpoints e JOIN models m ON m.id = e.model_id
           JOIN model_versions v ON v.id = e.version_id WHERE e.name = $1`,
          [endpoint],
        )
      ).rows[0];
      if (stable === undefined) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
      if (change.event.endpoint !== endpoint) mismatch('an event', endpoint, change.event.endpoint);
      const current = await trafficOf(c, endpoint);
      checkExpectedRevision(endpoint, change, current?.revision ?? 0);
      for (const ref of versionsToCheck(change, current, stable, this.clock.now())) {
        if ((await pgLiveVersionId(c, ref.model, ref.version)) === null) {
          throw kilnError('KILN_VERSION_NOT_FOUND', { model: ref.model, version: ref.version });
        }
      }
      const now = isoAt(this.clock);
      if (change.stable !== undefined) await this.moveStable(c, endpoint, change.stable, now);
      const rollout = change.rollout;
      if (rollout !== undefined) {
        if ('create' in rollout) await createRollout(c, endpoint, rollout.create, now);
        else await patchRollout(c, endpoint, rollout.id, rollout.patch, now);
      }
      const experiment = change.experiment;
      if (experiment !== undefined) {
        if ('create' in experiment) await createExperiment(c, endpoint, experiment.create, now);
        else await stopExperiment(c, endpoint, experiment.stop, experiment.at);
      }
      await c.query(
        `INSERT INTO endpoint_traffic (endpoint, policy_json, previous_json, warm_json,
           staged_json, revision, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (endpoint) DO UPDATE SET policy_json = EXCLUDED.policy_json,
           previous_json = EXCLUDED.previous_json, warm_json = EXCLUDED.warm_json,
           staged_json = EXCLUDED.staged_json, revision = EXCLUDED.revision,
           updated_at = EXCLUDED.updated_at`,
        trafficRowValues(endpoint, change, current, now),
      );
      await insertEvent(c, change.event, now);
      const record = await trafficOf(c, endpoint);
      if (record === null) throw kilnError('KILN_INTERNAL', { reason: 'traffic record vanished' });
      return record;
    });
  }

  private async moveStable(
    c: PgQueryable,
    endpoint: string,
    stable: VersionRef & { ref: string },
    now: string,
  ): Promise<void> {
    const row = (
      await c.query<{ model_id: number; version_id: number }>(
        `SELECT m.id AS model_id, v.id AS version_id FROM models m
         JOIN model_versions v ON v.model_id = m.id
         WHERE m.name = $1 AND v.version = $2 AND v.deleted_at IS NULL`,
        [stable.model, stable.version],
      )
    ).rows[0];
    if (row === undefined) {
      throw kilnError('KILN_VERSION_NOT_FOUND', { model: stable.model, version: stable.version });
    }
    await c.query(
      'UPDATE endpoints SET model_id = $1, version_id = $2, ref = $3, updated_at = $4 WHERE name = $5',
      [row.model_id, row.version_id, stable.ref, now, endpoint],
    );
  }

  // ------------------------------------------------------------ history

  appendTrafficEvent(event: NewTrafficEvent): Promise<TrafficEvent> {
    return this.db.write((c) => insertEvent(c, event, isoAt(this.clock)));
  }

  async listTrafficEvents(
    endpoint: string,
    request: PageRequest & { readonly since?: string | undefined },
  ): Promise<Page<TrafficEvent>> {
    const before =
      request.pageToken === undefined
        ? Number.MAX_SAFE_INTEGER
        : cursorNumber(decodePageToken(request.pageToken), 'before');
    const values: unknown[] = [endpoint, before];
    let filter = '';
    if (request.since !== undefined) {
      // Stored times are toISOString()'s: `since` is made the same so text order is time order.
      values.push(canonicalTime(request.since, 'since'));
      filter = ` AND at COLLATE "C" >= $${values.length}`;
    }
    values.push(request.limit + 1);
    const rows = await this.db.read((c) =>
      c.query<TrafficEventRow>(
        `SELECT * FROM traffic_events WHERE endpoint = $1 AND id < $2${filter}
         ORDER BY id DESC LIMIT $${values.length}`,
        values,
      ),
    );
    return pageOf(rows.rows, request.limit, toTrafficEvent, (r) => ({ before: r.id }));
  }

  // ------------------------------------------------------------ rollouts and experiments

  getRollout(id: string): Promise<RolloutRecord | null> {
    return this.db.read((c) => getRollout(c, id));
  }

  getActiveRollout(endpoint: string): Promise<RolloutRecord | null> {
    return this.db.read((c) => getActiveRollout(c, endpoint));
  }

  listRollouts(query: {
    readonly endpoint?: string;
    readonly active?: boolean;
  }): Promise<readonly RolloutRecord[]> {
    return this.db.read((c) => listRollouts(c, query));
  }

  getExperiment(id: string): Promise<ExperimentRecord | null> {
    return this.db.read((c) => getExperiment(c, id));
  }

  listExperiments(query: {
    readonly endpoint?: string;
    readonly state?: ExperimentRecord['state'];
  }): Promise<readonly ExperimentRecord[]> {
    return this.db.read((c) => listExperiments(c, query));
  }
}
