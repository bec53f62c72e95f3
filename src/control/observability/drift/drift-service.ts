// Drift and skew in the control plane (issue 15, docs/drift.md): collects the workers'
// sketches, keeps them per window in the store, reports and publishes gauges.
//
//   every intervalMs: endpoints with observability.drift enabled
//     └─ each ready replica: GET /kiln/v1/sketches (≤ timeoutMs; the worker hands over what
//        it sketched since the last GET and starts afresh)
//          └─ merged into window floor(now / windowMs) per version and slice (store, one
//             transaction) ─▶ gauges from the report over the last two windows
//   GET /api/v1/endpoints/{e}/drift  ─▶ report(e, {slice, since})  (drift-report.ts, pure)
//
// Bounded: one round at a time, each GET bounded by its timeout; the store keeps windows for
// retentionMs. A replica that does not answer (or answers something else) is left out of the
// round; its sketches stay on it for the next one. What a worker handed over in an answer
// that is lost on the way is lost (sketches, not requests: the window has a little less).

import type { Clock } from '../../../core/clock.ts';
import { kilnError } from '../../../core/errors.ts';
import type { DataProfile } from '../../../observability/profile/data-profile.ts';
import { driftReport, type VersionDrift } from '../../../observability/drift/drift-report.ts';
import {
  defaultDriftThresholds,
  type DriftThresholds,
} from '../../../observability/drift/drift-thresholds.ts';
import {
  parseWorkerSketchReport,
  sketchesPath,
  type WorkerSketchReport,
} from '../../../protocol/drift/sketch-report.ts';
import type { NewDriftWindow } from '../../../store/drift-records.ts';
import type { DriftConfig } from '../../../store/observability-config.ts';
import type { Store } from '../../../store/store.ts';
import { fetchJson, PollingLoop } from '../../polling-loop.ts';
import type { DriftMetrics } from './drift-metrics.ts';

export interface SketchedReplica {
  readonly id: string;
  readonly url: string;
}

export interface DriftServiceOptions {
  readonly store: Store;
  readonly clock: Clock;
  /** The endpoint's ready replicas now (the reconciler's view). */
  readonly readyReplicas: (endpoint: string) => readonly SketchedReplica[];
  /** A version's reference profile (B's store), or null. */
  readonly reference: (model: string, version: number) => Promise<DataProfile | null>;
  readonly metrics: DriftMetrics | null;
  /** Time between the starts of two rounds. Default 5000. */
  readonly intervalMs?: number;
  /** Longest wait for one worker. Default 2000. */
  readonly timeoutMs?: number;
  /** Windows older than this are pruned. Default 7 days. */
  readonly retentionMs?: number;
  readonly thresholds?: DriftThresholds;
  /** GETs a worker's sketches, parsed JSON (tests give fakes). */
  readonly fetchSketches?: (url: string, signal: AbortSignal) => Promise<unknown>;
  readonly log?: (message: string) => void;
}

export interface DriftQuery {
  /** Report per value of this slice key too (must be the configured one). */
  readonly slice?: string | null;
  /** `1h`, `30m`, `7d`, `45s`, or an ISO 8601 time; default 1h. */
  readonly since?: string | null;
}

export interface DriftReportBody {
  readonly endpoint: string;
  readonly sliceKey: string | null;
  readonly bySlice: boolean;
  readonly since: string;
  readonly windowMs: number;
  readonly thresholds: DriftThresholds;
  readonly versions: readonly VersionDrift[];
}

/** `since` as epoch ms: a duration back from now (`90s`, `15m`, `1h`, `7d`) or an ISO time. */
export function sinceMs(text: string, nowMs: number): number | null {
  const match = /^(\d{1,9})(s|m|h|d)$/.exec(text.trim());
  if (match !== null) {
    const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[
      match[2] as 's' | 'm' | 'h' | 'd'
    ];
    return nowMs - Number(match[1]) * unit;
  }
  if (!/^\d{4}-\d{2}-\d{2}T/.test(text)) return null;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : null;
}

export class DriftService {
  private readonly intervalMs: number;
  private readonly timeoutMs: number;
  private readonly retentionMs: number;
  private readonly thresholds: DriftThresholds;
  private readonly fetchSketches: (url: string, signal: AbortSignal) => Promise<unknown>;
  /** Rounds one at a time; its signal aborts the GETs of the round in progress at close. */
  private readonly loop: PollingLoop;
  private lastPruneMs = 0;
  /** The latest gauges' reports, by endpoint (for SLO drift ceilings: latestDrift). */
  private latest = new Map<string, readonly VersionDrift[]>();

  constructor(private readonly options: DriftServiceOptions) {
    this.intervalMs = options.intervalMs ?? 5_000;
    this.timeoutMs = options.timeoutMs ?? 2_000;
    this.retentionMs = options.retentionMs ?? 7 * 86_400_000;
    this.thresholds = options.thresholds ?? defaultDriftThresholds;
    this.fetchSketches = options.fetchSketches ?? fetchJson;
    this.loop = new PollingLoop(
      () =>
        this.collect().catch((error: unknown) =>
          this.log(`drift collection failed: ${String(error)}`),
        ),
      this.intervalMs,
      options.clock,
    );
  }

  /** Collects every intervalMs until close(); rounds never overlap. */
  start(): void {
    this.loop.start();
  }

  /** One round (a round in progress is joined, not doubled). */
  collectOnce(): Promise<void> {
    return this.loop.once();
  }

  close(): Promise<void> {
    return this.loop.close();
  }

  /**
   * The latest round's drift of an endpoint (overall and slices of its last two windows), as
   * the gauges show it; empty when it collects nothing. For SLO drift ceilings.
   */
  latestDrift(endpoint: string): readonly VersionDrift[] {
    return this.latest.get(endpoint) ?? [];
  }

