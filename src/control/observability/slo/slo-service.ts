// The control plane's SLO evaluator (issue 15, F; docs/slo.md).
//
//   gateways ── load reports (1 s) ──► ingest ─► pending minute sums (every endpoint:
//                                                 answers, 5xx, 200 latency sketch)
//   tick (every evaluateMs, clock injected):
//     endpoints with config.observability.slo ─► flush their minutes (latency good = 200s
//       within latencyMs, counted from the sketch) ─► store (migration 11)
//     per SLO endpoint: the last 6 h of minutes + drift readings ─► evaluateSlo (pure)
//       ─► alertTransitions (pure) ─► store (states + events, one transaction)
//       ─► webhooks (bounded queue, never waited on) and gauges
//
// The SLIs come from the gateways' load reports, which every gateway sends for every endpoint
// it serves (src/gateway/load-counter.ts): a request is counted once, when answered, at the
// gateway that answered it; 5xx (worker failures, upstream timeouts 504, no replica 503) are
// bad for availability; for latency, a 200 answered within latencyMs is good (to the sketch's
// 1 % accuracy). Refusals at the door for the caller's own reasons (4xx, 429) are neither.

import { HistogramSketch } from '../../../traffic/histogram-sketch.ts';
import { reportSketchAccuracy } from '../../../protocol/traffic/traffic-report.ts';
import type { LoadReport } from '../../../protocol/scaling/load-report.ts';
import type { Clock } from '../../../core/clock.ts';
import { kilnError } from '../../../core/errors.ts';
import type { Store } from '../../../store/store.ts';
import type { SloConfig } from '../../../store/observability-config.ts';
import type { SliMinuteRow, SloAlertEvent, SloAlertRecord } from '../../../store/slo-records.ts';
import type { Registry } from 'prom-client';
import { longestBurnWindowMs, type SliMinute } from '../../../observability/slo/burn-rate.ts';
import {
  evaluateSlo,
  type DriftReading,
  type SliStatus,
} from '../../../observability/slo/slo-evaluation.ts';
import { alertTransitions } from '../../../observability/slo/alert-transitions.ts';
import { prometheusRules } from '../../../observability/slo/prometheus-rules.ts';
import { SloMetrics } from './slo-metrics.ts';
import { WebhookSender } from './webhook-sender.ts';

const minuteMs = 60_000;
/** The error-budget period reported by status (and how long SLI minutes are kept, + a day). */
export const budgetPeriodMs = 30 * 24 * 3_600_000;
const pruneEveryMs = 3_600_000;

/** The drift part's latest PSI per feature/output of an endpoint (drift's service). */
export type DriftReadings = (endpoint: string) => Promise<readonly DriftReading[]>;

/**
 * The drift service's latest round for an endpoint (`ObservabilityServices.drift.latestDrift`,
 * issue 15 C), read structurally so this part does not import it; [] without one.
 */
export function latestDriftOf(services: object, endpoint: string): unknown {
  const drift = (services as { drift?: { latestDrift?: (endpoint: string) => unknown } }).drift;
  return typeof drift?.latestDrift === 'function' ? drift.latestDrift(endpoint) : [];
}

export interface SloServiceOptions {
  readonly store: Store;
  readonly clock: Clock;
  /** The control plane's registry (GET /metrics). */
  readonly metrics: Registry;
  /** Absent: no drift readings (a drift ceiling never fires). */
  readonly drift?: DriftReadings;
  /** Default: a WebhookSender with its defaults, logging through `log`. */
  readonly webhooks?: WebhookSender;
  /** How often the SLOs are evaluated. Default 10 000. */
  readonly evaluateMs?: number;
  readonly log?: (line: string) => void;
}

interface PendingMinute {
  requests: number;
  serverErrors: number;
  readonly latency: HistogramSketch;
}

export interface SloBudget {
  readonly sli: string;
  readonly period: string;
  readonly total: number;
  readonly bad: number;
  /** Share of the period's error budget left (negative: overspent); null: no traffic. */
  readonly remaining: number | null;
}

export interface SloStatus {
  readonly endpoint: string;
  readonly slo: SloConfig;
  readonly evaluatedAt: string;
  readonly slis: readonly SliStatus[];
  readonly budgets: readonly SloBudget[];
  readonly alerts: readonly SloAlertRecord[];
  readonly events: readonly SloAlertEvent[];
}

/** The payload POSTed to webhooks for one alert transition. */
export interface SloWebhookPayload {
  readonly kind: 'kiln-slo-alert';
  readonly endpoint: string;
  readonly alert: string;
  readonly severity: string;
  readonly state: 'firing' | 'resolved';
  readonly at: string;
  readonly summary: string;
  readonly detail: unknown;
}

