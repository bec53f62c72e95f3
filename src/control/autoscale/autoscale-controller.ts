// The autoscale controller: once a second, for every endpoint with an autoscaling policy,
// builds a ScaleSample from what the gateways and the workers report, asks that endpoint's
// ScalingPolicyRunner (Kiln's Autoscaler) for a replica count and, when it changes, writes
// it to the store with its event; the reconciler runs the stored count.
//
//   gateways ── POST /api/v1/scaling/reports ──► ingest ─► GatewayDemand ─┬─► sample ─┐
//   workers  ── GET /kiln/v1/load ◄── poller ──► WorkerLoadSource ────────┘           │
//   reconciler (ready / starting replicas, start durations) ─────────────────────────┤
//   store demand rows ─► forecaster (predictive, optional) ─────────────────────────┤
//                                                                                    ▼
//              runner.observe(sample); runner.decide(now, current, forecast) ─► store.setEndpointScale
//                                                                               (+ event) ─► reconciler.trigger()
//   gateway activator ── POST /api/v1/endpoints/{e}/wake ──► wake: 0 → max(1, min) at once
//
// Every count write is conditional on the count read (expectReplicas): a wake, a manual
// change or another control plane writing meanwhile wins, and the next tick decides again
// from what is stored. The clock is injected; tests call tick() themselves.

import { kilnError, KilnError } from '../../core/errors.ts';
import type { Clock } from '../../core/clock.ts';
import type { AutoscalePolicy } from '../../autoscale/autoscale-policy.ts';
import {
  Autoscaler,
  type DemandForecast,
  type ScaleDecision,
  type ScalingPolicyRunner,
} from '../../autoscale/autoscaler.ts';
import type { ScaleSample } from '../../autoscale/scale-signals.ts';
import { createDemandForecaster } from '../../autoscale/demand-forecaster.ts';
import type { LoadReport } from '../../protocol/scaling/load-report.ts';
import type { EndpointRecord } from '../../store/serving-records.ts';
import type {
  DemandRow,
  EndpointScaleRecord,
  ScaleEventKind,
} from '../../store/scaling-records.ts';
import type { Store } from '../../store/store.ts';
import { AutoscaleMetrics } from './autoscale-metrics.ts';
import { rewriteEndpointConfig } from './endpoint-config-write.ts';
import { resolveEndpointPolicy } from './scaled-endpoint.ts';
import { latencySummary, quantileOf, type ScaleStatus } from './scale-status.ts';

export type { ScaleStatus } from './scale-status.ts';
import { GatewayDemand } from './gateway-demand.ts';
import { noWorkerLoad, type WorkerLoadSource } from './worker-load-source.ts';

/** What the controller needs of the reconciler. */
export interface ScaledReplicas {
  /** Ready and starting replicas of the endpoint's current (stable) revision. */
  replicaCounts(endpoint: EndpointRecord): { readonly ready: number; readonly starting: number };
  /** A count changed: reconcile soon. */
  trigger(): Promise<void>;
}

/** The predictive part's input: the stored demand of the endpoint, and when to look ahead. */
export type Forecaster = (
  policy: AutoscalePolicy,
  demand: readonly DemandRow[],
  nowMs: number,
  startupMs: number,
) => DemandForecast | undefined;

export interface AutoscaleControllerOptions {
  readonly store: Store;
  readonly clock: Clock;
  readonly replicas: ScaledReplicas;
  /** Worker-reported load (worker-load-poller.ts); default none (those signals are null). */
  readonly workerLoad?: WorkerLoadSource;
  /** Default: Kiln's Autoscaler. The simulator and tests may bring another runner. */
  readonly makeRunner?: (
    policy: AutoscalePolicy,
    lastDemandAtMs: number | undefined,
  ) => ScalingPolicyRunner;
  /** Default: the demand profile learned from the stored history (demand-forecaster.ts). */
  readonly forecaster?: Forecaster;
  readonly metrics?: AutoscaleMetrics;
  /** Default 1000. */
  readonly tickMs?: number;
  /** Gathered demand is added to the store's minute rows this often. Default 10 000. */
  readonly demandFlushMs?: number;
  /** Stored demand is re-read for the forecaster this often. Default 300 000. */
  readonly forecastRefreshMs?: number;
  readonly log?: (message: string) => void;
}

