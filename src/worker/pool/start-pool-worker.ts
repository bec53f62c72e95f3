// A pool worker (issue 14): one process serving many rarely called models. It starts with no
// model and is ready at once; the control plane PUTs the endpoints it may serve
// (pool-protocol.ts). A model is loaded on its first request — verified like any load
// (pool-model-loader.ts) — and kept while it is among the most recently used that fit the
// memory budget (model-cache.ts); older ones are unloaded once their running requests are
// done. Each loaded model is served by the ordinary worker server (worker-server.ts), handed
// the request, so its answers, errors and metrics are a dedicated worker's.
//
//   request /v2/models/{e}/… ─▶ assigned? (else 404) ─▶ loaded? hit : miss → load (one at a
//   time; evict LRU to make room) ─▶ that model's worker server ─▶ answer + kiln-pool-resident

import { timingSafeEqual } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Counter, Gauge } from 'prom-client';
import { errorRegistry, kilnError, type ErrorCode, type KilnError } from '../../core/errors.ts';
import { kilnVersion } from '../../core/version.ts';
import {
  poolModelsPath,
  poolResidentHeader,
  poolStatusPath,
  poolTokenHeader,
  type PoolAssignment,
  type PoolModel,
  type PoolWorkerSettings,
  type PoolWorkerStatus,
} from '../../protocol/pool/pool-protocol.ts';
import { readRequestBody } from '../read-request-body.ts';
import type { RunningWorker } from '../start-worker.ts';
import { WorkerMetrics } from '../worker-metrics.ts';
import { createWorkerServer, type WorkerState } from '../worker-server.ts';
import type { WorkerEvent, WorkerSpec } from '../worker-spec.ts';
import { ModelCache, type CachedModel } from './model-cache.ts';
import { loadPoolModel } from './pool-model-loader.ts';
import type { ProcessTracing } from '../../observability/tracing/start-tracing.ts';
import { registerSpanCounts } from '../../observability/tracing/span-count-metrics.ts';

/** A failed load is answered from memory this long before it is tried again. */
const failureRetryMs = 10_000;
const maxAssignmentBytes = 64 * 1024 * 1024;

interface LoadedModel {
  readonly model: PoolModel;
  readonly state: WorkerState;
  /** The model's own worker server (never listening: requests are handed to it). */
  readonly server: Server;
  readonly dir: string;
}

interface LoadFailure {
  readonly atMs: number;
  readonly code: ErrorCode;
  readonly message: string;
}

type Loaded = CachedModel<LoadedModel>;

