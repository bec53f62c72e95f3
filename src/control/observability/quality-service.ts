// Model quality in the control plane (issue 15, D): the gateways' predictions of endpoints
// with `observability.quality` come in batches and wait (migration 9) for their outcome for
// the endpoint's join window; callers report outcomes by request id; reports and gauges
// give accuracy / AUC / log-loss (classification) or MAE / RMSE (regression) per version and
// per slice value (quality-metrics.ts).
//
// Bounded: a report of predictions holds at most maxPredictionsPerReport, a batch of
// outcomes maxOutcomesPerBatch; predictions without outcome are pruned two join windows
// after they were made (the second window tells `expired` from `unknown`), joined ones after
// joinedRetentionMs. Gauges are computed at scrape time over the last metricsWindowMs, with
// at most maxSliceSeries slice values per endpoint (the rest as `_other`).

import { Counter, Gauge, type Registry } from 'prom-client';
import type { Clock } from '../../core/clock.ts';
import { kilnError } from '../../core/errors.ts';
import type { QualityConfig } from '../../store/observability-config.ts';
import type {
  JoinedPrediction,
  NewPrediction,
  OutcomeItem,
  OutcomeJoinStatus,
} from '../../store/quality-records.ts';
import type { Store } from '../../store/store.ts';
import {
  classificationQuality,
  regressionQuality,
  type QualityFigures,
} from '../../observability/quality/quality-metrics.ts';

export const maxPredictionsPerReport = 10_000;
export const maxOutcomesPerBatch = 10_000;
const maxRequestIdLength = 256;
const maxSliceLength = 128;
const joinedRetentionMs = 30 * 24 * 60 * 60 * 1000;
/** Gauges describe the joined predictions made in the last hour. */
export const metricsWindowMs = 60 * 60 * 1000;
const maxSliceSeries = 20;
/** Pruning runs at most this often per endpoint. */
const pruneEveryMs = 60_000;

export interface OutcomeReport {
  readonly endpoint: string;
  readonly counts: Record<OutcomeJoinStatus, number>;
  readonly results: readonly { readonly requestId: string; readonly status: OutcomeJoinStatus }[];
}

export type VersionQuality = QualityFigures & { readonly model: string; readonly version: number };

export interface SliceQuality {
  readonly slice: string;
  readonly overall: QualityFigures;
  readonly versions: readonly VersionQuality[];
}

export interface QualityReport {
  readonly endpoint: string;
  readonly task: QualityConfig['task'];
  readonly threshold: number | null;
  readonly since: string;
  readonly overall: QualityFigures;
  readonly versions: readonly VersionQuality[];
  /** Per slice value, when `slice` (the configured slice key) was asked; else absent. */
  readonly sliceKey?: string;
  readonly slices?: readonly SliceQuality[];
}

export interface QualityServiceOptions {
  readonly store: Store;
  readonly clock: Clock;
  readonly metrics: Registry;
}

export class QualityService {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly outcomes: Counter<'endpoint' | 'status'>;
  private readonly predictions: Counter<'endpoint'>;
  private readonly lastPruneMs = new Map<string, number>();

