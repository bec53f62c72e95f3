// A worker HTTP server over a stub runtime whose executions a test holds and releases, for
// the worker's batching and channel tests.

import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Tensor } from '../../src/core/tensor.ts';
import { compileSchema } from '../../src/protocol/v2/schema.ts';
import type { InferOutcome, InferRequest, ModelRuntime } from '../../src/runtimes/runtime.ts';
import type { BatchingConfig } from '../../src/store/serving-records.ts';
import { createInferBatcher } from '../../src/worker/batching/infer-batcher.ts';
import { WorkerMetrics } from '../../src/worker/worker-metrics.ts';
import { createWorkerServer, type WorkerState } from '../../src/worker/worker-server.ts';
import type { WorkerSpec } from '../../src/worker/worker-spec.ts';
import type { KilnTracer } from '../../src/observability/tracing/kiln-tracer.ts';

export const schema = {
  inputs: [{ name: 'x', datatype: 'FP32' as const, shape: [-1, -1] }],
  outputs: [{ name: 'y', datatype: 'FP32' as const, shape: [-1, -1] }],
};

/** y = 2x. The first `held` executions wait for release(); the others answer at once. */
export class StubRuntime implements ModelRuntime {
  readonly specVersion = 1 as const;
  readonly name = 'stub';
  readonly inputs = schema.inputs;
  readonly outputs = schema.outputs;
  /** Input values of each execution, one array per row. */
  readonly executions: number[][][] = [];
  private waiting: (() => void)[] = [];
  constructor(public held = 1) {}

  async infer(request: InferRequest): Promise<InferOutcome> {
    const x = request.inputs[0] as Tensor;
    const [rows = 0, width = 0] = x.shape;
    const data = x.data as Float32Array;
    this.executions.push(
      Array.from({ length: rows }, (_, r) => [...data.subarray(r * width, (r + 1) * width)]),
    );
    if (this.held > 0) {
      this.held -= 1;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    return {
      ok: true,
      outputs: [{ name: 'y', datatype: 'FP32', shape: x.shape, data: data.map((v) => v * 2) }],
    };
  }
  release(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }
  warmup(): Promise<void> {
    return Promise.resolve();
  }
  memoryBytes(): number {
    return 0;
  }
  unload(): Promise<void> {
    return Promise.resolve();
  }
}

export interface Harness {
  readonly url: string;
  readonly runtime: StubRuntime;
  readonly state: WorkerState;
  readonly metrics: WorkerMetrics;
  readonly server: Server;
  close(): Promise<void>;
}

export async function startStub(
  batching: BatchingConfig | null,
  held = 1,
  specOverrides: Partial<WorkerSpec> = {},
  /** Records traced requests' spans (docs/tracing.md); null: tracing off. */
  tracer: KilnTracer | null = null,
): Promise<Harness> {
  const spec: WorkerSpec = {
    replicaId: 'm-1',
    endpoint: 'm',
    model: 'm',
    version: 1,
    format: 'onnx',
    files: [],
    schema,
    artifacts: { kind: 'local', root: '' },
    workDir: '',
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: 1_000_000,
    config: {},
    batching,
    defaultTimeoutMs: null,
    ...specOverrides,
  };
  const runtime = new StubRuntime(held);
  const metrics = new WorkerMetrics({ replica: spec.replicaId });
  const state: WorkerState = {
    phase: 'ready',
    reason: null,
    runtime,
    schema: compileSchema(schema),
    inflight: 0,
    batcher:
      batching === null
        ? null
        : createInferBatcher(runtime, batching, {
            hooks: metrics.batcherHooks({ endpoint: 'm', version: '1' }),
          }),
  };
  const server: Server = createWorkerServer(spec, state, metrics, undefined, tracer);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    runtime,
    state,
    metrics,
    server,
    close: () => {
      runtime.release();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
