// Cost accounting in the control plane (issue 15, docs/cost.md). Every sampleIntervalMs (on
// the platform clock) it looks at the reconciler's replicas, charges each one running the time
// since the last sample at its shape (replica-shape.ts), adds the rows to the store's hourly
// usage (migration 10) and to `kiln_cost_usd_total{endpoint,team}`; reports read the rows
// back and price them (observability/cost/cost-report.ts).
//
//   tick ─▶ replicas running (ready, stopping, or launched and loading)
//        ─▶ shape: request (+defaults) · node capacity · device share   ─┐
//        ─▶ team: the endpoint's (a pool's workers: the pool's)          ├▶ accrueUsage ─▶ store
//        ─▶ CPU utilization: its own worker-load poller, per endpoint   ─┘        └▶ metrics
//
// A gap between two samples longer than maxGapMs (the control plane was stopped, the host
// slept) is not charged: the replicas may not have run either, and a bill should not guess.

import { Counter, Gauge, type Registry as MetricsRegistry } from 'prom-client';
import type { Clock } from '../../core/clock.ts';
import type { EndpointRecord } from '../../store/serving-records.ts';
import type { Store } from '../../store/store.ts';
import { usageHourMs, type TokenUsageRow, type UsageRow } from '../../store/cost-records.ts';
import type { LoadReport } from '../../protocol/scaling/load-report.ts';
import { resolveRequest, type ResolvedRequest } from '../../placement/resource-request.ts';
import { accrueUsage, type RunningReplica } from '../../observability/cost/usage-accrual.ts';
import {
  buildCostReport,
  usageRowCostUsd,
  type CostGrouping,
  type CostReport,
  type EndpointDemand,
  type EndpointFacts,
} from '../../observability/cost/cost-report.ts';
import type { PriceTable } from '../../observability/cost/price-table.ts';
import type { Placer } from '../placement/placer.ts';
import type { ReplicaStatus } from '../reconciler.ts';
import { poolOfWorkerEndpoint } from '../pools/pool-workers.ts';
import type { WorkerLoadSource } from '../autoscale/worker-load-source.ts';
import { replicaShape } from './replica-shape.ts';

/** What the service reads of the reconciler (a fake in tests). */
export interface CostReplicaSource {
  replicaStatus(): ReplicaStatus[];
  readonly placer: Placer | null;
}

export interface CostServiceOptions {
  readonly store: Store;
  readonly clock: Clock;
  readonly replicas: CostReplicaSource;
  readonly prices: PriceTable;
  /** Where the price table came from (null: the defaults), for `kiln cost report`. */
  readonly pricesSource: string | null;
  /** The control plane's registry (kiln_cost_usd_total, kiln_cost_usd_per_hour). */
  readonly metrics: MetricsRegistry;
  /** Workers' CPU; the service watches every endpoint it charges. */
  readonly workerLoad?: WorkerLoadSource;
  /** Default 15 s. */
  readonly sampleIntervalMs?: number;
  /** Longest gap charged between two samples. Default 5 min. */
  readonly maxGapMs?: number;
  /** Usage older than this is pruned (hourly). Default 400 days. */
  readonly retentionMs?: number;
  readonly log?: (message: string) => void;
}

export interface CostQuery {
  readonly by: CostGrouping;
  readonly sinceMs: number;
  readonly untilMs: number;
}

const defaultRetentionMs = 400 * 24 * 3_600_000;

/** A replica holds capacity from its launch until its process is gone. */
function isRunning(replica: ReplicaStatus): boolean {
  switch (replica.state) {
    case 'ready':
    case 'stopping':
      return true;
    case 'starting':
      return replica.pid !== null;
    case 'failed':
      return false;
  }
}