  constructor(options: QualityServiceOptions) {
    this.store = options.store;
    this.clock = options.clock;
    const registers = [options.metrics];
    this.outcomes = new Counter({
      name: 'kiln_outcomes_total',
      help: 'Reported outcomes by what became of them: joined, unknown (no such request id), expired (past the join window), duplicate.',
      labelNames: ['endpoint', 'status'],
      registers,
    });
    this.predictions = new Counter({
      name: 'kiln_quality_predictions_total',
      help: 'Predictions the gateways reported for joining with outcomes (endpoints with quality settings).',
      labelNames: ['endpoint'],
      registers,
    });
    const figures: [string, string, (q: QualityFigures) => number | null][] = [
      [
        'kiln_quality_accuracy',
        'Accuracy of joined classification predictions',
        (q) => (q.task === 'classification' ? q.accuracy : null),
      ],
      [
        'kiln_quality_auc',
        'ROC AUC of joined classification predictions',
        (q) => (q.task === 'classification' ? q.auc : null),
      ],
      [
        'kiln_quality_log_loss',
        'Log-loss of joined classification predictions',
        (q) => (q.task === 'classification' ? q.logLoss : null),
      ],
      [
        'kiln_quality_mae',
        'Mean absolute error of joined regression predictions',
        (q) => (q.task === 'regression' ? q.mae : null),
      ],
      [
        'kiln_quality_rmse',
        'Root mean squared error of joined regression predictions',
        (q) => (q.task === 'regression' ? q.rmse : null),
      ],
      [
        'kiln_quality_joined',
        'Joined predictions the quality figures are computed on',
        (q) => q.count,
      ],
    ];
    // One pass of the store per scrape sets every gauge: a scrape asks each gauge at once
    // (prom-client), so the first ask starts the pass and the others wait on the same one.
    const gauges: Gauge<'endpoint' | 'version' | 'slice'>[] = [];
    let pass: Promise<void> | null = null;
    const update = async (): Promise<void> => {
      const all = await this.metricSeries();
      for (const gauge of gauges) gauge.reset();
      for (const series of all) {
        figures.forEach(([, , read], i) => {
          const value = read(series.figures);
          if (value !== null) {
            gauges[i]!.labels(series.endpoint, series.version, series.slice).set(value);
          }
        });
      }
    };
    const collect = (): Promise<void> =>
      (pass ??= update().finally(() => {
        pass = null;
      }));
    figures.forEach(([name, help]) => {
      gauges.push(
        new Gauge({
          name,
          help: `${help}, per endpoint, version and slice value (slice="_all": every request), over the last hour of predictions.`,
          labelNames: ['endpoint', 'version', 'slice'],
          registers,
          collect,
        }),
      );
    });
  }

  /** A gateway's batch of predictions (POST /api/v1/quality/predictions). */
  async ingestPredictions(body: unknown): Promise<{ readonly added: number }> {
    const rows = predictionsOf(body);
    const added = await this.store.addPredictions(rows);
    const endpoints = new Set<string>();
    for (const row of rows) endpoints.add(row.endpoint);
    for (const endpoint of endpoints) {
      this.predictions.labels(endpoint).inc(rows.filter((r) => r.endpoint === endpoint).length);
      await this.prune(endpoint);
    }
    return { added };
  }

  /** POST /api/v1/endpoints/{e}/outcomes: joins each outcome, says what became of it. */
  async recordOutcomes(endpoint: string, body: unknown): Promise<OutcomeReport> {
    const config = await this.qualityOf(endpoint);
    const items = outcomesOf(endpoint, body, config.task);
    const now = this.clock.now();
    const statuses = await this.store.joinOutcomes(endpoint, items, now - config.joinWindowMs, now);
    const counts: Record<OutcomeJoinStatus, number> = {
      joined: 0,
      unknown: 0,
      expired: 0,
      duplicate: 0,
    };
    const results = items.map((item, i) => {
      const status = statuses[i]!;
      counts[status] += 1;
      return { requestId: item.requestId, status };
    });
    for (const [status, count] of Object.entries(counts)) {
      if (count > 0) this.outcomes.labels(endpoint, status).inc(count);
    }
    await this.prune(endpoint);
    return { endpoint, counts, results };
  }

