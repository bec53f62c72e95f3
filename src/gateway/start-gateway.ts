// Starts the gateway: Kiln's data-plane process. Wires the route table (from routing
// snapshots: persisted at start, then long-polled from the control plane), the replica
// pools, the metrics, the LLM router, traffic management (counting, the report to the
// control plane, shadow copies), autoscaling's demand reports and the activator (issue 14)
// and the node:http server with the v2 and OpenAI routes.

import { createServer, type Server } from 'node:http';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Activator } from './activator.ts';
import { Admission } from './admission.ts';
import { createGatewayLog, type GatewayLog } from './gateway-log.ts';
import { GatewayRequest, GatewayResponse } from './http-types.ts';
import { GatewayMetrics } from './metrics.ts';
import { ReplicaSet } from './replica-set.ts';
import { LoadCounter } from './load-counter.ts';
import { LoadReporter } from './load-reporter.ts';
import { buildRouteTable, endpointReadiness } from './route-table.ts';
import type { RoutingSnapshot } from './routing-snapshot.ts';
import { processShare } from './process-share.ts';
import { persistSnapshot, readPersistedSnapshot } from './snapshot-file.ts';
import { SnapshotWatcher } from './snapshot-watcher.ts';
import { V2Routes, type GatewayState } from './v2-routes.ts';
import { LlmLoadMonitor } from './llm-load-monitor.ts';
import {
  defaultLlmPickSettings,
  type LlmPickSettings,
  type LlmRoutingPolicy,
} from './llm-replica-picker.ts';
import { LlmRouter, llmRoutingPolicyFrom } from './llm-router.ts';
import { OpenAiRoutes } from './openai-routes.ts';
import { PrefixAffinity } from './prefix-affinity.ts';
import { PredictionSinks } from './prediction-observer.ts';
import { ShadowSender } from './shadow-sender.ts';
import { TrafficCounter } from './traffic-counter.ts';
import { TrafficReporter } from './traffic-reporter.ts';
import { WakeCaller } from './wake-caller.ts';
import type { RandomSource } from '../traffic/traffic-split.ts';
import type { ProcessTracing } from '../observability/tracing/start-tracing.ts';
import { registerSpanCounts } from '../observability/tracing/span-count-metrics.ts';