export async function startPoolWorker(
  spec: WorkerSpec & { readonly pool: PoolWorkerSettings },
  emit: (event: WorkerEvent) => void,
  now: () => number = Date.now,
  /** Records traced requests' spans (docs/tracing.md); null: tracing off. */
  tracing: ProcessTracing | null = null,
): Promise<RunningWorker> {
  const settings = spec.pool;
  const metrics = new WorkerMetrics({ replica: spec.replicaId });
  if (tracing !== null) registerSpanCounts(metrics.registry, 'worker', tracing.counts);
  const series = { pool: settings.name };
  const counter = (name: string, help: string): Counter<'pool'> =>
    new Counter({ name, help, labelNames: ['pool'], registers: [metrics.registry] });
  const loadsTotal = counter('kiln_pool_loads_total', 'Models loaded by this pool worker');
  const loadFailuresTotal = counter('kiln_pool_load_failures_total', 'Model loads that failed');
  const evictionsTotal = counter(
    'kiln_pool_evictions_total',
    'Models unloaded to stay within the memory budget (least recently used first)',
  );
  const hitsTotal = counter('kiln_pool_hits_total', 'Requests for a model already loaded');
  const missesTotal = counter('kiln_pool_misses_total', 'Requests that waited for a load');
  const residentBytes = new Gauge({
    name: 'kiln_pool_resident_bytes',
    help: 'Model memory held now (as measured at each load)',
    labelNames: ['pool'],
    registers: [metrics.registry],
  });
  const residentModels = new Gauge({
    name: 'kiln_pool_resident_models',
    help: 'Models loaded now',
    labelNames: ['pool'],
    registers: [metrics.registry],
  });
  const counts = { loads: 0, loadFailures: 0, evictions: 0, hits: 0, misses: 0 };

  const cache = new ModelCache<LoadedModel>(settings.memoryBudgetBytes);
  let assignment: PoolAssignment = { generation: 0, models: [] };
  let assigned = new Map<string, PoolModel>();
  /** Loads waiting or running, by endpoint; one runs at a time (memory stays in budget). */
  const loading = new Map<string, Promise<Loaded | LoadFailure>>();
  let loadChain: Promise<unknown> = Promise.resolve();
  const failures = new Map<string, LoadFailure>();
  /** Measured size by revision: what a reload of it needs room for. */
  const measured = new Map<string, number>();
  let draining = false;
  let active = 0;
  let loadCount = 0;

  const updateGauges = (): void => {
    residentBytes.set(series, cache.residentBytes);
    residentModels.set(series, cache.size);
  };

  /** Unloads an evicted model once the requests running on it are done. */
  const unload = async (entry: Loaded, evicted: boolean): Promise<void> => {
    if (evicted) {
      counts.evictions += 1;
      evictionsTotal.inc(series);
    }
    updateGauges();
    // Requests that were handed this entry take their hold in the same turn (microtasks):
    // wait past it before looking.
    await new Promise((resolve) => setImmediate(resolve));
    while (entry.users > 0 || entry.value.state.inflight > 0)
      await new Promise((resolve) => setTimeout(resolve, 10));
    entry.value.state.phase = 'draining';
    await entry.value.state.runtime?.unload();
    entry.value.state.runtime = null;
    await rm(entry.value.dir, { recursive: true, force: true });
  };

  const modelSpec = (model: PoolModel): WorkerSpec => ({
    ...spec,
    endpoint: model.endpoint,
    model: model.model,
    version: model.version,
    format: model.format,
    files: model.files,
    schema: model.schema,
    maxBodyBytes: model.maxBodyBytes,
    config: model.config,
    batching: null,
    defaultTimeoutMs: model.defaultTimeoutMs,
    llm: null,
    pool: null,
  });

  const loadNow = async (model: PoolModel): Promise<Loaded | LoadFailure> => {
    const current = cache.peek(model.endpoint);
    if (current !== undefined && current.value.model.revision === model.revision) return current;
    const failed = failures.get(model.revision);
    if (failed !== undefined && now() - failed.atMs < failureRetryMs) return failed;
    // Room first, for what it measured last time (else its files' size), so memory stays
    // near the budget while it loads; then again for what it really takes.
    const expected = measured.get(model.revision) ?? model.files.reduce((n, f) => n + f.size, 0);
    for (const entry of cache.evictFor(expected)) void unload(entry, true);
    loadCount += 1;
    const dir = join(spec.workDir, 'models', `${loadCount}`);
    const outcome = await loadPoolModel(model, spec.artifacts, dir);
    if (!outcome.ok) {
      counts.loadFailures += 1;
      loadFailuresTotal.inc(series);
      const code = (outcome.code in errorRegistry ? outcome.code : 'KILN_INTERNAL') as ErrorCode;
      const failure = { atMs: now(), code, message: outcome.message };
      failures.set(model.revision, failure);
      process.stderr.write(
        `pool worker ${spec.replicaId}: ${model.endpoint}: ${failure.message}\n`,
      );
      return failure;
    }
    failures.delete(model.revision);
    const tracer = tracing?.tracer ?? null;
    const server = createWorkerServer(modelSpec(model), outcome.state, metrics, undefined, tracer);
    const loaded: LoadedModel = { model, state: outcome.state, server, dir };
    const entry = cache.add(model.endpoint, loaded, outcome.memoryBytes, now());
    measured.set(model.revision, outcome.memoryBytes);
    counts.loads += 1;
    loadsTotal.inc(series);
    // Reassigned while it loaded (dropped or redeployed): not kept.
    if (assigned.get(model.endpoint)?.revision !== model.revision) {
      cache.remove(model.endpoint);
      void unload(entry, false);
      return { atMs: now(), code: 'KILN_ENDPOINT_NOT_FOUND', message: 'no longer assigned' };
    }
    for (const old of cache.evictFor(0, model.endpoint)) void unload(old, true);
    updateGauges();
    return entry;
  };

  const ensureLoaded = (model: PoolModel): Promise<Loaded | LoadFailure> => {
    const pending = loading.get(model.endpoint);
    if (pending !== undefined) return pending;
    const run = loadChain.then(() => loadNow(model));
    loadChain = run.catch(() => undefined);
    const tracked = run.finally(() => loading.delete(model.endpoint));
    loading.set(model.endpoint, tracked);
    return tracked;
  };

  const assign = (next: PoolAssignment): void => {
    if (next.generation < assignment.generation) return;
    assignment = next;
    assigned = new Map(next.models.map((m) => [m.endpoint, m]));
    for (const entry of cache.list()) {
      if (assigned.get(entry.key)?.revision === entry.value.model.revision) continue;
      cache.remove(entry.key);
      void unload(entry, false);
    }
  };

  const status = (): PoolWorkerStatus => ({
    pool: settings.name,
    replica: spec.replicaId,
    memoryBudgetBytes: settings.memoryBudgetBytes,
    residentBytes: cache.residentBytes,
    models: cache.list().map((e) => ({
      endpoint: e.key,
      revision: e.value.model.revision,
      bytes: e.bytes,
      loadedAt: new Date(e.loadedAtMs).toISOString(),
      lastUsedAt: new Date(e.lastUsedMs).toISOString(),
      requests: e.requests,
    })),
    loading: [...loading.keys()],
    generation: assignment.generation,
    assigned: assigned.size,
    ...counts,
  });

  const send = (response: ServerResponse, code: number, body: unknown): void => {
    const text = JSON.stringify(body);
    response.writeHead(code, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
    });
    response.end(text);
  };
  const sendError = (response: ServerResponse, error: KilnError): void => {
    if (error.retryable && error.status === 503) response.setHeader('retry-after', '1');
    send(response, error.status, { error: error.message, code: error.code });
  };
  const tokenOk = (request: IncomingMessage): boolean => {
    const given = request.headers[poolTokenHeader];
    if (typeof given !== 'string') return false;
    const a = Buffer.from(given);
    const b = Buffer.from(settings.token);
    return a.length === b.length && timingSafeEqual(a, b);
  };

  const serveModel = async (
    request: IncomingMessage,
    response: ServerResponse,
    endpoint: string,
  ): Promise<void> => {
    const model = assigned.get(endpoint);
    if (model === undefined) {
      request.resume();
      return sendError(response, kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint }));
    }
    if (draining) {
      request.resume();
      const reason = 'the pool worker is draining';
      return sendError(response, kilnError('KILN_MODEL_NOT_READY', { model: endpoint, reason }));
    }
    let entry = cache.use(endpoint, now());
    if (entry !== undefined && entry.value.model.revision === model.revision) {
      counts.hits += 1;
      hitsTotal.inc(series);
    } else {
      counts.misses += 1;
      missesTotal.inc(series);
      active += 1; // a request waiting for its load counts for the drain
      const outcome = await ensureLoaded(model);
      active -= 1;
      if (!('key' in outcome)) {
        request.resume();
        const error = kilnError('KILN_MODEL_NOT_READY', {
          model: endpoint,
          reason: outcome.message,
        });
        return sendError(response, error);
      }
      entry = outcome;
      cache.use(endpoint, now());
    }
    // Held (never unloaded) until its answer has left.
    const held = entry;
    held.users += 1;
    held.requests += 1;
    response.once('close', () => {
      held.users -= 1;
    });
    response.setHeader(
      poolResidentHeader,
      cache
        .list()
        .map((e) => e.key)
        .join(','),
    );
    held.value.server.emit('request', request, response);
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    const method = request.method ?? 'GET';
    if (method === 'GET' && path === '/v2/health/live') return send(response, 200, { live: true });
    if (method === 'GET' && path === '/v2/health/ready') {
      if (!draining) return send(response, 200, { ready: true });
      const reason = 'draining';
      return sendError(
        response,
        kilnError('KILN_MODEL_NOT_READY', { model: settings.name, reason }),
      );
    }
    if (method === 'GET' && path === '/v2')
      return send(response, 200, {
        name: 'kiln-pool-worker',
        version: kilnVersion,
        extensions: [],
      });
    if (method === 'GET' && path === '/metrics') {
      const text = await metrics.registry.metrics();
      response.writeHead(200, { 'content-type': metrics.registry.contentType });
      response.end(text);
      return;
    }
    if (path === poolModelsPath || path === poolStatusPath) {
      if (!tokenOk(request)) {
        request.resume();
        return sendError(
          response,
          kilnError('KILN_TOKEN_INVALID', { reason: 'not this worker’s' }),
        );
      }
      if (method === 'GET' && path === poolStatusPath) return send(response, 200, status());
      if (method === 'PUT' && path === poolModelsPath) {
        const body = await readRequestBody(request, maxAssignmentBytes);
        if (typeof body === 'string') return;
        let next: PoolAssignment;
        try {
          next = JSON.parse(body.toString('utf8')) as PoolAssignment;
        } catch {
          const reason = 'the assignment is not JSON';
          return sendError(response, kilnError('KILN_VALIDATION_FAILED', { reason }));
        }
        if (typeof next.generation !== 'number' || !Array.isArray(next.models)) {
          const reason = 'an assignment is {generation, models}';
          return sendError(response, kilnError('KILN_VALIDATION_FAILED', { reason }));
        }
        assign(next);
        return send(response, 200, { generation: assignment.generation, assigned: assigned.size });
      }
    }
    // Its own name's metadata: what a platform adopting it asks before it counts it ready.
    if (method === 'GET' && path === `/v2/models/${encodeURIComponent(spec.endpoint)}`) {
      const own = { name: spec.endpoint, versions: ['0'], platform: 'kiln-pool' };
      return send(response, 200, { ...own, inputs: [], outputs: [] });
    }
    const match = /^\/v2\/models\/([^/]+)(?:\/.*)?$/.exec(path);
    if (match !== null) {
      let endpoint: string;
      try {
        endpoint = decodeURIComponent(match[1] ?? '');
      } catch {
        endpoint = match[1] ?? '';
      }
      return serveModel(request, response, endpoint);
    }
    request.resume();
    return sendError(response, kilnError('KILN_ROUTE_NOT_FOUND', { method, url: path }));
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      process.stderr.write(`pool worker ${spec.replicaId}: ${String(error)}\n`);
      if (!response.headersSent)
        send(response, 500, { error: 'internal error', code: 'KILN_INTERNAL' });
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(spec.port, spec.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${spec.host}:${port}`;
  emit({ event: 'listening', url });
  // Nothing to load up front: ready to take its assignment and its first requests.
  emit({ event: 'ready', inputs: [], outputs: [], memoryBytes: 0 });
  const state: WorkerState = {
    phase: 'ready',
    reason: null,
    runtime: null,
    schema: null,
    inflight: 0,
    batcher: null,
  };

  return {
    url,
    state,
    loaded: Promise.resolve(),
    async close(graceMs = 10_000): Promise<void> {
      draining = true;
      state.phase = 'draining';
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = Date.now() + graceMs;
      const busy = (): boolean =>
        active > 0 || cache.list().some((e) => e.users > 0 || e.value.state.inflight > 0);
      while (busy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      server.closeAllConnections();
      await closed;
      await loadChain;
      for (const entry of cache.list()) {
        cache.remove(entry.key);
        await entry.value.state.runtime?.unload();
      }
      await rm(spec.workDir, { recursive: true, force: true });
    },
  };
}