  /**
   * GET /api/v1/endpoints/{e}/quality: figures over the joined predictions made since
   * `sinceMs`, overall and per version; per slice value when `slice` names the configured key.
   */
  async report(endpoint: string, sinceMs: number, slice: string | null): Promise<QualityReport> {
    const config = await this.qualityOf(endpoint);
    if (slice !== null && slice !== config.sliceKey) {
      throw kilnError('KILN_VALIDATION_FAILED', {
        reason:
          config.sliceKey === null
            ? `endpoint ${endpoint} has no slice key for quality (set observability.quality.sliceKey)`
            : `unknown slice key ${slice}: endpoint ${endpoint} slices quality by ${config.sliceKey}`,
      });
    }
    const joined = await this.store.listJoinedPredictions({ endpoint, sinceMs });
    const figures = (pairs: readonly JoinedPrediction[]): QualityFigures =>
      config.task === 'classification'
        ? classificationQuality(pairs, config.threshold)
        : regressionQuality(pairs);
    const report: QualityReport = {
      endpoint,
      task: config.task,
      threshold: config.task === 'classification' ? config.threshold : null,
      since: new Date(sinceMs).toISOString(),
      overall: figures(joined),
      versions: byVersion(joined, figures),
    };
    if (slice === null) return report;
    const slices = [...groupBy(joined, (j) => j.slice ?? '').entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([value, pairs]) => ({
        slice: value,
        overall: figures(pairs),
        versions: byVersion(pairs, figures),
      }));
    return { ...report, sliceKey: slice, slices };
  }

  private async qualityOf(endpoint: string): Promise<QualityConfig> {
    const record = await this.store.getEndpoint(endpoint);
    if (record === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
    const quality = record.config.observability?.quality;
    if (quality === undefined) {
      throw kilnError('KILN_OUTCOME_INVALID', {
        endpoint,
        reason:
          'the endpoint has no quality settings; turn them on with config.observability.quality ({"task": "classification"|"regression"}, docs/outcomes.md)',
      });
    }
    return quality;
  }

  private async prune(endpoint: string): Promise<void> {
    const now = this.clock.now();
    if (now - (this.lastPruneMs.get(endpoint) ?? -Infinity) < pruneEveryMs) return;
    this.lastPruneMs.set(endpoint, now);
    const record = await this.store.getEndpoint(endpoint);
    const window = record?.config.observability?.quality?.joinWindowMs;
    if (window === undefined) return;
    await this.store.prunePredictions(endpoint, now - 2 * window, now - joinedRetentionMs);
  }

  private async metricSeries(): Promise<
    { endpoint: string; version: string; slice: string; figures: QualityFigures }[]
  > {
    const series: { endpoint: string; version: string; slice: string; figures: QualityFigures }[] =
      [];
    const sinceMs = this.clock.now() - metricsWindowMs;
    for (const record of await this.store.listEndpoints()) {
      const config = record.config.observability?.quality;
      if (config === undefined) continue;
      const joined = await this.store.listJoinedPredictions({ endpoint: record.name, sinceMs });
      if (joined.length === 0) continue;
      const figures = (pairs: readonly JoinedPrediction[]): QualityFigures =>
        config.task === 'classification'
          ? classificationQuality(pairs, config.threshold)
          : regressionQuality(pairs);
      const bySlice = groupBy(joined, (j) => j.slice ?? '');
      // The most frequent slice values get their own series; the others share `_other`.
      const ranked = [...bySlice.entries()]
        .filter(([value]) => value !== '')
        .sort((a, b) => b[1].length - a[1].length);
      const named = new Set(ranked.slice(0, maxSliceSeries).map(([value]) => value));
      const sliceOf = (j: JoinedPrediction): string | null =>
        j.slice === null ? null : named.has(j.slice) ? j.slice : '_other';
      for (const [version, pairs] of groupBy(joined, (j) => String(j.version))) {
        series.push({ endpoint: record.name, version, slice: '_all', figures: figures(pairs) });
        const slices = groupBy(
          pairs.filter((j) => sliceOf(j) !== null),
          (j) => sliceOf(j)!,
        );
        for (const [slice, inSlice] of slices) {
          series.push({ endpoint: record.name, version, slice, figures: figures(inSlice) });
        }
      }
    }
    return series;
  }
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = groups.get(k);
    if (list === undefined) groups.set(k, [item]);
    else list.push(item);
  }
  return groups;
}

function byVersion(
  joined: readonly JoinedPrediction[],
  figures: (pairs: readonly JoinedPrediction[]) => QualityFigures,
): VersionQuality[] {
  const groups = groupBy(joined, (j) => `${j.model}\u0000${j.version}`);
  return [...groups.values()]
    .map((pairs) => ({ ...figures(pairs), model: pairs[0]!.model, version: pairs[0]!.version }))
    .sort((a, b) => (a.model === b.model ? a.version - b.version : a.model < b.model ? -1 : 1));
}