  /** The report of `GET /api/v1/endpoints/{e}/drift`; KilnErrors for the 4xx. */
  async report(endpoint: string, query: DriftQuery = {}): Promise<DriftReportBody> {
    const record = await this.options.store.getEndpoint(endpoint);
    if (record === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
    const config = record.config.observability?.drift;
    if (config === undefined || !config.enabled) {
      throw kilnError('KILN_DRIFT_NOT_CONFIGURED', { endpoint });
    }
    const slice = query.slice ?? null;
    if (slice !== null && slice !== config.sliceKey) {
      throw kilnError('KILN_DRIFT_SLICE_UNKNOWN', {
        endpoint,
        slice,
        configured:
          config.sliceKey === null
            ? 'it has none (set observability.drift.sliceKey)'
            : `its slice key is ${config.sliceKey}`,
      });
    }
    const nowMs = this.options.clock.now();
    const since = sinceMs(query.since ?? '1h', nowMs);
    if (since === null || since > nowMs) {
      throw kilnError('KILN_DRIFT_QUERY_INVALID', {
        endpoint,
        reason: `since must be a duration such as 1h, 30m or 7d, or an ISO 8601 time in the past, not '${query.since ?? ''}'`,
      });
    }
    const versions = await this.versionsReport(endpoint, config, since, slice !== null);
    return {
      endpoint,
      sliceKey: config.sliceKey,
      bySlice: slice !== null,
      since: new Date(since).toISOString(),
      windowMs: config.windowMs,
      thresholds: this.thresholds,
      versions,
    };
  }

  private async versionsReport(
    endpoint: string,
    config: DriftConfig,
    since: number,
    bySlice: boolean,
  ): Promise<VersionDrift[]> {
    // Windows that start before `since` but overlap it count: a window is whole or not at all.
    const start = Math.floor(since / config.windowMs) * config.windowMs;
    const windows = await this.options.store.listDriftWindows({
      endpoint,
      since: new Date(start).toISOString(),
      slices: bySlice ? 'all' : 'overall',
    });
    const references = new Map<string, DataProfile | null>();
    for (const window of windows) {
      const key = `${window.model}:${window.version}`;
      if (!references.has(key))
        references.set(key, await this.options.reference(window.model, window.version));
    }
    return driftReport({
      windows,
      reference: (model, version) => references.get(`${model}:${version}`) ?? null,
      bySlice,
      thresholds: this.thresholds,
    });
  }

  private async collect(): Promise<void> {
    const endpoints = (await this.options.store.listEndpoints()).flatMap((record) => {
      const drift = record.config.observability?.drift;
      return drift !== undefined && drift.enabled ? [{ name: record.name, drift }] : [];
    });
    const rounds = await Promise.all(
      endpoints.map(async ({ name, drift }) => {
        const replicas = this.options.readyReplicas(name);
        const reports = await Promise.all(replicas.map((replica) => this.poll(replica)));
        return { name, drift, reports: reports.filter((r) => r !== null) };
      }),
    );
    if (this.loop.closed) return;
    const nowMs = this.options.clock.now();
    for (const { name, drift, reports } of rounds) {
      const windowMs = drift.windowMs;
      const windowStart = new Date(Math.floor(nowMs / windowMs) * windowMs).toISOString();
      // One merge per worker report: a report whose sketches do not merge (another bucket
      // grid, a feature whose kind changed) is refused alone, logged, not the round.
      for (const report of reports) {
        try {
          await this.options.store.mergeDriftWindows(
            windowRows(name, windowMs, windowStart, report),
          );
        } catch (error) {
          this.log(`drift: replica ${report.replicaId} of ${name}: ${(error as Error).message}`);
        }
      }
    }
    if (nowMs - this.lastPruneMs > 3_600_000) {
      this.lastPruneMs = nowMs;
      await this.options.store.pruneDriftWindows(new Date(nowMs - this.retentionMs).toISOString());
    }
    // Gauges: each endpoint's last two windows (the current one is still filling).
    const latest = new Map<string, readonly VersionDrift[]>();
    for (const { name, drift } of endpoints) {
      const since = nowMs - drift.windowMs;
      latest.set(name, await this.versionsReport(name, drift, since, drift.sliceKey !== null));
    }
    if (this.loop.closed) return;
    this.latest = latest;
    this.options.metrics?.publish(latest);
  }

  private async poll(replica: SketchedReplica): Promise<WorkerSketchReport | null> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = AbortSignal.any([timeout, this.loop.signal]);
    try {
      const body = await this.fetchSketches(`${replica.url}${sketchesPath}`, signal);
      const report = parseWorkerSketchReport(body);
      if (report === null) this.log(`replica ${replica.id}: its sketches are not a report`);
      return report;
    } catch {
      return null; // gone, or too slow: left out of this round
    }
  }

  private log(message: string): void {
    (this.options.log ?? ((text: string) => process.stderr.write(`kiln: ${text}\n`)))(message);
  }
}

/** A worker's report as the store rows of one window: overall and one per slice. */
function windowRows(
  endpoint: string,
  windowMs: number,
  windowStart: string,
  report: WorkerSketchReport,
): NewDriftWindow[] {
  const rows: NewDriftWindow[] = [];
  const key = { endpoint, model: report.model, version: report.version, windowMs, windowStart };
  if (report.overall !== null) rows.push({ ...key, slice: null, profile: report.overall });
  for (const [slice, profile] of Object.entries(report.slices)) {
    if (slice !== '') rows.push({ ...key, slice, profile });
  }
  return rows;
}
