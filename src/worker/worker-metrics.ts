// Prometheus metrics of one worker process (its own registry, exposed at /metrics).

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { InferBatcherHooks } from './batching/infer-batcher.ts';

type Series = 'endpoint' | 'version';

export class WorkerMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<'endpoint' | 'version' | 'code'>;
  readonly duration: Histogram<'endpoint' | 'version'>;
  readonly inflight: Gauge<'endpoint'>;
  readonly ready: Gauge<'endpoint' | 'version'>;
  readonly memoryBytes: Gauge<'endpoint' | 'version'>;
  /** Model executions (a batch, or one unbatched request): compare with `requests`. */
  readonly executions: Counter<Series>;
  readonly batchSize: Histogram<Series>;
  readonly queueDepth: Gauge<Series>;
  readonly queueWait: Histogram<Series>;
  readonly shed: Counter<Series>;
  readonly expired: Counter<Series>;
  /** The adaptive batcher's choice, and the costs it read (adaptive-gathering.ts). */
  readonly gathering: Gauge<Series>;
  readonly rowCost: Gauge<Series | 'mode'>;
  readonly gatherWait: Gauge<Series | 'mode'>;
  readonly probes: Counter<Series | 'mode'>;

  constructor(labels: { replica: string }) {
    this.registry.setDefaultLabels(labels);
    collectDefaultMetrics({ register: this.registry, prefix: 'kiln_worker_' });
    this.requests = new Counter({
      name: 'kiln_worker_requests_total',
      help: 'Inference requests handled by this worker, by HTTP status code',
      labelNames: ['endpoint', 'version', 'code'],
      registers: [this.registry],
    });
    this.duration = new Histogram({
      name: 'kiln_worker_request_duration_seconds',
      help: 'Time from request received to response written, in seconds',
      labelNames: ['endpoint', 'version'],
      buckets: [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
      ],
      registers: [this.registry],
    });
    this.inflight = new Gauge({
      name: 'kiln_worker_inflight_requests',
      help: 'Inference requests being handled now',
      labelNames: ['endpoint'],
      registers: [this.registry],
    });
    this.ready = new Gauge({
      name: 'kiln_worker_ready',
      help: '1 when the model is loaded and serving',
      labelNames: ['endpoint', 'version'],
      registers: [this.registry],
    });
    this.memoryBytes = new Gauge({
      name: 'kiln_worker_model_memory_bytes',
      help: 'Bytes held by the loaded model, as its runtime reports them',
      labelNames: ['endpoint', 'version'],
      registers: [this.registry],
    });
    this.executions = new Counter({
      name: 'kiln_worker_batch_executions_total',
      help: 'Model executions: one per batch, or per request when batching is off',
      labelNames: ['endpoint', 'version'],
      registers: [this.registry],
    });
    this.batchSize = new Histogram({
      name: 'kiln_worker_batch_size',
      help: 'Rows per model execution',
      labelNames: ['endpoint', 'version'],
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256],
      registers: [this.registry],
    });
    this.queueDepth = new Gauge({
      name: 'kiln_worker_queue_depth',
      help: 'Requests waiting in the dynamic batcher (not counting the batch running)',
      labelNames: ['endpoint', 'version'],
      registers: [this.registry],
    });
    this.queueWait = new Histogram({
      name: 'kiln_worker_queue_wait_seconds',
      help: 'Time a request waited in the dynamic batcher before its batch ran, in seconds',
      labelNames: ['endpoint', 'version'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [this.registry],
    });
    this.shed = new Counter({
      name: 'kiln_worker_shed_total',
      help: 'Requests refused with 429 because the batch queue was full',
      labelNames: ['endpoint', 'version'],
      registers: [this.registry],
    });
    this.expired = new Counter({
      name: 'kiln_worker_expired_total',
      help: 'Requests failed with 504 because their deadline passed before they ran',
      labelNames: ['endpoint', 'version'],
      registers: [this.registry],
    });
    this.gathering = new Gauge({
      name: 'kiln_worker_batch_gathering',
      help: '1 while the batcher gathers (waits up to its delay, joins requests); 0 while it runs each request as it comes',
      labelNames: ['endpoint', 'version'],
      registers: [this.registry],
    });
    this.rowCost = new Gauge({
      name: 'kiln_worker_batch_row_cost_seconds',
      help: 'What a row cost in the last measured stretch of each mode (gather or alone), CPU seconds: the adaptive batcher compares the two, measured back to back',
      labelNames: ['endpoint', 'version', 'mode'],
      registers: [this.registry],
    });
    this.gatherWait = new Gauge({
      name: 'kiln_worker_batch_gather_wait_seconds',
      help: 'Wait gathering added per row while the model was free, in the last measured stretch of each mode',
      labelNames: ['endpoint', 'version', 'mode'],
      registers: [this.registry],
    });
    this.probes = new Counter({
      name: 'kiln_worker_batch_probes_total',
      help: 'Probes of the adaptive batcher, by the mode probed (gather or alone)',
      labelNames: ['endpoint', 'version', 'mode'],
      registers: [this.registry],
    });
  }

  /**
   * The batcher's hooks, feeding the queue depth, batch size and execution series. Executions
   * are counted as the model runs, so a batch rerun request by request (it failed joined,
   * or the model cannot join rows) counts each run with its own rows.
   */
  batcherHooks(labels: Record<Series, string>): InferBatcherHooks {
    // Children bound to the labels once: no label hashing per batch.
    const depth = this.queueDepth.labels(labels);
    const executions = this.executions.labels(labels);
    const batchSize = this.batchSize.labels(labels);
    const gathering = this.gathering.labels(labels);
    const byMode = (mode: 'gather' | 'alone') => ({
      cost: this.rowCost.labels({ ...labels, mode }),
      wait: this.gatherWait.labels({ ...labels, mode }),
    });
    const modes = { gather: byMode('gather'), alone: byMode('alone') };
    return {
      onQueueDepth: (queued) => depth.set(queued),
      onExecution: (rows) => {
        executions.inc();
        batchSize.observe(rows);
      },
      onGathering: (on) => gathering.set(on ? 1 : 0),
      onModeCost: (gather, executeMicrosPerRow, waitMicrosPerRow) => {
        const children = gather ? modes.gather : modes.alone;
        children.cost.set(executeMicrosPerRow / 1e6);
        children.wait.set(waitMicrosPerRow / 1e6);
      },
      onProbe: (gather) => this.probes.inc({ ...labels, mode: gather ? 'gather' : 'alone' }),
    };
  }
}