/** A gateway's report, checked whole (KILN_VALIDATION_FAILED naming the first problem). */
function predictionsOf(body: unknown): NewPrediction[] {
  const bad = (reason: string) => kilnError('KILN_VALIDATION_FAILED', { reason });
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw bad('a predictions report must be an object {gateway, predictions}');
  }
  const list = (body as { predictions?: unknown }).predictions;
  if (!Array.isArray(list)) throw bad('predictions must be an array');
  if (list.length > maxPredictionsPerReport) {
    throw bad(`a report holds at most ${maxPredictionsPerReport} predictions`);
  }
  return (list as unknown[]).map((item, i): NewPrediction => {
    const where = `predictions[${i}]`;
    if (typeof item !== 'object' || item === null) throw bad(`${where} is not an object`);
    const p = item as Record<string, unknown>;
    if (typeof p.endpoint !== 'string' || p.endpoint === '') throw bad(`${where}.endpoint`);
    if (!isRequestId(p.requestId)) throw bad(`${where}.requestId`);
    if (typeof p.model !== 'string') throw bad(`${where}.model`);
    if (typeof p.version !== 'number' || !Number.isSafeInteger(p.version))
      throw bad(`${where}.version`);
    if (typeof p.prediction !== 'number' || !Number.isFinite(p.prediction))
      throw bad(`${where}.prediction is not a finite number`);
    const slice = p.slice ?? null;
    if (slice !== null && (typeof slice !== 'string' || slice.length > maxSliceLength))
      throw bad(`${where}.slice`);
    if (typeof p.atMs !== 'number' || !Number.isSafeInteger(p.atMs)) throw bad(`${where}.atMs`);
    return {
      endpoint: p.endpoint,
      requestId: p.requestId,
      model: p.model,
      version: p.version,
      prediction: p.prediction,
      slice,
      atMs: p.atMs,
    };
  });
}

function isRequestId(value: unknown): value is string {
  return typeof value === 'string' && value !== '' && value.length <= maxRequestIdLength;
}

/** `{outcomes: [{requestId, value}]}` checked whole (KILN_OUTCOME_INVALID naming the item). */
function outcomesOf(endpoint: string, body: unknown, task: QualityConfig['task']): OutcomeItem[] {
  const bad = (reason: string) => kilnError('KILN_OUTCOME_INVALID', { endpoint, reason });
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw bad('the body must be an object {"outcomes": [{"requestId", "value"}]}');
  }
  const extra = Object.keys(body).find((key) => key !== 'outcomes');
  if (extra !== undefined) throw bad(`unknown field ${extra} (known: outcomes)`);
  const list = (body as { outcomes?: unknown }).outcomes;
  if (!Array.isArray(list)) throw bad('outcomes must be an array');
  if (list.length === 0) throw bad('outcomes is empty');
  if (list.length > maxOutcomesPerBatch) {
    throw bad(`a batch holds at most ${maxOutcomesPerBatch} outcomes (send several)`);
  }
  return (list as unknown[]).map((item, i): OutcomeItem => {
    const where = `outcomes[${i}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw bad(`${where} must be an object {requestId, value}`);
    }
    const { requestId, value, ...rest } = item as Record<string, unknown>;
    const unknown = Object.keys(rest)[0];
    if (unknown !== undefined) throw bad(`${where} has unknown field ${unknown}`);
    if (!isRequestId(requestId)) {
      throw bad(`${where}.requestId must be a request id (1-${maxRequestIdLength} characters)`);
    }
    if (task === 'classification') {
      const label = value === true ? 1 : value === false ? 0 : value;
      if (label !== 0 && label !== 1) {
        throw bad(`${where}.value must be 0 or 1 (or false/true) for a classification endpoint`);
      }
      return { requestId, value: label };
    }
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw bad(`${where}.value must be a finite number for a regression endpoint`);
    }
    return { requestId, value };
  });
}
