// Row shapes of the autoscaling tables (migration 6), their mapping to scaling-records.ts, and
// what a write checks and computes without its database: both stores (sqlite-scaling.ts,
// postgres/pg-scaling.ts) run these inside their write transactions, so they refuse the same
// calls with the same messages and store the same rows.

import { kilnError } from '../core/errors.ts';
import { HistogramSketch, type HistogramSketchSnapshot } from '../traffic/histogram-sketch.ts';
import type {
  DemandRow,
  EndpointScaleRecord,
  NewPool,
  NewScaleEvent,
  PoolRecord,
  ScaleChange,
  ScaleEvent,
  ScaleEventKind,
} from './scaling-records.ts';
import { canonicalTime, timeMs } from './traffic-data-checks.ts';

/** Demand rows are per minute: minuteStart must be an ISO time on a multiple of this. */
export const demandMinuteMs = 60_000;

/** listScaleEvents returns at most this many when no limit is given. */
const defaultEventLimit = 100;

const scaleEventKinds: ReadonlySet<ScaleEventKind> = new Set<ScaleEventKind>([
  'scale-up',
  'scale-down',
  'to-zero',
  'wake',
  'manual',
]);

export interface ScaleRow {
  endpoint: string;
  replicas: number;
  reason: string;
  last_demand_at: string | null;
  updated_at: string;
}

export interface ScaleEventRow {
  id: number;
  endpoint: string;
  at: string;
  kind: ScaleEventKind;
  from_replicas: number;
  to_replicas: number;
  mode: string;
  reason: string;
}

export interface DemandDbRow {
  endpoint: string;
  minute_ms: number;
  arrivals: number;
  concurrency_seconds: number;
  seconds: number;
  latency_json: string;
}

export interface PoolRow {
  name: string;
  team: string;
  workers: number;
  memory_budget_bytes: number;
  created_at: string;
  updated_at: string;
}

export function toScale(row: ScaleRow): EndpointScaleRecord {
  return {
    endpoint: row.endpoint,
    replicas: row.replicas,
    reason: row.reason,
    lastDemandAt: row.last_demand_at,
    updatedAt: row.updated_at,
  };
}

export function toScaleEvent(row: ScaleEventRow): ScaleEvent {
  return {
    id: row.id,
    endpoint: row.endpoint,
    at: row.at,
    kind: row.kind,
    from: row.from_replicas,
    to: row.to_replicas,
    mode: row.mode,
    reason: row.reason,
  };
}

export function toDemand(row: DemandDbRow): DemandRow {
  return {
    endpoint: row.endpoint,
    minuteStart: new Date(row.minute_ms).toISOString(),
    arrivals: row.arrivals,
    concurrencySeconds: row.concurrency_seconds,
    seconds: row.seconds,
    latencyMs: JSON.parse(row.latency_json) as HistogramSketchSnapshot,
  };
}