export class CostService {
  readonly prices: PriceTable;
  readonly pricesSource: string | null;
  private lastSampleMs: number | null = null;
  private lastPruneHourMs = 0;
  private readonly sampleIntervalMs: number;
  private readonly maxGapMs: number;
  private readonly total: Counter<'endpoint' | 'team'>;
  private readonly rate: Gauge<'endpoint' | 'team'>;
  /** Artifact bytes by `model@version` (the memory default): versions never change size. */
  private readonly sizes = new Map<string, number>();
  /** Tokens reported since the last sample, by endpoint and hour (ms), not yet stored. */
  private pendingTokens = new Map<string, Map<number, { prompt: number; completion: number }>>();
  private timer: NodeJS.Timeout | null = null;
  private sampling: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly options: CostServiceOptions) {
    this.prices = options.prices;
    this.pricesSource = options.pricesSource;
    this.sampleIntervalMs = options.sampleIntervalMs ?? 15_000;
    this.maxGapMs = options.maxGapMs ?? 300_000;
    this.total = new Counter({
      name: 'kiln_cost_usd_total',
      help: 'USD charged for replica time (price table × instance shape), by endpoint and team.',
      labelNames: ['endpoint', 'team'],
      registers: [options.metrics],
    });
    this.rate = new Gauge({
      name: 'kiln_cost_usd_per_hour',
      help: 'USD per hour of the replicas running at the last cost sample, by endpoint and team.',
      labelNames: ['endpoint', 'team'],
      registers: [options.metrics],
    });
  }

  /** Samples now (the clock starts) and every sampleIntervalMs until close(). */
  start(): void {
    if (this.timer !== null || this.closed) return;
    this.timer = setInterval(() => this.tick(), this.sampleIntervalMs);
    this.timer.unref();
    this.tick();
  }

  private tick(): void {
    if (this.sampling !== null) return; // a slow store: never two samples at once
    this.sampling = this.sampleOnce()
      .then(() => undefined)
      .catch((error: unknown) => this.options.log?.(`cost: sampling replicas: ${String(error)}`))
      .finally(() => {
        this.sampling = null;
      });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.sampling;
    await this.flushTokens().catch((error: unknown) =>
      this.options.log?.(`cost: storing tokens: ${String(error)}`),
    );
  }

  /**
   * A gateway's load report (POST /api/v1/scaling/reports): its LLM endpoints' tokens, kept
   * in memory (one entry per endpoint and hour) until the next sample stores them.
   */
  ingestTokens(report: LoadReport): void {
    const hourMs = Math.floor(Date.parse(report.windowEnd) / usageHourMs) * usageHourMs;
    for (const load of report.endpoints) {
      const prompt = load.promptTokens ?? 0;
      const completion = load.completionTokens ?? 0;
      if (prompt + completion > 0) this.addTokens(load.endpoint, hourMs, prompt, completion);
    }
  }

  private addTokens(endpoint: string, hourMs: number, prompt: number, completion: number): void {
    let hours = this.pendingTokens.get(endpoint);
    if (hours === undefined) {
      hours = new Map();
      this.pendingTokens.set(endpoint, hours);
    }
    const known = hours.get(hourMs) ?? { prompt: 0, completion: 0 };
    hours.set(hourMs, { prompt: known.prompt + prompt, completion: known.completion + completion });
  }

  /** Stores the tokens gathered since the last flush under each endpoint's team. */
  private async flushTokens(): Promise<void> {
    if (this.pendingTokens.size === 0) return;
    const pending = this.pendingTokens;
    this.pendingTokens = new Map();
    const teams = new Map((await this.options.store.listEndpoints()).map((e) => [e.name, e.team]));
    const rows: TokenUsageRow[] = [];
    for (const [endpoint, hours] of pending)
      for (const [hourMs, counts] of hours)
        rows.push({
          endpoint,
          // Deleted since the answer: its tokens stay on the books, under no team.
          team: teams.get(endpoint) ?? '(deleted)',
          hourStart: new Date(hourMs).toISOString(),
          promptTokens: counts.prompt,
          completionTokens: counts.completion,
        });
    try {
      await this.options.store.mergeTokenUsage(rows);
    } catch (error) {
      // Kept for the next flush (a busy store): tokens are a ledger, not a rate.
      for (const row of rows)
        this.addTokens(
          row.endpoint,
          Date.parse(row.hourStart),
          row.promptTokens,
          row.completionTokens,
        );
      throw error;
    }
  }

  /**
   * Charges the replicas running now for the time since the previous sample (none on the
   * first, nor after a gap longer than maxGapMs). Returns the rows it stored.
   */
  async sampleOnce(): Promise<UsageRow[]> {
    await this.flushTokens();
    const nowMs = this.options.clock.now();
    const fromMs = this.lastSampleMs;
    this.lastSampleMs = nowMs;
    const running = await this.runningReplicas();
    this.options.workerLoad?.watch(new Set(running.map((r) => r.endpoint)));
    this.rate.reset();
    for (const r of running) {
      const usd = usageRowCostUsd(this.prices, {
        endpoint: r.endpoint,
        team: r.team,
        hourStart: '',
        cpu: r.shape.cpu,
        memoryGiB: r.shape.memoryGiB,
        acceleratorType: r.shape.acceleratorType ?? '',
        accelerators: r.shape.accelerators,
        capacity: r.shape.capacity,
        replicaSeconds: 3600,
        observedSeconds: 0,
        cpuBusySeconds: 0,
      });
      this.rate.inc({ endpoint: r.endpoint, team: r.team }, usd);
    }
    if (fromMs === null || nowMs - fromMs > this.maxGapMs) return [];
    const rows = accrueUsage(running, fromMs, nowMs);
    if (rows.length > 0) await this.options.store.mergeUsage(rows);
    for (const row of rows)
      this.total.inc({ endpoint: row.endpoint, team: row.team }, usageRowCostUsd(this.prices, row));
    await this.prune(nowMs);
    return rows;
  }

  /** The chargeback report over [sinceMs, untilMs) (usage by whole hours: since is floored). */
  async report(query: CostQuery): Promise<CostReport> {
    const { store } = this.options;
    const sinceHourMs = Math.floor(query.sinceMs / usageHourMs) * usageHourMs;
    const window = {
      since: new Date(sinceHourMs).toISOString(),
      until: new Date(query.untilMs).toISOString(),
    };
    const [usage, tokens, endpoints] = await Promise.all([
      store.listUsage(window),
      store.listTokenUsage(window),
      store.listEndpoints(),
    ]);
    const facts = new Map<string, EndpointFacts>();
    for (const e of endpoints) facts.set(e.name, endpointFacts(e));
    const names = new Set([...usage.map((r) => r.endpoint), ...tokens.map((r) => r.endpoint)]);
    for (const name of names) {
      const pool = poolOfWorkerEndpoint(name);
      if (pool === null || facts.has(name)) continue;
      const record = await store.getPool(pool);
      if (record !== null)
        facts.set(name, {
          team: record.team,
          minReplicas: record.workers,
          pooled: true,
          llm: false,
        });
    }
    for (const name of facts.keys()) names.add(name);
    const demand = new Map<string, EndpointDemand>();
    for (const name of names) {
      const rows = await store.listDemand({
        endpoint: name,
        since: new Date(query.sinceMs).toISOString(),
        until: window.until,
      });
      let requests = 0;
      let peakConcurrency = 0;
      for (const row of rows) {
        requests += row.arrivals;
        if (row.seconds > 0)
          peakConcurrency = Math.max(peakConcurrency, row.concurrencySeconds / row.seconds);
      }
      demand.set(name, { requests, peakConcurrency });
    }
    return buildCostReport({
      by: query.by,
      sinceMs: sinceHourMs,
      untilMs: query.untilMs,
      prices: this.prices,
      usage,
      tokens,
      demand,
      endpoints: facts,
    });
  }

  private async runningReplicas(): Promise<RunningReplica[]> {
    const { store, replicas, workerLoad } = this.options;
    const statuses = replicas.replicaStatus().filter(isRunning);
    if (statuses.length === 0) return [];
    const endpoints = new Map((await store.listEndpoints()).map((e) => [e.name, e]));
    const running: RunningReplica[] = [];
    for (const status of statuses) {
      const owner = await this.ownerOf(status.endpoint, endpoints);
      if (owner === null) continue; // deleted meanwhile: its replicas are on their way out
      const request =
        owner.request ??
        resolveRequest(
          owner.endpoint?.config.resources ?? {},
          await this.artifactBytes(status.model, status.version),
        );
      const load = workerLoad?.latest(status.endpoint) ?? null;
      running.push({
        endpoint: status.endpoint,
        team: owner.team,
        shape: replicaShape(request, replicas.placer?.placed(status.id) ?? null),
        cpuUtilization:
          load === null || load.cpu === null || load.replicas === 0
            ? null
            : Math.min(1, load.cpu / load.replicas),
      });
    }
    return running;
  }

  /** The endpoint record, or for a pool's workers the pool's team and worker size. */
  private async ownerOf(
    name: string,
    endpoints: ReadonlyMap<string, EndpointRecord>,
  ): Promise<{
    team: string;
    endpoint: EndpointRecord | null;
    request: ResolvedRequest | null;
  } | null> {
    const endpoint = endpoints.get(name);
    if (endpoint !== undefined) return { team: endpoint.team, endpoint, request: null };
    const pool = poolOfWorkerEndpoint(name);
    if (pool === null) return null;
    const record = await this.options.store.getPool(pool);
    if (record === null) return null;
    // A pool worker holds models up to its memory budget: that is its size.
    return {
      team: record.team,
      endpoint: null,
      request: resolveRequest({ memoryGiB: record.memoryBudgetBytes / 1024 ** 3 }, 0),
    };
  }

  private async artifactBytes(model: string, version: number): Promise<number> {
    const key = `${model}@${version}`;
    let bytes = this.sizes.get(key);
    if (bytes === undefined) {
      const record = await this.options.store.getVersion(model, version, { includeDeleted: true });
      bytes = record?.sizeBytes ?? 0;
      this.sizes.set(key, bytes);
    }
    return bytes;
  }

  private async prune(nowMs: number): Promise<void> {
    const hourMs = Math.floor(nowMs / usageHourMs) * usageHourMs;
    if (hourMs === this.lastPruneHourMs) return;
    this.lastPruneHourMs = hourMs;
    const retention = this.options.retentionMs ?? defaultRetentionMs;
    await this.options.store.pruneUsage(new Date(nowMs - retention).toISOString());
  }
}

function endpointFacts(e: EndpointRecord): EndpointFacts {
  return {
    team: e.team,
    minReplicas: e.config.autoscale?.minReplicas ?? e.replicas,
    pooled: e.config.pool !== undefined,
    llm: e.config.llm !== undefined,
  };
}
