// A worker process serves one model version for one endpoint replica. It answers health
// probes at once (live; not ready), then verifies and loads the model:
//
//   listen ─► copy the version's blobs into workDir, re-hashing each ─► load the runtime
//          ─► compile the schema ─► warm up ─► ready
//
// Any failure on the way is reported (a `failed` event with the reason) and the worker never
// becomes ready. On close it drains: stops accepting (503), runs every request already
// accepted — queued in the batcher included — and waits for them (up to graceMs).

import { chmod, mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createServer as createNetServer, type AddressInfo, type Server } from 'node:net';
import { isKilnError } from '../core/errors.ts';
import { openArtifactStorage } from '../registry/open-artifact-storage.ts';
import { loadRuntime } from '../runtimes/load-runtime.ts';
import { compileSchema } from '../protocol/v2/schema.ts';
import { inputDatatypePolicy } from '../protocol/v2/input-datatypes.ts';
import { createInferBatcher } from './batching/infer-batcher.ts';
import { featureColumnLayout } from './feature-columns.ts';
import { WorkerMetrics } from './worker-metrics.ts';
import { closeChannels } from './worker-channel.ts';
import { createWorkerServer, type WorkerState } from './worker-server.ts';
import { maxSocketPathBytes, type WorkerEvent, type WorkerSpec } from './worker-spec.ts';
import type { ProcessTracing } from '../observability/tracing/start-tracing.ts';
import { registerSpanCounts } from '../observability/tracing/span-count-metrics.ts';

export interface RunningWorker {
  readonly url: string;
  readonly state: Readonly<WorkerState>;
  /** Resolves once loading has finished, either way. */
  readonly loaded: Promise<void>;
  /** Drains in-flight requests (up to graceMs), then unloads and removes workDir. */
  close(graceMs?: number): Promise<void>;
}

