// Brings the platform up on the embedded defaults:
//
//   SQLite store + artifact store (home folder, or an S3 bucket) ─► Registry
//   control-plane API (this process) ─► EndpointService ─► Reconciler ─► LocalBackend
//                                                                          └─► worker processes
//   gateway (its own process) ◄── routing snapshots (long-poll) ── Reconciler.routing
//
// Detached (`kiln up`), the gateway and workers outlive this process: started after one that
// died, the platform adopts what it left running before it publishes any snapshot.

import { resolve, join } from 'node:path';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { systemClock, type Clock } from '../core/clock.ts';
import { kilnVersion } from '../core/version.ts';
import { SqliteStore } from '../store/sqlite/sqlite-store.ts';
import type { ArtifactLocator, ArtifactStorage } from '../registry/artifact-storage.ts';
import { openArtifactStorage } from '../registry/open-artifact-storage.ts';
import type { Store } from '../store/store.ts';
import { PgStore } from '../store/postgres/pg-store.ts';
import { PgDatabase } from '../store/postgres/pg-database.ts';
import {
  PgListener,
  routingPublishedChannel,
  storeChangedChannel,
} from '../store/postgres/pg-listener.ts';
import { LeaderLease } from './leader/leader-lease.ts';
import { ControllerLeadership, registerLeaderMetrics } from './leader/controller-leadership.ts';
import {
  readPublishedRouting,
  RoutingFollower,
  RoutingPublisher,
} from './leader/routing-publication.ts';
import { untilServing } from './leader/takeover-routing.ts';
import type { RoutingTable } from './routing-table.ts';
import { Registry } from '../registry/registry.ts';
import { buildApiServer } from './api/api-server.ts';
import { Registry as MetricsRegistry } from 'prom-client';
import { AutoscaleMetrics } from './autoscale/autoscale-metrics.ts';
import type { ObservabilityServices } from './observability/observability-services.ts';
import { SloService, latestDriftOf } from './observability/slo/slo-service.ts';
import { driftReadingsOf } from '../observability/slo/drift-readings.ts';
import { QualityService } from './observability/quality-service.ts';
import { ensurePlatformTokens } from './control-tokens.ts';
import { LocalBackend } from './backends/local/local-backend.ts';
import type { KubernetesBackend } from './backends/kubernetes/kubernetes-backend.ts';
import type { KubernetesBackendSettings } from './backends/kubernetes/create-kubernetes-backend.ts';
import { registerDemoModels, deployDemoEndpoints } from './demo-models.ts';
import { EndpointService } from './endpoints.ts';
import { GatewayProcess, isGatewayProcessCount } from './gateway-process.ts';
import { lockHome } from './home-lock.ts';
import { Reconciler } from './reconciler.ts';
import { loadInventory } from './placement/load-inventory.ts';
import { Placer } from './placement/placer.ts';
import { httpGoldenRunner } from './traffic/golden-check.ts';
import { RolloutController } from './traffic/rollout-controller.ts';
import { TrafficService, trafficOptionsFromEnv } from './traffic/traffic-service.ts';
import { AutoscaleController } from './autoscale/autoscale-controller.ts';
import { WorkerLoadPoller } from './autoscale/worker-load-poller.ts';
import { CostService } from './observability/cost-service.ts';
import { loadPrices } from './observability/load-prices.ts';
import { otlpUrlProblem } from '../observability/tracing/otlp-url.ts';
import { startDriftService } from './observability/drift/start-drift-service.ts';
import { registerRoutingAckMetrics } from './routing-ack-metrics.ts';