export class SloService {
  readonly metrics: SloMetrics;
  readonly webhooks: WebhookSender;
  /** `${endpoint}\n${minuteMs}` → sums not yet in the store. */
  private readonly pending = new Map<string, PendingMinute>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private closed = false;
  private lastPruneMs = 0;
  private readonly said = new Set<string>();

  constructor(private readonly options: SloServiceOptions) {
    this.metrics = new SloMetrics(options.metrics);
    this.webhooks =
      options.webhooks ??
      new WebhookSender({
        ...(options.log === undefined ? {} : { log: options.log }),
        onOutcome: (outcome) => this.metrics.delivery(outcome),
      });
  }

  start(): void {
    if (this.timer !== null || this.closed) return;
    this.timer = setInterval(() => {
      // A failed evaluation (the store busy, say) is logged once; the next tick tries again.
      this.tick().catch((error: unknown) => this.sayOnce('tick', `slo: ${String(error)}`));
    }, this.options.evaluateMs ?? 10_000);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
    // What the gateways reported since the last tick is kept for the next control plane.
    try {
      const slos = new Map<string, SloConfig>();
      for (const endpoint of await this.options.store.listEndpoints()) {
        const slo = endpoint.config.observability?.slo;
        if (slo !== undefined) slos.set(endpoint.name, slo);
      }
      await this.flush(slos, true);
    } catch (error) {
      this.options.log?.(`slo: the last SLI minutes were not saved: ${String(error)}`);
    }
    this.webhooks.close();
  }

  /** A gateway's checked load report: its answers are added to the minute's sums. */
  ingest(report: LoadReport): void {
    const startMs = Date.parse(report.windowStart);
    const minute = Math.floor(startMs / minuteMs) * minuteMs;
    for (const load of report.endpoints) {
      if (load.completed === 0) continue;
      const key = `${load.endpoint}\n${minute}`;
      let sums = this.pending.get(key);
      if (sums === undefined) {
        sums = { requests: 0, serverErrors: 0, latency: new HistogramSketch(reportSketchAccuracy) };
        this.pending.set(key, sums);
      }
      sums.requests += load.completed;
      sums.serverErrors += load.serverErrors ?? 0;
      const latency = HistogramSketch.fromSnapshot(load.latencyMs);
      if (latency.ok) sums.latency.merge(latency.sketch);
    }
  }

  /** One evaluation of every SLO now (the timer's work; tests call it on their clock). */
  tick(): Promise<void> {
    const run = this.running.then(() => this.evaluateAll());
    this.running = run.catch(() => undefined);
    return run;
  }