export async function startWorker(
  spec: WorkerSpec,
  emit: (event: WorkerEvent) => void,
  options: {
    /** Records traced requests' spans (main.ts: when KILN_OTLP_URL is set); null: off. */
    readonly tracing?: ProcessTracing | null;
  } = {},
): Promise<RunningWorker> {
  const metrics = new WorkerMetrics({ replica: spec.replicaId });
  const tracing = options.tracing ?? null;
  if (tracing !== null) registerSpanCounts(metrics.registry, 'worker', tracing.counts);
  const state: WorkerState = {
    phase: 'loading',
    reason: null,
    runtime: null,
    schema: null,
    inflight: 0,
    batcher: null,
  };
  const server = createWorkerServer(spec, state, metrics, undefined, tracing?.tracer ?? null);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(spec.port, spec.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${spec.host}:${port}`;
  const local = await listenLocal(server, spec.channelSocket ?? null);
  emit({ event: 'listening', url, ...(local === null ? {} : { socketPath: local.path }) });

  const fail = (code: string, message: string): void => {
    state.phase = 'failed';
    state.reason = message;
    emit({ event: 'failed', code, message });
  };

  const load = async (): Promise<void> => {
    const modelDir = join(spec.workDir, 'model');
    try {
      await rm(modelDir, { recursive: true, force: true });
      await (await openArtifactStorage(spec.artifacts)).materialize(spec.files, modelDir);
    } catch (error) {
      if (isKilnError(error)) return fail(error.code, error.message);
      return fail(
        'KILN_INTERNAL',
        `could not read the model's artifacts: ${(error as Error).message}`,
      );
    }
    if (spec.format === 'hf-llm') return loadLlm(modelDir);
    // A tree model declared one input per feature runs on one [-1, F] matrix of them.
    const columns = featureColumnLayout(spec.format, spec.schema);
    const outcome = await loadRuntime({
      modelDir,
      format: spec.format,
      files: spec.files.map((f) => f.path),
      schema: columns?.runtimeSchema ?? spec.schema,
      config: spec.config,
    });
    if (!outcome.ok) return fail('KILN_MODEL_LOAD_FAILED', outcome.reason);
    const runtime = outcome.runtime;
    const schema = spec.schema ?? { inputs: runtime.inputs, outputs: runtime.outputs };
    try {
      // The gateway compiles the same schema with the same policy: one verdict, one message.
      state.schema = compileSchema(schema, { inputDatatypes: inputDatatypePolicy(spec.format) });
      await runtime.warmup();
    } catch (error) {
      await runtime.unload();
      return fail('KILN_MODEL_LOAD_FAILED', `warm-up failed: ${(error as Error).message}`);
    }
    state.runtime = runtime;
    state.columns = columns;
    const series = { endpoint: spec.endpoint, version: String(spec.version) };
    state.batcher =
      spec.batching === null
        ? null
        : createInferBatcher(runtime, spec.batching, { hooks: metrics.batcherHooks(series) });
    state.phase = 'ready';
    metrics.ready.set({ endpoint: spec.endpoint, version: String(spec.version) }, 1);
    metrics.memoryBytes.set(
      { endpoint: spec.endpoint, version: String(spec.version) },
      runtime.memoryBytes(),
    );
    emit({
      event: 'ready',
      inputs: schema.inputs,
      outputs: schema.outputs,
      memoryBytes: runtime.memoryBytes(),
      // Declared columns are the features' names; the model file's would name nothing here.
      ...(runtime.featureNames == null || columns !== null
        ? {}
        : { featureNames: runtime.featureNames }),
    });
  };
  // An LLM has no runtime or tensor schema: its engine serves the OpenAI routes.
  const loadLlm = async (modelDir: string): Promise<void> => {
    const { loadLlmService } = await import('./llm/load-llm-service.ts');
    const outcome = await loadLlmService(spec, modelDir, metrics.registry);
    if (!outcome.ok) return fail('KILN_MODEL_LOAD_FAILED', outcome.reason);
    state.llm = outcome.service;
    state.phase = 'ready';
    const series = { endpoint: spec.endpoint, version: String(spec.version) };
    metrics.ready.set(series, 1);
    metrics.memoryBytes.set(series, outcome.memoryBytes);
    emit({ event: 'ready', inputs: [], outputs: [], memoryBytes: outcome.memoryBytes });
  };
  const loaded = load().catch((error: unknown) => fail('KILN_INTERNAL', String(error)));

  return {
    url,
    state,
    loaded,
    async close(graceMs = 10_000): Promise<void> {
      state.phase = 'draining';
      // Queued requests were accepted: run them now rather than after their batching delay.
      state.batcher?.drain();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = Date.now() + graceMs;
      while (state.inflight > 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      server.closeAllConnections();
      closeChannels(server);
      local?.server.close();
      await closed;
      await loaded;
      await state.runtime?.unload();
      state.runtime = null;
      await state.llm?.engine.close();
      state.llm = null;
      await rm(spec.workDir, { recursive: true, force: true });
    },
  };
}

/**
 * Serves `server`'s routes on a Unix socket too (owner-only), for a gateway on this host.
 * A socket that cannot be made (a path too long, a read-only folder) is not fatal: the gateway
 * then uses TCP, which every worker serves.
 */
async function listenLocal(
  server: ReturnType<typeof createWorkerServer>,
  path: string | null,
): Promise<{ readonly server: Server; readonly path: string } | null> {
  if (path === null) return null;
  const local = createNetServer((socket) => server.emit('connection', socket));
  local.on('error', () => undefined); // after listening: accept errors; the gateway has TCP
  try {
    if (Buffer.byteLength(path) > maxSocketPathBytes)
      throw new Error(`the path is longer than ${maxSocketPathBytes} bytes`);
    await mkdir(dirname(path), { recursive: true });
    await rm(path, { force: true }); // a socket left by a worker that was killed
    await new Promise<void>((resolve, reject) => {
      local.once('error', reject);
      local.listen(path, () => {
        local.off('error', reject);
        resolve();
      });
    });
    await chmod(path, 0o600);
    return { server: local, path };
  } catch (error) {
    local.close();
    process.stderr.write(
      `worker: no local channel socket at ${path} (${(error as Error).message}); TCP only\n`,
    );
    return null;
  }
}