export interface PlatformOptions {
  readonly home: string;
  readonly host: string;
  readonly port: number;
  /** Development mode: the gateway serves without API keys, the API without tokens. */
  readonly dev: boolean;
  /** Register (and deploy) the demo models into an empty registry (what `npm start` does). */
  readonly demo?: boolean;
  /** Start the gateway process (default true). */
  readonly gateway?: boolean;
  /**
   * Serve the registry API only: no endpoints, workers or gateway, and no hold on the home.
   * For a process beside the platform that serves this home (the store is safe for writers
   * in several processes; serving is not).
   */
  readonly apiOnly?: boolean;
  readonly gatewayHost?: string;
  /** Default 8000; 0 = any free port. */
  readonly gatewayPort?: number;
  /**
   * Gateway processes serving the gateway's one port (issue 16), an integer 1..64. Default 1
   * here; `kiln up --gateway-processes` defaults to one per core.
   */
  readonly gatewayProcesses?: number;
  readonly maxUploadBytes?: number;
  /**
   * The gateway and workers outlive this process (`kiln up`): a platform killed outright
   * leaves them serving, and the next one on the home adopts them. Close() still stops them.
   * Default false: they stop when this process ends.
   */
  readonly detached?: boolean;
  readonly logger?: boolean;
  readonly clock?: Clock;
  /**
   * The inventory file replicas are placed on (issue 14; `kiln up --inventory`); absent:
   * `<home>/inventory.json`, else this machine as one node.
   */
  readonly inventory?: string;
  /** Cost price table (issue 15): default `<home>/prices.json`, else the documented defaults. */
  readonly prices?: string;
  /**
   * The gateway and workers export OpenTelemetry traces to this OTLP/HTTP collector (`kiln up
   * --otlp URL`; docs/tracing.md). Absent: tracing off, nothing loaded or recorded.
   */
  readonly otlpUrl?: string;
  /**
   * Where artifacts are stored (`kiln up --artifacts` / KILN_ARTIFACTS_URL): default the
   * home's `artifacts/` folder; an S3 bucket is probed (exists, takes a write) before start.
   */
  readonly artifacts?: ArtifactLocator;
  /**
   * Where replicas run: worker processes here (default), or pods of one Deployment per
   * revision (`kiln up --backend kubernetes`; docs/kubernetes.md), set up by `kubernetes`.
   */
  readonly backend?: 'local' | 'kubernetes';
  readonly kubernetes?: KubernetesBackendSettings;
  /**
   * Issue 17: a PostgreSQL URL (`kiln up --store`, KILN_STORE_URL) shared by several control
   * planes, one of which leads the controllers (docs/scale-out.md). Absent: SQLite in the
   * home, this process leading by holding the home lock, exactly as before.
   */
  readonly store?: string;
  /** The controllers' lease on PostgreSQL, ms (default 10 000 / 2 500; tests use short ones). */
  readonly lease?: { readonly leaseMs?: number; readonly renewMs?: number };
}

export interface RunningPlatform {
  readonly url: string;
  /** The data plane's base URL ('' when started without a gateway). */
  readonly gatewayUrl: string;
  readonly registry: Registry;
  readonly endpoints: EndpointService;
  readonly reconciler: Reconciler;
  /** Traffic policies, rollback, history, the gateways' reports (issue 13). */
  readonly traffic: TrafficService;
  /** Canary and blue-green rollouts, driven from the store (issue 13). */
  readonly rollouts: RolloutController;
  /** Autoscaling and scale-to-zero (issue 14). */
  readonly autoscale: AutoscaleController;
  /** Issue 15: the control plane's metrics registry and observability parts. */
  readonly observability: ObservabilityServices;
  /**
   * Issue 17, PostgreSQL store: whether this control plane leads the controllers now, and a
   * promise that resolves once it lost the term it led (it then serves as a follower until
   * restarted: `kiln up` starts it afresh). With SQLite: always leading, never lost.
   */
  readonly leader: { leading(): boolean; readonly lost: Promise<void> };
  /** Names of the demo models registered at this start (empty unless `demo`). */
  readonly demoModels: readonly string[];
  /** The standby workers waiting for a replica start (pid, warm yet): benchmarks, tests. */
  standbyWorkers(): readonly { readonly pid: number | null; readonly warm: boolean }[];
  close(): Promise<void>;
}

export const defaultMaxUploadBytes = 16 * 1024 ** 3;

