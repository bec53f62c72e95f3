// The control plane's Prometheus metrics for autoscaling, in a registry of its own (never
// prom-client's global one: several platforms live in one test process). Served on the
// control plane's GET /metrics. Label sets are bounded: endpoint names of autoscaled
// endpoints (their series are removed when the endpoint or its policy goes), event kinds.

import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ScaleEventKind } from '../../store/scaling-records.ts';

// Seconds from a wake to the first ready replica: a pre-started worker (< 1 s) to a large
// model's load (minutes).
const coldStartBuckets = [0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600];

export class AutoscaleMetrics {
  readonly registry: Registry;
  readonly contentType: string;
  private readonly desired: Gauge<'endpoint'>;
  private readonly ready: Gauge<'endpoint'>;
  private readonly panic: Gauge<'endpoint'>;
  private readonly events: Counter<'endpoint' | 'kind'>;
  private readonly coldStarts: Histogram<'endpoint'>;

  /** `registry`: the control plane's (GET /metrics); default a registry of its own. */
  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    this.contentType = registry.contentType;
    const registers = [this.registry];
    this.desired = new Gauge({
      name: 'kiln_autoscale_desired_replicas',
      help: 'Replicas the autoscaler wants now for an endpoint (what the reconciler runs).',
      labelNames: ['endpoint'],
      registers,
    });
    this.ready = new Gauge({
      name: 'kiln_autoscale_ready_replicas',
      help: "Ready replicas of an autoscaled endpoint's current revision.",
      labelNames: ['endpoint'],
      registers,
    });
    this.panic = new Gauge({
      name: 'kiln_autoscale_panic_mode',
      help: 'Whether the autoscaler decides from the panic window for an endpoint (1) or not (0).',
      labelNames: ['endpoint'],
      registers,
    });
    this.events = new Counter({
      name: 'kiln_autoscale_scale_events_total',
      help: 'Replica count changes, by endpoint and kind (scale-up, scale-down, to-zero, wake, manual).',
      labelNames: ['endpoint', 'kind'],
      registers,
    });
    this.coldStarts = new Histogram({
      name: 'kiln_autoscale_cold_start_seconds',
      help: 'From an endpoint at zero replicas being woken to its first replica ready.',
      labelNames: ['endpoint'],
      buckets: coldStartBuckets,
      registers,
    });
  }

  state(endpoint: string, desired: number, ready: number, panic: boolean): void {
    this.desired.labels(endpoint).set(desired);
    this.ready.labels(endpoint).set(ready);
    this.panic.labels(endpoint).set(panic ? 1 : 0);
  }

  event(endpoint: string, kind: ScaleEventKind): void {
    this.events.labels(endpoint, kind).inc();
  }

  coldStart(endpoint: string, seconds: number): void {
    this.coldStarts.labels(endpoint).observe(seconds);
  }

  /** The endpoint is no longer autoscaled (or gone): its gauges go; counters stay. */
  forget(endpoint: string): void {
    this.desired.remove(endpoint);
    this.ready.remove(endpoint);
    this.panic.remove(endpoint);
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