export interface GatewayOptions {
  /**
   * Base URL of the control plane (`kiln up`), long-polled for routing snapshots; a function
   * is asked again before every poll (a restarted control plane may listen elsewhere).
   */
  readonly controlUrl: string | (() => string);
  /**
   * Bearer token for the control plane's snapshot route ('' or absent: none, as in --dev); a
   * function is asked before every poll.
   */
  readonly controlToken?: string | (() => string);
  readonly host: string;
  /** 0 picks a free port; the returned `url` carries the real one. */
  readonly port: number;
  /** Where the last routing snapshot is kept (routing-snapshot.json). */
  readonly stateDir: string;
  /** JSON log lines on stderr. Default false. */
  readonly logger?: boolean;
  /**
   * 'control-plane' (default) long-polls `controlUrl`; 'manual' does not, and snapshots
   * come only from the persisted file and `setSnapshot()` (tests).
   */
  readonly snapshotSource?: 'control-plane' | 'manual';
  /** Upstream limit per request (no response headers / body stall), ms. Default 30 000. */
  readonly upstreamTimeoutMs?: number;
  /**
   * Client limit, ms (default 30 000): a whole request (headers and body) must arrive within
   * it (else 408), and a streamed answer may go unread that long before it is cut. Slow
   * clients cannot hold an endpoint's concurrency slots for longer.
   */
  readonly clientTimeoutMs?: number;
  /**
   * Infer requests to Kiln workers travel on the worker channel (one multiplexed connection
   * per replica) rather than one HTTP exchange each. Default: on, unless
   * KILN_WORKER_CHANNEL=0.
   */
  readonly workerChannels?: boolean;
  /** How long a replica whose connection failed is skipped, ms. Default 5 000. */
  readonly ejectMs?: number;
  /**
   * How OpenAI requests pick among an hf-llm endpoint's replicas: 'load-prefix' (reported
   * load and prompt-prefix affinity) or 'round-robin' (only to measure against). Default:
   * KILN_LLM_ROUTING, else 'load-prefix'.
   */
  readonly llmRouting?: LlmRoutingPolicy;
  /** Between two load polls of a busy hf-llm replica, ms. Default 75. */
  readonly llmLoadPollMs?: number;
  /** The load-prefix policy's knobs (llm-replica-picker.ts); defaults for the rest. */
  readonly llmPick?: Partial<LlmPickSettings>;
  /** Long-poll hold asked of the control plane, ms. Default 25 000. */
  readonly pollWaitMs?: number;
  /** Backoff after a failed poll: first and largest delay, ms. Defaults 250 / 5 000. */
  readonly pollMinBackoffMs?: number;
  readonly pollMaxBackoffMs?: number;
  /**
   * Post traffic reports (counts of endpoints with a traffic policy) to `controlUrl`.
   * Default: when snapshots come from the control plane.
   */
  readonly reportTraffic?: boolean;
  /** Between two traffic reports, ms. Default 1 000. */
  readonly trafficReportIntervalMs?: number;
  /**
   * Post load reports (demand per endpoint, for the autoscaler) to `controlUrl`. Default:
   * when snapshots come from the control plane.
   */
  readonly reportLoad?: boolean;
  /** Between two load reports, ms. Default 1 000. */
  readonly loadReportIntervalMs?: number;
  /** Backoff between failed wake calls of the activator: first and largest, ms. 250 / 5 000. */
  readonly wakeMinBackoffMs?: number;
  readonly wakeMaxBackoffMs?: number;
  /** Shadow copies: queue capacity (default 256), in flight at once (default 8), timeout ms (default 5 000). */
  readonly shadowQueueCapacity?: number;
  readonly shadowConcurrency?: number;
  readonly shadowTimeoutMs?: number;
  /** The draw for requests without a caller key and for shadow sampling (tests). */
  readonly random?: RandomSource;
  /**
   * Where endpoints with a prediction log write it (issue 15): `<dir>/<endpoint>/`. Default:
   * `prediction-log` beside `stateDir` (`<home>/prediction-log` under `kiln up`).
   */
  readonly predictionLogDir?: string;
  /** Prediction-log records queued at most (default 1 024; beyond: dropped, counted). */
  readonly predictionLogQueueCapacity?: number;
  /**
   * Post the predictions of endpoints with quality settings to `controlUrl` (for outcome
   * joins). Default: when snapshots come from the control plane.
   */
  readonly reportPredictions?: boolean;
  /** Between two prediction reports, ms. Default 1 000. */
  readonly predictionReportIntervalMs?: number;
  /**
   * Records spans of traced requests (docs/tracing.md; main.ts starts one when KILN_OTLP_URL
   * is set). Absent or null: tracing off, nothing is loaded or recorded.
   */
  readonly tracing?: ProcessTracing | null;
  /**
   * This gateway is one of this many processes serving one port (`kiln up
   * --gateway-processes N`): it keeps its share of the snapshot's per-gateway limits
   * (process-share.ts). Default 1.
   */
  readonly processes?: number;
  /** Which of them this one is, 0..processes-1 (a metric label). Default 0. */
  readonly processIndex?: number;
  /** Sent with each snapshot poll (drain acks are per gateway process). Default `<pid>/0`. */
  readonly gatewayId?: string;
  /**
   * Given this process's own metrics, what GET /metrics answers instead of them: every
   * gateway process's merged (cluster-member.ts).
   */
  readonly mergeMetrics?: (local: LocalMetrics) => () => Promise<string>;
  /**
   * With `processes` > 1: how this process tells the supervisor what it admits, and hears
   * what the others do, so they share each endpoint's bound (admission.ts; cluster-member.ts).
   */
  readonly admissionPeers?: AdmissionPeers;
}

