// Prometheus metrics of one worker process (its own registry, exposed at /metrics).

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class WorkerMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<'endpoint' | 'version' | 'code'>;
  readonly duration: Histogram<'endpoint' | 'version'>;
  readonly inflight: Gauge<'endpoint'>;
  readonly ready: Gauge<'endpoint' | 'version'>;
  readonly memoryBytes: Gauge<'endpoint' | 'version'>;

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
  }
}