export function toPool(row: PoolRow): PoolRecord {
  return {
    name: row.name,
    team: row.team,
    workers: row.workers,
    memoryBudgetBytes: row.memory_budget_bytes,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function invalid(reason: string): never {
  throw kilnError('KILN_VALIDATION_FAILED', { reason });
}

function isCount(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 0;
}

function isAmount(n: number): boolean {
  return Number.isFinite(n) && n >= 0;
}

function sketchOf(snapshot: HistogramSketchSnapshot, what: string): HistogramSketch {
  const parsed = HistogramSketch.fromSnapshot(snapshot);
  if (!parsed.ok) invalid(`${what}: ${parsed.message}`);
  return parsed.sketch;
}

/** Refuses a count that is not an integer >= 0. */
export function checkReplicas(change: ScaleChange): void {
  if (!isCount(change.replicas)) invalid(`replicas ${change.replicas} must be an integer >= 0`);
}

/**
 * Refuses a conditional write whose `expectReplicas` is not the stored count (none stored:
 * a conflict too, not a create). Returns the row's last_demand_at after the change.
 */
export function checkScaleChange(
  change: ScaleChange,
  current: EndpointScaleRecord | null,
): string | null {
  if (change.expectReplicas !== undefined && change.expectReplicas !== current?.replicas) {
    const stored = current === null ? 'it has no count yet' : `it is at ${current.replicas}`;
    throw kilnError(
      'KILN_SCALE_CONFLICT',
      {
        endpoint: change.endpoint,
        reason: `expected ${change.expectReplicas} replicas, ${stored}`,
      },
      { expectedReplicas: change.expectReplicas, replicas: current?.replicas ?? null },
    );
  }
  return change.lastDemandAt === undefined
    ? (current?.lastDemandAt ?? null)
    : canonicalTime(change.lastDemandAt, 'lastDemandAt');
}

/**
 * A scale event's row values: endpoint, at, kind, from_replicas, to_replicas, mode, reason;
 * refused when it names another endpoint, an unknown kind or a count that is not >= 0.
 */
export function scaleEventValues(endpoint: string, event: NewScaleEvent, at: string): unknown[] {
  if (event.endpoint !== endpoint) {
    invalid(`an event for endpoint ${event.endpoint} was written with endpoint ${endpoint}`);
  }
  if (!scaleEventKinds.has(event.kind)) invalid(`unknown scale event kind ${event.kind}`);
  if (!isCount(event.from) || !isCount(event.to)) {
    invalid(`a scale event's counts must be integers >= 0 (from ${event.from}, to ${event.to})`);
  }
  return [endpoint, at, event.kind, event.from, event.to, event.mode, event.reason];
}

/** listScaleEvents' limit (default 100) and since (canonical ISO, or null), checked. */
export function scaleEventQuery(query: { readonly since?: string; readonly limit?: number }): {
  limit: number;
  since: string | null;
} {
  const limit = query.limit ?? defaultEventLimit;
  if (!Number.isSafeInteger(limit) || limit < 1) invalid(`limit ${limit} must be an integer >= 1`);
  return {
    limit,
    since: query.since === undefined ? null : canonicalTime(query.since, 'since'),
  };
}

/** A demand row's minute (epoch ms), checked with its counts; `i`: its place in the call. */
export function demandMinute(row: DemandRow, i: number): number {
  const what = demandWhat(row, i);
  const minuteMs = timeMs(row.minuteStart, `${what}: minuteStart`);
  if (minuteMs % demandMinuteMs !== 0) invalid(`${what}: minuteStart is not on a minute`);
  if (row.endpoint === '') invalid(`${what}: endpoint is empty`);
  if (!isCount(row.arrivals)) invalid(`${what}: arrivals must be an integer >= 0`);
  if (!isAmount(row.concurrencySeconds)) {
    invalid(`${what}: concurrencySeconds must be a finite number >= 0`);
  }
  if (!isAmount(row.seconds)) invalid(`${what}: seconds must be a finite number >= 0`);
  return minuteMs;
}

function demandWhat(row: DemandRow, i: number): string {
  return `demand row ${i} (endpoint ${row.endpoint}, minute ${row.minuteStart})`;
}

/**
 * The stored minute row with `row` added (counts add, sketches merge), as the row values
 * endpoint, minute_ms, arrivals, concurrency_seconds, seconds, latency_json. Refused when the
 * sketch does not parse or its accuracy differs from the stored one.
 */
export function mergedDemandValues(
  row: DemandRow,
  i: number,
  minuteMs: number,
  stored: DemandDbRow | undefined,
): unknown[] {
  const what = demandWhat(row, i);
  const latency = sketchOf(row.latencyMs, `${what}: latencyMs`);
  if (stored !== undefined) {
    const result = latency.merge(
      sketchOf(
        JSON.parse(stored.latency_json) as HistogramSketchSnapshot,
        `${what}: the stored latency`,
      ),
    );
    if (!result.ok) invalid(`${what}: latencyMs: ${result.message}`);
  }
  return [
    row.endpoint,
    minuteMs,
    row.arrivals + (stored?.arrivals ?? 0),
    row.concurrencySeconds + (stored?.concurrency_seconds ?? 0),
    row.seconds + (stored?.seconds ?? 0),
    JSON.stringify(latency.snapshot()),
  ];
}

/** Refuses a pool without a name, with workers < 1 or a budget <= 0. */
export function checkPool(pool: NewPool): void {
  if (pool.name === '') invalid('a pool needs a name');
  if (!Number.isSafeInteger(pool.workers) || pool.workers < 1) {
    invalid(`pool ${pool.name}: workers ${pool.workers} must be an integer >= 1`);
  }
  if (!Number.isSafeInteger(pool.memoryBudgetBytes) || pool.memoryBudgetBytes <= 0) {
    invalid(
      `pool ${pool.name}: memoryBudgetBytes ${pool.memoryBudgetBytes} must be an integer > 0`,
    );
  }
}

/** Refuses deleting a pool that endpoints are deployed on. */
export function checkPoolUnused(name: string, users: readonly string[]): void {
  if (users.length === 0) return;
  throw kilnError(
    'KILN_POOL_IN_USE',
    { pool: name, endpoints: users.join(', ') },
    { endpoints: [...users] },
  );
}