/** A replica's start-up time when none was measured and the policy names none. */
export const defaultStartupMs = 30_000;
/** Start durations kept per endpoint (the p90 of these is its start-up time). */
const startSamplesKept = 20;
/** Demand rows kept: 35 days (the profile learns from 14 by default). */
const demandRetentionMs = 35 * 24 * 3600_000;
/** A controller just started applies no scale to zero this long (gateways report each 1 s). */
const restartGraceMs = 5_000;
/** lastDemandAt is written back at most this often while the count holds. */
const lastDemandWriteMs = 10_000;
/** What GET …/scale measures latency over when not asked otherwise. */
const defaultLatencyWindowMs = 3600_000;

/** Signals whose samples need the workers' own load (slo: its service time is busy CPU). */
const workerSignals: ReadonlySet<AutoscalePolicy['signal']> = new Set([
  'queue-depth',
  'cpu',
  'accelerator',
  'custom',
  'slo',
]);

interface LastDecision {
  readonly atMs: number;
  readonly decision: ScaleDecision;
  readonly sample: ScaleSample;
}

interface EndpointState {
  readonly policyKey: string;
  readonly runner: ScalingPolicyRunner;
  last: LastDecision | null;
  /** When it was last woken from zero (a wake is demand: no scale to zero within idleMs). */
  wokeAtMs: number | null;
  /** The lastDemandAt last written to the store (ms). */
  savedDemandMs: number | undefined;
}

interface ForecastCache {
  readonly readAtMs: number;
  readonly rows: readonly DemandRow[];
}

/** When the runner last saw demand (Kiln's Autoscaler says; other runners may not). */
function lastDemandOf(runner: ScalingPolicyRunner): number | undefined {
  const seen = (runner as { readonly lastDemandMs?: unknown }).lastDemandMs;
  return typeof seen === 'number' ? seen : undefined;
}

function clamp(n: number, policy: AutoscalePolicy): number {
  return Math.min(policy.maxReplicas, Math.max(policy.minReplicas, n));
}

export class AutoscaleController {
  readonly metrics: AutoscaleMetrics;
  private readonly demand = new GatewayDemand();
  private readonly reportListeners: ((report: LoadReport) => void)[] = [];
  private readonly states = new Map<string, EndpointState>();
  private readonly startDurations = new Map<string, number[]>();
  /** Endpoints woken from zero whose first replica is not ready yet: since when. */
  private readonly coldStarts = new Map<string, number>();
  private readonly forecasts = new Map<string, ForecastCache>();
  private readonly workerLoad: WorkerLoadSource;
  private readonly makeRunner: (
    policy: AutoscalePolicy,
    lastDemandAtMs: number | undefined,
  ) => ScalingPolicyRunner;
  /** Its start: no scale to zero before the gateways have reported once (restartGraceMs). */
  private readonly startedAtMs: number;
  private readonly forecaster: Forecaster;
  private lastFlushMs: number;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private closed = false;
  /** Failures said once per kind, not every second. */
  private readonly said = new Set<string>();

  constructor(private readonly options: AutoscaleControllerOptions) {
    this.metrics = options.metrics ?? new AutoscaleMetrics();
    this.workerLoad = options.workerLoad ?? noWorkerLoad;
    this.makeRunner =
      options.makeRunner ??
      ((policy, lastDemandAtMs) =>
        new Autoscaler(policy, lastDemandAtMs === undefined ? {} : { lastDemandAtMs }));
    this.startedAtMs = options.clock.now();
    this.forecaster = options.forecaster ?? createDemandForecaster();
    this.lastFlushMs = options.clock.now();
  }

  start(): void {
    if (this.timer !== null || this.closed) return;
    this.timer = setInterval(() => void this.tick(), this.options.tickMs ?? 1000);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
    await this.flushDemand();
  }

  // ------------------------------------------------------------ inputs

  /** A gateway's checked report (load-report-check.ts). */
  ingest(report: LoadReport): void {
    this.demand.add(report, this.options.clock.now());
    for (const listener of this.reportListeners) listener(report);
  }

  /** Also hands every checked report to `listener` (issue 15: the SLO service's SLIs). */
  onReport(listener: (report: LoadReport) => void): void {
    this.reportListeners.push(listener);
  }