  /** An endpoint's SLO now: SLIs per window, budgets, alert states, recent transitions. */
  async status(endpoint: string): Promise<SloStatus> {
    const record = await this.options.store.getEndpoint(endpoint);
    if (record === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
    const slo = record.config.observability?.slo;
    if (slo === undefined) throw kilnError('KILN_SLO_NOT_SET', { endpoint });
    await this.flush(new Map([[endpoint, slo]]), false);
    const nowMs = this.options.clock.now();
    const minutes = await this.minutes(endpoint, nowMs - budgetPeriodMs);
    const evaluation = evaluateSlo(slo, minutes, nowMs);
    const budgets: SloBudget[] = evaluation.slis.map((sli) => {
      const total = minutes.reduce(
        (sum, m) => sum + (sli.sli === 'availability' ? m.requests : m.latencyTotal),
        0,
      );
      const bad = minutes.reduce(
        (sum, m) =>
          sum + (sli.sli === 'availability' ? m.serverErrors : m.latencyTotal - m.latencyGood),
        0,
      );
      const allowed = (1 - sli.objective) * total;
      return {
        sli: sli.sli,
        period: '30d',
        total,
        bad,
        remaining: total === 0 ? null : 1 - bad / allowed,
      };
    });
    return {
      endpoint,
      slo,
      evaluatedAt: new Date(nowMs).toISOString(),
      slis: evaluation.slis,
      budgets,
      alerts: await this.options.store.listSloAlerts(endpoint),
      events: await this.options.store.listSloAlertEvents({ endpoint, limit: 20 }),
    };
  }

  /** The Prometheus rules of every endpoint with an SLO (or of one). */
  async rules(endpoint?: string): Promise<string> {
    const endpoints = await this.options.store.listEndpoints();
    if (endpoint !== undefined) {
      const record = endpoints.find((e) => e.name === endpoint);
      if (record === undefined) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint });
      const slo = record.config.observability?.slo;
      if (slo === undefined) throw kilnError('KILN_SLO_NOT_SET', { endpoint });
      return prometheusRules([{ endpoint, slo }]);
    }
    return prometheusRules(
      endpoints.flatMap((e) => {
        const slo = e.config.observability?.slo;
        return slo === undefined ? [] : [{ endpoint: e.name, slo }];
      }),
    );
  }

  // ------------------------------------------------------------ the tick

  private async evaluateAll(): Promise<void> {
    const store = this.options.store;
    const nowMs = this.options.clock.now();
    const slos = new Map<string, SloConfig>();
    for (const endpoint of await store.listEndpoints()) {
      const slo = endpoint.config.observability?.slo;
      if (slo !== undefined) slos.set(endpoint.name, slo);
    }
    await this.flush(slos, true);
    const states = new Map<string, SloAlertRecord[]>();
    for (const state of await store.listSloAlerts()) {
      const list = states.get(state.endpoint) ?? [];
      list.push(state);
      states.set(state.endpoint, list);
    }
    const names = new Set([...slos.keys(), ...states.keys()]);
    for (const endpoint of names) {
      try {
        await this.evaluateOne(endpoint, slos.get(endpoint), states.get(endpoint) ?? [], nowMs);
      } catch (error) {
        this.sayOnce(endpoint, `slo ${endpoint}: evaluation failed: ${String(error)}`);
      }
    }
    for (const endpoint of this.metrics.endpoints()) {
      if (!slos.has(endpoint)) this.metrics.forget(endpoint);
    }
    if (nowMs - this.lastPruneMs >= pruneEveryMs) {
      this.lastPruneMs = nowMs;
      await store.pruneSliMinutes(new Date(nowMs - budgetPeriodMs - 86_400_000).toISOString());
    }
  }

  private async evaluateOne(
    endpoint: string,
    slo: SloConfig | undefined,
    current: readonly SloAlertRecord[],
    nowMs: number,
  ): Promise<void> {
    const at = new Date(nowMs).toISOString();
    let conditions: ReturnType<typeof evaluateSlo>['conditions'] = [];
    if (slo !== undefined) {
      const minutes = await this.minutes(endpoint, nowMs - longestBurnWindowMs);
      const drift =
        slo.driftPsiCeiling !== null && this.options.drift !== undefined
          ? await this.options.drift(endpoint)
          : [];
      const evaluation = evaluateSlo(slo, minutes, nowMs, drift);
      conditions = evaluation.conditions;
      for (const sli of evaluation.slis) {
        for (const window of sli.windows) {
          this.metrics.burnRate(endpoint, sli.sli, window.window, window.burnRate);
        }
      }
      for (const condition of conditions) {
        this.metrics.alert(endpoint, condition.alert, condition.severity, condition.active);
      }
    }
    const { upserts, events } = alertTransitions(endpoint, current, conditions, at);
    if (upserts.length > 0 || events.length > 0) {
      await this.options.store.applySloAlerts(upserts, events);
    }
    // Resolutions of an SLO removed go to no webhook: its list went with it.
    for (const event of events) {
      this.options.log?.(`slo ${endpoint}: ${event.alert} ${event.state}: ${event.summary}`);
      const payload: SloWebhookPayload = { kind: 'kiln-slo-alert', ...event };
      for (const url of slo?.webhooks ?? []) this.webhooks.send(url, payload);
    }
  }

  /**
   * Writes the pending minutes of the endpoints in `slos`; with `dropOthers` (the tick: `slos`
   * is every SLO) the other endpoints' sums are dropped, else (status of one) kept.
   */
  private async flush(slos: ReadonlyMap<string, SloConfig>, dropOthers: boolean): Promise<void> {
    const rows: SliMinuteRow[] = [];
    for (const [key, sums] of this.pending) {
      const [endpoint = '', minute = '0'] = key.split('\n');
      const slo = slos.get(endpoint);
      if (slo === undefined) {
        if (dropOthers) this.pending.delete(key);
        continue;
      }
      this.pending.delete(key);
      const latencyTotal = sums.latency.count;
      const latencyGood =
        slo.latencyMs === null
          ? latencyTotal
          : (sums.latency.countsInBins([slo.latencyMs])[0] ?? 0);
      rows.push({
        endpoint,
        minuteStart: new Date(Number(minute)).toISOString(),
        requests: sums.requests,
        serverErrors: Math.min(sums.serverErrors, sums.requests),
        latencyTotal,
        latencyGood,
      });
    }
    if (rows.length > 0) await this.options.store.mergeSliMinutes(rows);
  }

  private async minutes(endpoint: string, sinceMs: number): Promise<SliMinute[]> {
    const since = new Date(Math.floor(sinceMs / minuteMs) * minuteMs).toISOString();
    return (await this.options.store.listSliMinutes({ endpoint, since })).map((row) => ({
      minuteMs: Date.parse(row.minuteStart),
      requests: row.requests,
      serverErrors: row.serverErrors,
      latencyTotal: row.latencyTotal,
      latencyGood: row.latencyGood,
    }));
  }

  private sayOnce(key: string, line: string): void {
    if (this.said.has(key)) return;
    this.said.add(key);
    this.options.log?.(line);
  }
}