/** The other gateway processes, as the admission bound's share sees them. */
export interface AdmissionPeers {
  /** This process's admitted requests by endpoint (sent when they change, every few ms). */
  publish(admitted: ReadonlyMap<string, number>): void;
  /** `onOthers` gets the other processes' admitted requests by endpoint as they change. */
  subscribe(onOthers: (others: ReadonlyMap<string, number>) => void): void;
}

/** Between two counts of admitted requests sent to the supervisor, ms. */
const admissionPublishMs = 20;

/** One gateway process's metrics: prom-client JSON (to merge) and the Prometheus text. */
export interface LocalMetrics {
  json(): Promise<unknown[]>;
  text(): Promise<string>;
}

export interface RunningGateway {
  /** e.g. http://127.0.0.1:8000 */
  readonly url: string;
  /** Version of the snapshot being served; 0 when none is loaded. */
  snapshotVersion(): number;
  /** Applies a snapshot if newer than the current one (and persists it); false if not. */
  setSnapshot(snapshot: RoutingSnapshot): boolean;
  /** The Prometheus text of the gateway's metrics (all processes', with renderMetrics). */
  metricsText(): Promise<string>;

  close(): Promise<void>;
}

export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const log = createGatewayLog(options.logger ?? false);
  const upstreamTimeoutMs = options.upstreamTimeoutMs ?? 30_000;
  const clientTimeoutMs = options.clientTimeoutMs ?? 30_000;
  const metrics = new GatewayMetrics(options.processIndex ?? 0);
  if (options.mergeMetrics !== undefined) {
    const registry = metrics.registry;
    metrics.renderWith(
      options.mergeMetrics({
        json: () => registry.getMetricsAsJSON(),
        text: () => registry.metrics(),
      }),
    );
  }
  const processes = options.processes ?? 1;
  // KILN_WORKER_CHANNEL=0 sends infer requests to workers as plain HTTP (to compare, or to
  // rule the channel out while debugging).
  const useChannels = options.workerChannels ?? process.env.KILN_WORKER_CHANNEL !== '0';
  const replicas = new ReplicaSet({ upstreamTimeoutMs, useChannels });
  const admission = new Admission(processes);
  let publishAdmitted: NodeJS.Timeout | null = null;
  const peers = options.admissionPeers;
  if (peers !== undefined && processes > 1) {
    peers.subscribe((others) => admission.setOthers(others));
    let last = '';
    publishAdmitted = setInterval(() => {
      const admitted = admission.admitted();
      const key = JSON.stringify([...admitted]);
      if (key === last) return;
      last = key;
      peers.publish(admitted);
    }, admissionPublishMs);
    publishAdmitted.unref();
  }
  metrics.watchGates(() => admission.allGates());
  const trafficCounter = new TrafficCounter();
  const shadows = new ShadowSender({
    queueCapacity: options.shadowQueueCapacity ?? 256,
    concurrency: options.shadowConcurrency ?? 8,
    timeoutMs: options.shadowTimeoutMs ?? 5_000,
    metrics,
  });
  metrics.watchShadowQueue(() => shadows.queued);
  const trafficContext = {
    counter: trafficCounter,
    random: options.random ?? Math.random,
    onBadPath: (endpoint: string, problem: string) =>
      log.warn({ endpoint, problem }, 'traffic key path not compiled; it is ignored'),
  };
  const { controlUrl, controlToken } = options;
  const controlUrlNow = typeof controlUrl === 'string' ? () => controlUrl : controlUrl;
  const controlTokenNow =
    typeof controlToken === 'function' ? controlToken : () => controlToken ?? '';
  // Scale-to-zero: requests of an endpoint waking from zero wait in the activator, which
  // asks the control plane to wake it.
  const wakeCaller = new WakeCaller({
    controlUrl: controlUrlNow,
    token: controlTokenNow,
    timeoutMs: 5_000,
  });
  const activator = new Activator({
    wake: (endpoint) => wakeCaller.wake(endpoint),
    metrics,
    log,
    now: () => performance.now(),
    ...(options.wakeMinBackoffMs === undefined
      ? {}
      : { wakeMinBackoffMs: options.wakeMinBackoffMs }),
    ...(options.wakeMaxBackoffMs === undefined
      ? {}
      : { wakeMaxBackoffMs: options.wakeMaxBackoffMs }),
  });
  metrics.watchActivator(() => activator.allHeld());
  const loadCounter = new LoadCounter((endpoint) => activator.held(endpoint));
  // Prediction log and quality (issue 15): queues behind each answered request, off its path.
  const predictions = new PredictionSinks({
    logDir: options.predictionLogDir ?? join(options.stateDir, '..', 'prediction-log'),
    ...(options.predictionLogQueueCapacity === undefined
      ? {}
      : { logQueueCapacity: options.predictionLogQueueCapacity }),
    metrics,
    random: options.random ?? Math.random,
    warn: (fields, message) => log.warn(fields, message),
  });
  const state: GatewayState = {
    table: null,
    metrics,
    log,
    upstreamTimeoutMs,
    clientStallMs: clientTimeoutMs,
    ejectMs: options.ejectMs ?? 5_000,
    shadows,
    activator,
    tracer: options.tracing?.tracer ?? null,
  };
  if (options.tracing != null)
    registerSpanCounts(metrics.registry, 'gateway', options.tracing.counts);
  const persister = new SnapshotPersister(options.stateDir, log);
  const badSchema = (endpoint: string, reason: string): void =>
    log.warn({ endpoint, reason }, 'schema not compiled; the worker alone checks requests');

  const apply = (snapshot: RoutingSnapshot, persist: boolean): boolean => {
    const current = state.table;
    if (current !== null && snapshot.version <= current.version) return false;
    // Limits "per gateway" are this process's share of them; errors still name the team's rate.
    const shared = processShare(snapshot, processes);
    admission.sync(shared, performance.now());
    const replicaStates = replicas.sync(snapshot);
    state.table = buildRouteTable(
      { ...shared, teamLimits: snapshot.teamLimits },
      current,
      replicaStates,
      metrics,
      admission,
      badSchema,
      trafficContext,
      loadCounter,
      predictions,
    );
    // Held requests of endpoints that now have a ready replica go on, from the new table.
    const table = state.table;
    activator.sync((endpoint) => endpointReadiness(table, endpoint));
    metrics.setSnapshotVersion(snapshot.version);
    log.info(
      { version: snapshot.version, endpoints: snapshot.endpoints.length },
      'routing snapshot applied',
    );
    if (persist) persister.save(snapshot);
    return true;
  };

  const persisted = await readPersistedSnapshot(options.stateDir);
  if (persisted.ok && persisted.snapshot !== null) apply(persisted.snapshot, false);
  if (!persisted.ok) log.warn({ reason: persisted.reason }, 'persisted routing snapshot ignored');

  const llmRouter = new LlmRouter(
    options.llmRouting ?? llmRoutingPolicyFrom(process.env.KILN_LLM_ROUTING, log),
    { ...defaultLlmPickSettings, ...options.llmPick },
    new PrefixAffinity(8_192),
    new LlmLoadMonitor({
      intervalMs: options.llmLoadPollMs ?? 75,
      idleAfterMs: 2_000,
      timeoutMs: 1_000,
      now: () => performance.now(),
    }),
    metrics,
  );
  const routes = new V2Routes(state, new OpenAiRoutes(state, llmRouter));
  const server = createServer<typeof GatewayRequest, typeof GatewayResponse>(
    {
      IncomingMessage: GatewayRequest,
      ServerResponse: GatewayResponse,
      requestTimeout: clientTimeoutMs,
      headersTimeout: clientTimeoutMs,
      // How often node looks for requests past those limits (its default is 30 s).
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, clientTimeoutMs / 4)),
    },
    (req, res) => routes.handle(req, res),
  );
  await listen(server, options.host, options.port);
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;

  let watcher: SnapshotWatcher | null = null;
  if ((options.snapshotSource ?? 'control-plane') === 'control-plane') {
    watcher = new SnapshotWatcher({
      controlUrl: options.controlUrl,
      token: options.controlToken ?? '',
      waitMs: options.pollWaitMs ?? 25_000,
      minBackoffMs: options.pollMinBackoffMs ?? 250,
      maxBackoffMs: options.pollMaxBackoffMs ?? 5_000,
      currentVersion: () => state.table?.version ?? null,
      apply: (snapshot) => apply(snapshot, true),
      gatewayId: options.gatewayId ?? `${process.pid}/0`,
      onError: (error, retryInMs) =>
        log.warn({ error: error.message, retryInMs }, 'routing snapshot poll failed'),
    });
    watcher.start();
  }
  let reporter: TrafficReporter | null = null;
  const snapshotsFromControl = (options.snapshotSource ?? 'control-plane') === 'control-plane';
  if (options.reportTraffic ?? snapshotsFromControl) {
    reporter = new TrafficReporter({
      controlUrl: controlUrlNow,
      token: controlTokenNow,
      intervalMs: options.trafficReportIntervalMs ?? 1_000,
      timeoutMs: 5_000,
      counter: trafficCounter,
      gateway: `${hostname()}:${process.pid}`,
      metrics,
      log,
    });
    reporter.start();
  }
  let loadReporter: LoadReporter | null = null;
  if (options.reportLoad ?? snapshotsFromControl) {
    loadReporter = new LoadReporter({
      controlUrl: controlUrlNow,
      token: controlTokenNow,
      intervalMs: options.loadReportIntervalMs ?? 1_000,
      timeoutMs: 5_000,
      counter: loadCounter,
      gateway: `${hostname()}:${process.pid}`,
      metrics,
      log,
    });
    loadReporter.start();
  }
  if (options.reportPredictions ?? snapshotsFromControl) {
    predictions.startReporting({
      controlUrl: controlUrlNow,
      token: controlTokenNow,
      intervalMs: options.predictionReportIntervalMs ?? 1_000,
      timeoutMs: 5_000,
      gateway: `${hostname()}:${process.pid}`,
      log,
    });
  }
  log.info({ url }, 'gateway listening');

  let closing: Promise<void> | null = null;
  return {
    url,
    snapshotVersion: () => state.table?.version ?? 0,
    setSnapshot: (snapshot) => apply(snapshot, true),
    metricsText: () => metrics.render(),

    close: () =>
      (closing ??= (async () => {
        await watcher?.stop();
        if (publishAdmitted !== null) clearInterval(publishAdmitted);
        llmRouter.close();
        // Held requests would otherwise wait out their timeout: they fail now (retryable).
        activator.close();
        await closeServer(server);
        await shadows.close();
        await reporter?.stop();
        await loadReporter?.stop();
        await predictions.close();
        await wakeCaller.close();
        await replicas.close();
        await persister.flush();
      })()),
  };
}

/** Writes snapshots one at a time, newest wins; failures are logged, never fatal. */
class SnapshotPersister {
  private latest: RoutingSnapshot | null = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly stateDir: string,
    private readonly log: GatewayLog,
  ) {}

  save(snapshot: RoutingSnapshot): void {
    this.latest = snapshot;
    this.writing = this.writing.then(() => this.writeLatest());
  }

  flush(): Promise<void> {
    return this.writing;
  }

  private async writeLatest(): Promise<void> {
    const snapshot = this.latest;
    if (snapshot === null) return;
    this.latest = null;
    try {
      await persistSnapshot(this.stateDir, snapshot);
    } catch (error) {
      this.log.warn(
        { version: snapshot.version, error: (error as Error).message },
        'could not persist the routing snapshot',
      );
    }
  }
}

type GatewayServer = Server<typeof GatewayRequest, typeof GatewayResponse>;

function listen(server: GatewayServer, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** Stops accepting, lets requests in flight finish (10 s at most), then closes. */
async function closeServer(server: GatewayServer): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), 10_000);
  await closed;
  clearTimeout(timer);
}