export async function startPlatform(options: PlatformOptions): Promise<RunningPlatform> {
  const home = resolve(options.home);
  const clock = options.clock ?? systemClock;
  // Before anything is opened: a bad setting refuses the start and leaves nothing held.
  const trafficOptions = trafficOptionsFromEnv(process.env);
  const otlpProblem = options.otlpUrl === undefined ? null : otlpUrlProblem(options.otlpUrl);
  if (otlpProblem !== null) throw new Error(`invalid otlpUrl ${options.otlpUrl}: ${otlpProblem}`);
  const gatewayProcesses = options.gatewayProcesses ?? 1;
  if (!isGatewayProcessCount(gatewayProcesses))
    throw new Error(`invalid gatewayProcesses ${gatewayProcesses}: an integer 1..64`);
  await mkdir(home, { recursive: true });
  const placer = new Placer(await loadInventory(home, options.inventory));
  const prices = await loadPrices(home, options.prices);
  const apiOnly = options.apiOnly === true;
  const lock = apiOnly ? null : lockHome(home);
  let stores: PlatformStores;
  try {
    stores = await openStores(home, options.store, clock);
  } catch (error) {
    lock?.release();
    throw error;
  }
  // The API writes through `store`; the controllers through `controllerStore`, which on
  // PostgreSQL is fenced by the lease (the same store on SQLite).
  const { store, controllerStore, postgres } = stores;
  let artifacts: ArtifactStorage;
  try {
    artifacts = await openArtifactStorage(
      options.artifacts ?? { kind: 'local', root: join(home, 'artifacts') },
      { clock, scratchDir: join(home, 'artifacts', 'tmp') },
    );
  } catch (error) {
    // A bucket missing or refusing writes: nothing stays open or held.
    await stores.close();
    lock?.release();
    throw error;
  }
  const detached = options.detached === true;
  // `kiln up` starts a standby worker at once: the first replica start skips the boot too.
  let backend: LocalBackend | KubernetesBackend;
  try {
    backend =
      options.backend === 'kubernetes'
        ? // Loaded only here: the Kubernetes client is no cost to a local platform.
          (
            await import('./backends/kubernetes/create-kubernetes-backend.ts')
          ).createKubernetesBackend(options.kubernetes ?? {}, store, process.env)
        : new LocalBackend({
            runDir: join(home, 'run'),
            detached,
            prestartStandby: detached,
            ...(options.otlpUrl === undefined ? {} : { otlpUrl: options.otlpUrl }),
          });
  } catch (error) {
    await store.close();
    lock?.release();
    throw error;
  }
  // Where a detached gateway finds this control plane (rewritten by every start).
  const controlUrlFile = join(home, 'run', 'platform.url');
  try {
    await artifacts.init();
    if (!apiOnly) await backend.init();
  } catch (error) {
    await stores.close();
    lock?.release();
    throw error;
  }
  const registry = new Registry(store, artifacts);
  const controllerRegistry =
    controllerStore === store ? registry : new Registry(controllerStore, artifacts);
  const reconciler = new Reconciler({
    store: controllerStore,
    registry,
    backend,
    clock,
    auth: options.dev ? 'dev' : 'api-keys',
    // With a gateway, a replica is stopped only once the gateway holds a snapshot without it.
    gatewayAcks: options.gateway !== false && !apiOnly,
    // On Kubernetes the scheduler places pods (resources, selectors, tolerations: render.ts).
    ...(backend.kind === 'kubernetes' ? {} : { placer }),
  });
  let gatewayUrl = '';
  const traffic = new TrafficService(registry, reconciler, clock, trafficOptions);
  const endpoints = new EndpointService(registry, reconciler, () => gatewayUrl, clock, traffic);
  // The rollout controller's traffic changes go through the controllers' (fenced) store.
  const controllerTraffic =
    controllerRegistry === registry
      ? traffic
      : new TrafficService(controllerRegistry, reconciler, clock, trafficOptions);
  const rollouts = new RolloutController({
    store: controllerStore,
    traffic: controllerTraffic,
    observations: controllerTraffic,
    replicas: reconciler,
    golden: httpGoldenRunner(),
    clock,
    warmGraceMs: traffic.warmGraceMs,
    log: (message) => process.stderr.write(`kiln: ${message}\n`),
  });
  // Autoscaling (issue 14): decides each autoscaled endpoint's count every second.
  // The workers' own load (queue depth, CPU, custom), polled for endpoints that scale on it.
  const workerLoad = new WorkerLoadPoller({
    clock,
    readyReplicas: (endpoint) =>
      reconciler
        .replicaStatus(endpoint)
        .flatMap((r) => (r.state === 'ready' && r.url !== null ? [{ id: r.id, url: r.url }] : [])),
  });
  // The control plane's Prometheus registry (GET /metrics): autoscaling and issue 15's parts.
  const metrics = new MetricsRegistry();
  registerRoutingAckMetrics(metrics, reconciler.routing);
  // Cost (issue 15 E): replica time sampled every 15 s; workers' CPU for right-sizing hints.
  const costLoad = new WorkerLoadPoller({
    clock,
    intervalMs: 15_000,
    readyReplicas: (endpoint) =>
      reconciler
        .replicaStatus(endpoint)
        .flatMap((r) => (r.state === 'ready' && r.url !== null ? [{ id: r.id, url: r.url }] : [])),
  });
  const cost = new CostService({
    store: controllerStore,
    clock,
    replicas: reconciler,
    prices: prices.prices,
    pricesSource: prices.source,
    metrics,
    workerLoad: costLoad,
    log: (message) => process.stderr.write(`kiln: ${message}\n`),
  });
  const observability: ObservabilityServices = {
    metrics,
    cost,
    quality: new QualityService({ store: controllerStore, clock, metrics }),
  };
  // Drift and skew (issue 15 C): the workers' sketches, collected every 5 s (docs/drift.md).
  observability.drift = startDriftService(
    controllerStore,
    clock,
    reconciler,
    observability.metrics,
  );
  const autoscale = new AutoscaleController({
    store: controllerStore,
    clock,
    replicas: reconciler,
    workerLoad,
    metrics: new AutoscaleMetrics(observability.metrics),
  });
  reconciler.onReplicaReady((endpoint, startMs) => autoscale.replicaReady(endpoint, startMs));
  // SLOs and alerts (issue 15 F): SLIs from the gateways' load reports, evaluated every 10 s.
  // The drift ceiling reads the drift part's latest round (C: `latestDrift`), when present.
  const slo = new SloService({
    store: controllerStore,
    clock,
    metrics: observability.metrics,
    drift: (endpoint) => Promise.resolve(driftReadingsOf(latestDriftOf(observability, endpoint))),
    log: (message) => process.stderr.write(`kiln: ${message}\n`),
  });
  observability.slo = slo;
  autoscale.onReport((report) => slo.ingest(report));
  let demoModels: string[] = [];
  let app: FastifyInstance | undefined;
  let gateway: GatewayProcess | undefined;
  // Once only: on PostgreSQL a lost lease closes them before the platform does.
  let controllersClosed: Promise<void> | null = null;
  const closeControllers = (): Promise<void> =>
    (controllersClosed ??= (async () => {
      await rollouts.close();
      await autoscale.close();
      await slo.close();
      await workerLoad.close();
      await cost.close();
      await costLoad.close();
      await observability.drift?.close();
    })());
  let reconcilerClosed: Promise<void> | null = null;
  const closeReconciler = (): Promise<void> => (reconcilerClosed ??= reconciler.close());
  // What adopts the replicas an earlier platform left and starts the controllers: at once on
  // SQLite, on gaining the lease on PostgreSQL.
  const startLoops = (): void => {
    reconciler.start();
    // Carries on whatever rollout the last control plane on this home left active.
    rollouts.start();
    autoscale.start();
    slo.start();
    workerLoad.start();
    cost.start();
    costLoad.start();
    observability.drift?.start();
  };
  const startControllers = async (): Promise<void> => {
    await reconciler.adopt(backend.kind === 'local' ? backend.survivors() : []);
    startLoops();
  };
  const leader =
    postgres === null || apiOnly
      ? null
      : leadAmongControlPlanes(postgres, {
          metrics,
          reconciler,
          clock,
          lease: options.lease ?? {},
          startControllers,
          // Its workers go with it: the new leader starts its own. Pods stay: the cluster's
          // replicas are the new leader's to adopt.
          stopControllers: async () => {
            if (backend.kind === 'kubernetes') backend.retain();
            await closeControllers();
            await closeReconciler();
          },
        });
  const closeAll = async (): Promise<void> => {
    // Pods outlive their control plane (a rolling update, a new leader): closing stops none.
    if (backend.kind === 'kubernetes') backend.retain();
    try {
      await leader?.close();
      await closeControllers();
      await gateway?.stop();
      await closeReconciler();
      await app?.close();
      await stores.close();
      if (!apiOnly) await rm(controlUrlFile, { force: true });
    } finally {
      lock?.release();
    }
  };
  try {
    if (options.demo === true && !apiOnly) demoModels = await registerDemoModels(registry, home);
    const withGateway = options.gateway !== false && !apiOnly;
    const { gatewayToken } = options.dev
      ? { gatewayToken: null }
      : await ensurePlatformTokens(store, clock, home, {
          holdsHome: !apiOnly,
          gateway: withGateway,
        });
    app = await buildApiServer({
      registry,
      home,
      version: kilnVersion,
      auth: options.dev ? 'dev' : 'tokens',
      clock,
      maxUploadBytes: options.maxUploadBytes ?? defaultMaxUploadBytes,
      logger: options.logger ?? false,
      ...(apiOnly
        ? {}
        : {
            serving: {
              endpoints,
              reconciler,
              rollouts,
              autoscale,
              gatewayUrl: () => gatewayUrl,
              ...(leader === null ? {} : { routing: () => leader.routing() }),
            },
          }),
      observability,
    });
    await app.listen({ host: options.host, port: options.port });
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : options.port;
    const host = options.host.includes(':') ? `[${options.host}]` : options.host;
    const url = `http://${host}:${port}`;
    if (!apiOnly) {
      // What an earlier platform left running, before the reconciler's first pass: gateways
      // get no snapshot before that pass (the routing table holds their polls), so the first
      // one they get routes to the adopted replicas. After listening, so a start that fails
      // to listen leaves them serving. On PostgreSQL that is once this control plane leads.
      if (leader === null)
        await reconciler.adopt(backend.kind === 'local' ? backend.survivors() : []);
      await writeFile(`${controlUrlFile}.tmp`, `${url}\n`);
      await rename(`${controlUrlFile}.tmp`, controlUrlFile);
      if (leader === null) startLoops();
      else leader.start();
    }
    if (withGateway) {
      gateway = new GatewayProcess({
        controlUrl: url,
        controlToken: gatewayToken,
        host: options.gatewayHost ?? options.host,
        port: options.gatewayPort ?? 8000,
        stateDir: join(home, 'gateway'),
        ...(detached ? { controlUrlFile } : {}),
        ...(options.otlpUrl === undefined ? {} : { otlpUrl: options.otlpUrl }),
        processes: gatewayProcesses,
      });
      gatewayUrl = (await gateway.adopt()) ?? (await gateway.start());
    }
    if (demoModels.length > 0) await deployDemoEndpoints(endpoints, home);
    return {
      url,
      gatewayUrl,
      registry,
      endpoints,
      reconciler,
      traffic,
      rollouts,
      autoscale,
      observability,
      leader: leader ?? { leading: () => true, lost: new Promise<void>(() => undefined) },
      demoModels,
      standbyWorkers: () => (backend.kind === 'local' ? backend.standbyWorkers() : []),
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

interface PlatformStores {
  readonly store: Store;
  readonly controllerStore: Store;
  /** On PostgreSQL: the URL and the controllers' fenced store. */
  readonly postgres: { readonly url: string; readonly controllerStore: PgStore } | null;
  close(): Promise<void>;
}

/** SQLite in the home (one store for all), or two PostgreSQL stores: the API's and the fenced one. */
async function openStores(
  home: string,
  url: string | undefined,
  clock: Clock,
): Promise<PlatformStores> {
  if (url === undefined) {
    const store = SqliteStore.open(join(home, 'kiln.db'), { clock });
    return { store, controllerStore: store, postgres: null, close: () => store.close() };
  }
  // API writes notify the leader's reconciler (pg-listener.ts); the controllers' do not (the
  // leader's own passes would wake themselves).
  const store = await PgStore.open(url, { clock, notifyChannel: storeChangedChannel });
  let controllerStore: PgStore;
  try {
    controllerStore = await PgStore.open(url, { clock, maxConnections: 4 });
  } catch (error) {
    await store.close();
    throw error;
  }
  return {
    store,
    controllerStore,
    postgres: { url, controllerStore },
    close: async () => {
      await controllerStore.close();
      await store.close();
    },
  };
}

interface Leader {
  leading(): boolean;
  readonly lost: Promise<void>;
  /** The routing gateways get from this control plane: its own while leading, else the leader's. */
  routing(): RoutingTable;
  start(): void;
  close(): Promise<void>;
}

/**
 * Issue 17 (docs/scale-out.md): contends for the controllers' lease; while it leads, the
 * controllers run with their store fenced by the term and every snapshot the reconciler
 * publishes is copied into the store; otherwise this control plane serves the API and the
 * snapshot the leader published.
 */
/** The longest a new leader keeps the last leader's routing while its own replicas start. */
const takeoverWaitMs = 60_000;

function leadAmongControlPlanes(
  postgres: NonNullable<PlatformStores['postgres']>,
  parts: {
    readonly metrics: MetricsRegistry;
    readonly reconciler: Reconciler;
    readonly clock: Clock;
    readonly lease: NonNullable<PlatformOptions['lease']>;
    readonly startControllers: () => Promise<void>;
    readonly stopControllers: () => Promise<void>;
  },
): Leader {
  const log = (message: string): void => void process.stderr.write(`kiln: ${message}\n`);
  const leaseDb = new PgDatabase(postgres.url, { max: 2 });
  const lease = new LeaderLease({ db: leaseDb, ...parts.lease, log });
  const follower = new RoutingFollower(postgres.controllerStore.db, parts.clock, 250, log);
  let publisher: RoutingPublisher | null = null;
  let routing: RoutingTable = follower.routing;
  parts.reconciler.routing.onPublish((snapshot) => publisher?.publish(snapshot));
  const leadership = new ControllerLeadership({
    lease,
    fence: (fence) => postgres.controllerStore.setFence(fence),
    log,
    lead: async (term) => {
      // Versions continue above the last leader's, so gateways take this leader's snapshots.
      const published = await readPublishedRouting(postgres.controllerStore.db);
      parts.reconciler.routing.advancePast(published?.version ?? 0);
      await parts.startControllers();
      await parts.reconciler.trigger();
      // Gateways keep the last leader's routing until this one's replicas serve it too.
      if (published !== null) {
        const ready = await untilServing(
          published.snapshot,
          parts.reconciler.routing,
          takeoverWaitMs,
          () => lease.term() === null,
        );
        if (lease.term() === null) return;
        if (!ready) log('takeover: publishing before every endpoint has a ready replica here');
      }
      publisher = new RoutingPublisher(postgres.controllerStore.db, term, parts.clock, log);
      routing = parts.reconciler.routing;
      // The first pass publishes only if the routing differs from the table's initial
      // content; the store gets this term's snapshot either way.
      publisher.publish(parts.reconciler.routing.current());
    },
    stepDown: async () => {
      publisher = null;
      routing = follower.routing;
      await follower.poll();
      await parts.stopControllers();
    },
  });
  registerLeaderMetrics(parts.metrics, lease, leadership);
  // At once rather than at the next period: the leader reconciles a change made through any
  // control plane's API, and followers read a snapshot as soon as it is stored.
  const listener = new PgListener(
    postgres.url,
    {
      [storeChangedChannel]: () => {
        if (leadership.leading()) void parts.reconciler.trigger();
      },
      [routingPublishedChannel]: () => {
        if (!leadership.leading()) void follower.poll();
      },
    },
    log,
  );
  return {
    leading: () => leadership.leading(),
    lost: leadership.lost.then(() => undefined),
    routing: () => routing,
    start: () => {
      follower.start();
      listener.start();
      leadership.start();
    },
    close: async () => {
      await listener.close();
      await leadership.close();
      await follower.close();
      await leaseDb.close();
    },
  };
}
