// The gateway's Prometheus metrics, in a registry of its own (never prom-client's global
// one, so several gateways can live in one test process). Label sets are bounded: endpoint
// and version come from the routing snapshot (anything else is `_unknown`), code is an HTTP
// status, reason is one of `UpstreamErrorReason` or `RejectionReason`.
//
// `labels()` hashes its arguments on every call, so the hot path never calls it: each
// (endpoint, version) gets an `EndpointSeries` holding its child metrics, made once.

import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export const unknownLabel = '_unknown';

export type UpstreamErrorReason =
  'refused' | 'reset' | 'connect_timeout' | 'timeout' | 'response_aborted' | 'other';

/** What the metrics read of an endpoint's concurrency gate (admission.ts). */
export interface GateView {
  readonly inflight: number;
  readonly limit: number | null;
}

/** What became of a copy for a shadow version (shadow-sender.ts). */
export type ShadowOutcome = 'sent' | 'dropped' | 'error';

/** What became of a traffic report (traffic-reporter.ts). */
export type TrafficReportOutcome = 'sent' | 'failed';

/** What became of a load report (load-reporter.ts). */
export type LoadReportOutcome = 'sent' | 'failed';

/** Why the gateway refused an infer request at admission (429). */
export type RejectionReason = 'busy' | 'rate_limited';

// Seconds: sub-millisecond (the gateway's own answers) to tens of seconds (slow models).
const durationBuckets = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

// Seconds to a stream's first byte: queueing and prefill, tens of ms to tens of seconds.
const ttftBuckets = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

// Seconds of a cold start (first held request → first answer): a pre-started tree worker
// (well under a second) to a large model loading (minutes).
const coldStartBuckets = [0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 20, 30, 60, 120, 300];

export class GatewayMetrics {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  private readonly requests: Counter<'endpoint' | 'version' | 'code'>;
  private readonly duration: Histogram<'endpoint' | 'version'>;
  private readonly inflight: Gauge<'endpoint'>;
  private readonly upstreamErrors: Counter<'endpoint' | 'reason'>;
  private readonly rejected: Counter<'endpoint' | 'reason'>;
  private readonly snapshotVersion: Gauge;
  private readonly llmTtft: Histogram<'endpoint'>;
  private readonly llmRouted: Counter<'endpoint' | 'policy' | 'reason'>;
  private readonly shadowCopies: Counter<'endpoint' | 'outcome'>;
  private readonly trafficReports: Counter<'outcome'>;
  private readonly loadReports: Counter<'outcome'>;
  private readonly coldStarts: Histogram<'endpoint'>;
  private readonly coldStartsOverBudget: Counter<'endpoint'>;
  private readonly wakeCalls: Counter<'outcome'>;
  private readonly series = new Map<string, EndpointSeries>();
  private readonly llmSeries = new Map<string, LlmSeries>();
  /** The admission gates, read at scrape time (nothing on the hot path). */
  private gates: () => ReadonlyMap<string, GateView> = () => new Map();
  /** Copies waiting in the shadow queue, read at scrape time. */
  private shadowQueue: () => number = () => 0;
  /** Requests the activator holds, by endpoint, read at scrape time. */
  private activatorHeld: () => ReadonlyMap<string, number> = () => new Map();
  private renderer: (() => Promise<string>) | null = null;