  /**
   * A replica of `endpoint` became ready `startMs` after its launch (the reconciler calls
   * this): its start-up time for the predictive part, and the end of a cold start.
   */
  replicaReady(endpoint: string, startMs: number): void {
    const durations = this.startDurations.get(endpoint) ?? [];
    durations.push(startMs);
    if (durations.length > startSamplesKept) durations.shift();
    this.startDurations.set(endpoint, durations);
    const wokeAt = this.coldStarts.get(endpoint);
    if (wokeAt !== undefined) {
      this.coldStarts.delete(endpoint);
      this.metrics.coldStart(endpoint, Math.max(0, this.options.clock.now() - wokeAt) / 1000);
    }
  }

  /** The start-up time the predictive part looks ahead by. */
  startupMs(endpoint: string, policy: AutoscalePolicy | null): number {
    return (
      policy?.predictive?.startupMs ??
      quantileOf(this.startDurations.get(endpoint) ?? [], 0.9) ??
      defaultStartupMs
    );
  }

  // ------------------------------------------------------------ wake

  /**
   * Wakes an endpoint at zero replicas: max(1, minReplicas) at once, without waiting for a
   * tick. Idempotent: an endpoint already running (or asked to) is left as it is. An endpoint
   * without a policy has nothing to wake. Returns its state after.
   */
  async wake(name: string): Promise<ScaleStatus> {
    const { store, clock } = this.options;
    const endpoint = await store.getEndpoint(name);
    if (endpoint === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint: name });
    const policy = endpoint.config.autoscale;
    if (policy !== undefined) {
      const state = this.stateOf(endpoint, policy, null);
      state.wokeAtMs = clock.now();
      // A write that loses to another (a tick, another wake) reads again: at most a few.
      for (let attempt = 0; attempt < 5; attempt++) {
        const scale = await this.ensureScale(endpoint, policy);
        if (scale.replicas > 0) break;
        const to = Math.max(1, policy.minReplicas);
        try {
          await this.write(endpoint.name, scale, to, {
            kind: 'wake',
            mode: 'wake',
            reason: 'a gateway holds requests for it',
          });
          break;
        } catch (error) {
          if (!(error instanceof KilnError && error.code === 'KILN_SCALE_CONFLICT')) throw error;
        }
      }
    }
    return this.status(name);
  }

  // ------------------------------------------------------------ the loop

  /** One decision round over every autoscaled endpoint; rounds never overlap. */
  tick(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.running !== null) return this.running;
    this.running = (async () => {
      try {
        await this.round();
      } catch (error) {
        this.sayOnce('round', `autoscale: ${String((error as Error).stack ?? error)}`);
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  private async round(): Promise<void> {
    const { store, clock } = this.options;
    const nowMs = clock.now();
    const endpoints = (await store.listEndpoints()).filter((e) => e.config.autoscale);
    const scales = new Map((await store.listEndpointScales()).map((s) => [s.endpoint, s]));
    this.workerLoad.watch(
      new Set(
        endpoints
          .filter((e) => workerSignals.has(e.config.autoscale?.signal ?? 'concurrency'))
          .map((e) => e.name),
      ),
    );
    const names = new Set(endpoints.map((e) => e.name));
    for (const name of this.states.keys()) {
      if (names.has(name)) continue;
      this.states.delete(name);
      this.coldStarts.delete(name);
      this.forecasts.delete(name);
      this.metrics.forget(name);
    }
    let changed = false;
    for (const endpoint of endpoints) {
      const policy = endpoint.config.autoscale;
      if (policy === undefined) continue;
      try {
        changed =
          (await this.decideFor(endpoint, policy, scales.get(endpoint.name) ?? null, nowMs)) ||
          changed;
      } catch (error) {
        if (error instanceof KilnError && error.code === 'KILN_SCALE_CONFLICT') continue;
        if (error instanceof KilnError && error.code === 'KILN_ENDPOINT_NOT_FOUND') continue;
        this.sayOnce(`decide ${endpoint.name}`, `autoscale ${endpoint.name}: ${String(error)}`);
      }
    }
    if (changed) void this.options.replicas.trigger();
    if (nowMs - this.lastFlushMs >= (this.options.demandFlushMs ?? 10_000)) {
      this.lastFlushMs = nowMs;
      await this.flushDemand();
    }
  }

  /** One endpoint's decision; true when its count changed. */
  private async decideFor(
    endpoint: EndpointRecord,
    policy: AutoscalePolicy,
    stored: EndpointScaleRecord | null,
    nowMs: number,
  ): Promise<boolean> {
    const scale = stored ?? (await this.ensureScale(endpoint, policy));
    const state = this.stateOf(endpoint, policy, scale);
    const sample = this.sampleOf(endpoint, nowMs);
    state.runner.observe(sample);
    const forecast =
      policy.predictive === undefined ? undefined : await this.forecastFor(endpoint, policy, nowMs);
    const decision = state.runner.decide(nowMs, scale.replicas, forecast);
    state.last = { atMs: nowMs, decision, sample };
    this.metrics.state(
      endpoint.name,
      scale.replicas,
      sample.readyReplicas,
      decision.mode === 'panic',
    );
    let to = decision.replicas;
    // Just woken: the requests that woke it may not be in a report yet.
    const idleMs = policy.scaleToZero?.idleMs ?? 0;
    if (to === 0 && state.wokeAtMs !== null && nowMs - state.wokeAtMs < idleMs) to = scale.replicas;
    // Just started: demand still running may not be reported yet.
    if (to === 0 && nowMs - this.startedAtMs < restartGraceMs) to = scale.replicas;
    const lastDemandMs = lastDemandOf(state.runner);
    if (to === scale.replicas) {
      // Kept current in the store (a restarted controller's idle period starts from it).
      if (
        lastDemandMs !== undefined &&
        lastDemandMs - (state.savedDemandMs ?? 0) >= lastDemandWriteMs
      ) {
        await this.options.store.setEndpointScale({
          endpoint: endpoint.name,
          replicas: scale.replicas,
          reason: scale.reason,
          expectReplicas: scale.replicas,
          lastDemandAt: new Date(lastDemandMs).toISOString(),
        });
        state.savedDemandMs = lastDemandMs;
      }
      return false;
    }
    const up = to > scale.replicas;
    const kind: ScaleEventKind =
      to === 0 ? 'to-zero' : scale.replicas === 0 ? 'wake' : up ? 'scale-up' : 'scale-down';
    const mode =
      to === 0
        ? 'idle'
        : up && decision.predictive > decision.reactive && decision.predictive >= to
          ? 'predictive'
          : decision.mode;
    await this.write(
      endpoint.name,
      scale,
      to,
      { kind, mode, reason: decision.reason },
      lastDemandMs,
    );
    if (lastDemandMs !== undefined) state.savedDemandMs = lastDemandMs;
    this.metrics.state(endpoint.name, to, sample.readyReplicas, decision.mode === 'panic');
    return true;
  }

  /** Writes a count against the one read, with its event; a cold start starts at 0 → n. */
  private async write(
    endpoint: string,
    from: EndpointScaleRecord,
    to: number,
    event: { kind: ScaleEventKind; mode: string; reason: string },
    lastDemandMs?: number,
  ): Promise<EndpointScaleRecord> {
    const written = await this.options.store.setEndpointScale({
      endpoint,
      replicas: to,
      reason: event.reason,
      expectReplicas: from.replicas,
      ...(lastDemandMs === undefined ? {} : { lastDemandAt: new Date(lastDemandMs).toISOString() }),
      event: { endpoint, from: from.replicas, to, ...event },
    });
    this.metrics.event(endpoint, event.kind);
    if (from.replicas === 0 && to > 0) this.coldStarts.set(endpoint, this.options.clock.now());
    if (to === 0) this.coldStarts.delete(endpoint);
    if (event.kind === 'wake') void this.options.replicas.trigger();
    return written;
  }

  /**
   * The stored count, created when the endpoint has none yet (its policy was set on an
   * endpoint deployed before, or the record was lost): the deployed count, within min/max.
   */
  private async ensureScale(
    endpoint: EndpointRecord,
    policy: AutoscalePolicy,
  ): Promise<EndpointScaleRecord> {
    const { store } = this.options;
    const found = await store.getEndpointScale(endpoint.name);
    if (found !== null) return found;
    const replicas = clamp(endpoint.replicas, policy);
    try {
      return await store.setEndpointScale({
        endpoint: endpoint.name,
        replicas,
        reason: `autoscaling from the deployed count (${endpoint.replicas})`,
        event: {
          endpoint: endpoint.name,
          kind: 'manual',
          from: endpoint.replicas,
          to: replicas,
          mode: 'manual',
          reason: 'autoscaling started',
        },
      });
    } catch (error) {
      const again = await store.getEndpointScale(endpoint.name);
      if (again !== null) return again;
      throw error;
    }
  }

  /** `scale`: the stored count, whose lastDemandAt a new runner starts from. */
  private stateOf(
    endpoint: EndpointRecord,
    policy: AutoscalePolicy,
    scale: EndpointScaleRecord | null,
  ): EndpointState {
    const policyKey = JSON.stringify(policy);
    const known = this.states.get(endpoint.name);
    if (known !== undefined && known.policyKey === policyKey) return known;
    // A new policy: a new runner (its windows were about the old target); the idle period
    // carries on from the last demand seen, by the old runner or as stored.
    const stored = scale?.lastDemandAt == null ? undefined : Date.parse(scale.lastDemandAt);
    // At zero with no demand ever stored (deployed at 0): idle since forever, not since now.
    const never = scale?.replicas === 0 ? 0 : undefined;
    const lastDemandAtMs =
      (known === undefined ? undefined : lastDemandOf(known.runner)) ?? stored ?? never;
    const state: EndpointState = {
      policyKey,
      runner: this.makeRunner(policy, lastDemandAtMs),
      last: null,
      wokeAtMs: known?.wokeAtMs ?? null,
      savedDemandMs: stored,
    };
    this.states.set(endpoint.name, state);
    return state;
  }

  private sampleOf(endpoint: EndpointRecord, nowMs: number): ScaleSample {
    const counts = this.options.replicas.replicaCounts(endpoint);
    const gateways = this.demand.now(endpoint.name, nowMs);
    const load = this.workerLoad.latest(endpoint.name);
    return {
      atMs: nowMs,
      readyReplicas: counts.ready,
      startingReplicas: counts.starting,
      concurrency: gateways.concurrency,
      qps: gateways.qps,
      completed: gateways.completed,
      held: gateways.held,
      queueDepth: load?.queueDepth ?? null,
      cpu: load?.cpu ?? null,
      slotsPerReplica: load?.threads ?? null,
      accelerator: load?.accelerator ?? null,
      custom: load?.custom ?? {},
    };
  }

  private async forecastFor(
    endpoint: EndpointRecord,
    policy: AutoscalePolicy,
    nowMs: number,
  ): Promise<DemandForecast | undefined> {
    const predictive = policy.predictive;
    if (predictive === undefined) return undefined;
    let cache = this.forecasts.get(endpoint.name);
    if (
      cache === undefined ||
      nowMs - cache.readAtMs >= (this.options.forecastRefreshMs ?? 300_000)
    ) {
      const since = new Date(nowMs - predictive.historyDays * 24 * 3600_000).toISOString();
      cache = {
        readAtMs: nowMs,
        rows: await this.options.store.listDemand({ endpoint: endpoint.name, since }),
      };
      this.forecasts.set(endpoint.name, cache);
    }
    return this.forecaster(policy, cache.rows, nowMs, this.startupMs(endpoint.name, policy));
  }

  /** Adds the demand gathered since the last flush to the store; drops what is too old. */
  private async flushDemand(): Promise<void> {
    const rows = this.demand.drain();
    if (rows.length === 0) return;
    const { store, clock } = this.options;
    try {
      await store.mergeDemand(rows);
      await store.pruneDemand(new Date(clock.now() - demandRetentionMs).toISOString());
    } catch (error) {
      // Kept for the next flush (a busy store): demand history has gaps only if it stays down.
      if (error instanceof KilnError && error.retryable) this.demand.restore(rows);
      this.sayOnce('demand', `autoscale: storing demand: ${String(error)}`);
    }
  }

  // ------------------------------------------------------------ policy changes

  /**
   * Puts a policy in force (`kiln autoscale set`): checked and completed (KILN_AUTOSCALE_INVALID
   * naming the field), written into the endpoint's config (not its worker revision: nothing
   * restarts), and its count set within the new min/max — from the running count when it was
   * autoscaled already, else from the deployed one.
   */
  async setPolicy(name: string, input: unknown): Promise<ScaleStatus> {
    const check = resolveEndpointPolicy(input);
    if (!check.ok)
      throw kilnError('KILN_AUTOSCALE_INVALID', { endpoint: name, reason: check.reason });
    const policy = check.policy;
    const endpoint = await rewriteEndpointConfig(this.options.store, name, (config) => {
      // As a deploy refuses it (pool-deploy-check.ts): a pool's workers are its capacity.
      if (config.pool !== undefined) {
        throw kilnError('KILN_AUTOSCALE_INVALID', {
          endpoint: name,
          reason: `it is served by the workers of pool ${config.pool}, which has no autoscaling (size it with kiln pools create ${config.pool} --workers N, or move it off with kiln deploy --no-pool)`,
        });
      }
      return { ...config, autoscale: policy };
    });
    const { store } = this.options;
    const current = await store.getEndpointScale(name);
    const base =
      endpoint.before.config.autoscale !== undefined && current !== null
        ? current.replicas
        : endpoint.before.replicas;
    const to = clamp(base, policy);
    await store.setEndpointScale({
      endpoint: name,
      replicas: to,
      reason: `autoscaling policy set (${policy.minReplicas}..${policy.maxReplicas} on ${policy.signal})`,
      event: {
        endpoint: name,
        kind: 'manual',
        from: current?.replicas ?? endpoint.before.replicas,
        to,
        mode: 'manual',
        reason: 'autoscaling policy set',
      },
    });
    this.metrics.event(name, 'manual');
    void this.options.replicas.trigger();
    return this.status(name);
  }

  /**
   * Takes the policy off (`kiln autoscale clear`): the endpoint then runs a fixed count, the
   * one it runs now (at least 1), so clearing never changes what serves.
   */
  async clearPolicy(name: string): Promise<ScaleStatus> {
    const { store } = this.options;
    const current = await store.getEndpointScale(name);
    const endpoint = await rewriteEndpointConfig(
      this.options.store,
      name,
      ({ autoscale: _dropped, ...config }) => config,
      (before) =>
        before.config.autoscale === undefined || current === null
          ? before.replicas
          : Math.max(1, current.replicas),
    );
    if (endpoint.before.config.autoscale !== undefined) {
      await store.setEndpointScale({
        endpoint: name,
        replicas: endpoint.after.replicas,
        reason: 'autoscaling cleared',
        event: {
          endpoint: name,
          kind: 'manual',
          from: current?.replicas ?? endpoint.before.replicas,
          to: endpoint.after.replicas,
          mode: 'manual',
          reason: 'autoscaling cleared: fixed count',
        },
      });
      this.metrics.event(name, 'manual');
      this.metrics.forget(name);
    }
    this.states.delete(name);
    void this.options.replicas.trigger();
    return this.status(name);
  }

  // ------------------------------------------------------------ what users see

  async status(
    name: string,
    options: { readonly latencySince?: string } = {},
  ): Promise<ScaleStatus> {
    const { store, clock } = this.options;
    const endpoint = await store.getEndpoint(name);
    if (endpoint === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint: name });
    const policy = endpoint.config.autoscale ?? null;
    const scale = policy === null ? null : await store.getEndpointScale(name);
    const counts = this.options.replicas.replicaCounts(endpoint);
    const state = policy === null ? undefined : this.states.get(name);
    const last = state?.last ?? null;
    const measured = this.startDurations.get(name) ?? [];
    const since =
      options.latencySince ?? new Date(clock.now() - defaultLatencyWindowMs).toISOString();
    return {
      endpoint: name,
      autoscale: policy,
      replicas:
        scale?.replicas ?? (policy === null ? endpoint.replicas : clamp(endpoint.replicas, policy)),
      readyReplicas: counts.ready,
      startingReplicas: counts.starting,
      mode: policy === null ? 'fixed' : (last?.decision.mode ?? 'stable'),
      reason: scale?.reason ?? null,
      lastDemandAt: scale?.lastDemandAt ?? null,
      lastDecision:
        last === null
          ? null
          : {
              at: new Date(last.atMs).toISOString(),
              replicas: last.decision.replicas,
              reactive: last.decision.reactive,
              predictive: last.decision.predictive,
              mode: last.decision.mode,
              reason: last.decision.reason,
            },
      signals: last?.sample ?? null,
      startup: {
        measuredP90Ms: quantileOf(measured, 0.9),
        samples: measured.length,
        usedMs: this.startupMs(name, policy),
      },
      events: await store.listScaleEvents({ endpoint: name, limit: 10 }),
      latencyMs: latencySummary(await store.listDemand({ endpoint: name, since }), since),
    };
  }

  private sayOnce(key: string, message: string): void {
    if (this.said.has(key)) return;
    this.said.add(key);
    (this.options.log ?? ((m: string) => process.stderr.write(`kiln: ${m}\n`)))(message);
  }
}