  /** `process`: this gateway process's index among those on one port (0 when alone). */
  constructor(processIndex = 0) {
    const registers = [this.registry];
    const gates = (): ReadonlyMap<string, GateView> => this.gates();
    const shadowQueue = (): number => this.shadowQueue();
    const activatorHeld = (): ReadonlyMap<string, number> => this.activatorHeld();
    this.requests = new Counter({
      name: 'kiln_gateway_requests_total',
      help: 'Inference requests answered by the gateway, by endpoint, served version and HTTP status.',
      labelNames: ['endpoint', 'version', 'code'],
      registers,
    });
    this.duration = new Histogram({
      name: 'kiln_gateway_request_duration_seconds',
      help: 'Time from receiving an inference request to finishing its response.',
      labelNames: ['endpoint', 'version'],
      buckets: durationBuckets,
      registers,
    });
    this.inflight = new Gauge({
      name: 'kiln_gateway_inflight_requests',
      help: 'Inference requests received and not yet answered.',
      labelNames: ['endpoint'],
      registers,
    });
    this.upstreamErrors = new Counter({
      name: 'kiln_gateway_upstream_errors_total',
      help: 'Failures talking to worker replicas (refused, reset, timeout, ...).',
      labelNames: ['endpoint', 'reason'],
      registers,
    });
    this.rejected = new Counter({
      name: 'kiln_gateway_rejected_total',
      help: 'Inference requests refused with 429: busy (endpoint at its concurrency bound) or rate_limited (team over its rate).',
      labelNames: ['endpoint', 'reason'],
      registers,
    });
    new Gauge({
      name: 'kiln_gateway_admitted_requests',
      help: "Inference requests holding a slot of their endpoint's concurrency bound (body in, answer not finished).",
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const [endpoint, gate] of gates()) this.set({ endpoint }, gate.inflight);
      },
    });
    new Gauge({
      name: 'kiln_gateway_max_concurrency',
      help: "Each endpoint's bound on admitted inference requests at this gateway (configured, or derived from its ready replicas).",
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const [endpoint, gate] of gates()) {
          if (gate.limit !== null) this.set({ endpoint }, gate.limit);
        }
      },
    });
    // Which gateway process served how much: summed at scrape time from the series above
    // (nothing on the hot path); its `process` label keeps the processes apart when their
    // metrics are merged (cluster-metrics.ts).
    const requests = this.requests;
    new Counter({
      name: 'kiln_gateway_process_requests_total',
      help: 'Inference requests answered, by gateway process (kiln up --gateway-processes N: 0..N-1).',
      labelNames: ['process'],
      registers,
      async collect() {
        let total = 0;
        for (const value of (await requests.get()).values) total += value.value;
        this.reset();
        this.inc({ process: String(processIndex) }, total);
      },
    });
    this.snapshotVersion = new Gauge({
      name: 'kiln_gateway_snapshot_version',
      help: 'Version of the routing snapshot the gateway serves from (0 = none yet); with several gateway processes, the oldest any of them serves.',
      registers,
      // Merged over gateway processes (cluster-metrics.ts): the laggard, not a sum.
      aggregator: 'min',
    });
    this.llmTtft = new Histogram({
      name: 'kiln_gateway_llm_ttft_seconds',
      help: "Time from receiving a streamed OpenAI request to the first byte of the replica's stream passing the gateway.",
      labelNames: ['endpoint'],
      buckets: ttftBuckets,
      registers,
    });
    this.shadowCopies = new Counter({
      name: 'kiln_gateway_shadow_copies_total',
      help: 'Copies of requests for shadow versions: sent, dropped (queue full or no ready shadow replica) or error (>= 500, connection error, timeout; counted besides sent).',
      labelNames: ['endpoint', 'outcome'],
      registers,
    });
    new Gauge({
      name: 'kiln_gateway_shadow_queue_depth',
      help: 'Copies for shadow versions waiting to be sent (bounded; beyond: dropped).',
      registers,
      collect() {
        this.set(shadowQueue());
      },
    });
    this.trafficReports = new Counter({
      name: 'kiln_gateway_traffic_reports_total',
      help: 'Traffic reports posted to the control plane: sent, or failed (dropped, never retried).',
      labelNames: ['outcome'],
      registers,
    });
    this.loadReports = new Counter({
      name: 'kiln_gateway_load_reports_total',
      help: 'Load reports (demand per endpoint, for the autoscaler) posted to the control plane: sent, or failed (dropped, never retried).',
      labelNames: ['outcome'],
      registers,
    });
    new Gauge({
      name: 'kiln_gateway_activator_held',
      help: 'Requests the activator holds for an endpoint at zero replicas while it wakes.',
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const [endpoint, held] of activatorHeld()) this.set({ endpoint }, held);
      },
    });
    this.coldStarts = new Histogram({
      name: 'kiln_gateway_cold_start_seconds',
      help: 'Cold starts of endpoints at zero replicas: from the first request held to the first answer of a released one.',
      labelNames: ['endpoint'],
      buckets: coldStartBuckets,
      registers,
    });
    this.coldStartsOverBudget = new Counter({
      name: 'kiln_gateway_cold_start_over_budget_total',
      help: "Cold starts longer than the endpoint's cold-start budget (scaleToZero.coldStartBudgetMs), those that ended unanswered included.",
      labelNames: ['endpoint'],
      registers,
    });
    this.wakeCalls = new Counter({
      name: 'kiln_gateway_wake_calls_total',
      help: 'Calls asking the control plane to wake an endpoint at zero replicas: ok, or failed (tried again with backoff while requests are held).',
      labelNames: ['outcome'],
      registers,
    });
    this.llmRouted = new Counter({
      name: 'kiln_gateway_llm_routed_total',
      help: 'OpenAI requests sent to a replica, by routing policy and why that replica: affinity (it served the prompt prefix last), least_loaded, round_robin.',
      labelNames: ['endpoint', 'policy', 'reason'],
      registers,
    });
  }

  /** A shadow copy offered (dropped) or sent, or one that failed; off the primary's path. */
  shadowCopy(endpoint: string, outcome: ShadowOutcome): void {
    this.shadowCopies.labels(endpoint, outcome).inc();
  }

  trafficReport(outcome: TrafficReportOutcome): void {
    this.trafficReports.labels(outcome).inc();
  }

  loadReport(outcome: LoadReportOutcome): void {
    this.loadReports.labels(outcome).inc();
  }

  /** A cold start measured (activator.ts): seconds to the first answer. */
  coldStart(endpoint: string, seconds: number, overBudget: boolean): void {
    this.coldStarts.labels(endpoint).observe(seconds);
    if (overBudget) this.coldStartsOverBudget.labels(endpoint).inc();
  }

  /** A cold start that ended with no answer, past its budget. */
  coldStartOverBudget(endpoint: string): void {
    this.coldStartsOverBudget.labels(endpoint).inc();
  }

  wakeCall(outcome: 'ok' | 'failed'): void {
    this.wakeCalls.labels(outcome).inc();
  }

  /** Where the activator gauge reads the held requests from. */
  watchActivator(held: () => ReadonlyMap<string, number>): void {
    this.activatorHeld = held;
  }

  /** The LLM series of one endpoint (made on first use, kept). */
  llmSeriesFor(endpoint: string): LlmSeries {
    let series = this.llmSeries.get(endpoint);
    if (series === undefined) {
      series = new LlmSeries(endpoint, this.llmTtft.labels(endpoint), this.llmRouted);
      this.llmSeries.set(endpoint, series);
    }
    return series;
  }

  /** The series for one endpoint and version; pass `unknownLabel` for unknown endpoints. */
  seriesFor(endpoint: string, version: string): EndpointSeries {
    const key = `${endpoint}\u0000${version}`;
    let series = this.series.get(key);
    if (series === undefined) {
      series = new EndpointSeries(
        endpoint,
        version,
        this.requests,
        this.duration.labels(endpoint, version),
        this.inflight.labels(endpoint),
        this.upstreamErrors,
        this.rejected,
      );
      this.series.set(key, series);
    }
    return series;
  }

  /** Where the admission gauges read the gates from. */
  watchGates(gates: () => ReadonlyMap<string, GateView>): void {
    this.gates = gates;
  }

  /** Where the shadow queue gauge reads its depth from. */
  watchShadowQueue(depth: () => number): void {
    this.shadowQueue = depth;
  }

  setSnapshotVersion(version: number): void {
    this.snapshotVersion.set(version);
  }

  /**
   * What GET /metrics answers: this registry, or, in one of several gateway processes on one
   * port, all of theirs merged (renderWith; a scrape lands on any one of them).
   */
  render(): Promise<string> {
    return this.renderer === null ? this.registry.metrics() : this.renderer();
  }

  renderWith(renderer: () => Promise<string>): void {
    this.renderer = renderer;
  }
}

export class EndpointSeries {
  private readonly byStatus = new Map<number, Counter.Internal>();
  private busy: Counter.Internal | null = null;
  private rateLimited: Counter.Internal | null = null;

  constructor(
    private readonly endpoint: string,
    private readonly version: string,
    private readonly requests: Counter<'endpoint' | 'version' | 'code'>,
    private readonly duration: Histogram.Internal<'endpoint' | 'version'>,
    readonly inflight: Gauge.Internal<'endpoint'>,
    private readonly upstreamErrors: Counter<'endpoint' | 'reason'>,
    private readonly rejections: Counter<'endpoint' | 'reason'>,
  ) {}

  /** One answered request: its status and its duration in seconds. */
  record(status: number, seconds: number): void {
    let counter = this.byStatus.get(status);
    if (counter === undefined) {
      counter = this.requests.labels(this.endpoint, this.version, String(status));
      this.byStatus.set(status, counter);
    }
    counter.inc();
    this.duration.observe(seconds);
  }

  upstreamError(reason: UpstreamErrorReason): void {
    this.upstreamErrors.labels(this.endpoint, reason).inc();
  }

  /** A request refused at the door; children are made on first use (floods hit this). */
  rejected(reason: RejectionReason): void {
    let counter = reason === 'busy' ? this.busy : this.rateLimited;
    if (counter === null) {
      counter = this.rejections.labels(this.endpoint, reason);
      if (reason === 'busy') this.busy = counter;
      else this.rateLimited = counter;
    }
    counter.inc();
  }
}

/** An hf-llm endpoint's own series: time to first token, and why each replica was chosen. */
export class LlmSeries {
  private readonly routedBy = new Map<string, Counter.Internal>();

  constructor(
    private readonly endpoint: string,
    private readonly ttft: Histogram.Internal<'endpoint'>,
    private readonly routed: Counter<'endpoint' | 'policy' | 'reason'>,
  ) {}

  /** Seconds from the request's arrival to its stream's first byte. */
  firstByte(seconds: number): void {
    this.ttft.observe(seconds);
  }

  routedTo(policy: string, reason: string): void {
    const key = `${policy} ${reason}`;
    let counter = this.routedBy.get(key);
    if (counter === undefined) {
      counter = this.routed.labels(this.endpoint, policy, reason);
      this.routedBy.set(key, counter);
    }
    counter.inc();
  }
}
