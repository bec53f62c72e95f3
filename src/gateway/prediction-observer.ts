// What the gateway does with an answered request of an endpoint that asked for it (issue 15,
// D): a sampled copy to the prediction log (prediction-log-writer.ts) and its prediction to
// the control plane for outcomes (quality-collector.ts, sent by QualityReporter). Both queue
// references only, after the answer is written; everything costly happens off the request
// path, and full queues drop and count.
//
// An EndpointObserver is compiled per endpoint and routing snapshot (route-table.ts: null for
// endpoints without `predictionLog` or `quality`, so the hot path tests one field).

import type { IncomingHttpHeaders } from 'node:http';
import { Counter, Gauge } from 'prom-client';
import type { PredictionLogConfig } from '../store/observability-config.ts';
import { SLICE_HEADER } from '../protocol/traffic/traffic-report.ts';
import type { CallerKeySource } from '../traffic/caller-key.ts';
import { ControlPlaneReporter, type ReporterConnection } from './control-plane-reporter.ts';
import type { GatewayMetrics } from './metrics.ts';
import { PredictionLogWriter, type PredictionLogOutcome } from './prediction-log-writer.ts';
import { QualityCollector, type QualityOutcome } from './quality-collector.ts';
import type { EndpointRoute } from './routing-snapshot.ts';
import { keySourceOf } from './traffic-entry.ts';
import type { RandomSource } from '../traffic/traffic-split.ts';

/** One answered request, as the exchange knows it at its end. */
export interface ObservedRequest {
  readonly requestId: string;
  readonly model: string;
  readonly version: number;
  readonly status: number;
  readonly latencyMs: number;
  readonly headers: IncomingHttpHeaders;
  /** The client's body (null: none read). */
  readonly body: Buffer | null;
  /** A 200's v2 answer (null: none kept). */
  readonly answer: Buffer | null;
}

export class EndpointObserver {
  constructor(
    private readonly sinks: PredictionSinks,
    readonly endpoint: string,
    private readonly predictionLog: PredictionLogConfig | null,
    private readonly features: readonly string[] | null,
    private readonly quality: {
      readonly output: string | null;
      readonly sliceSource: CallerKeySource | null;
    } | null,
    private readonly logSlice: CallerKeySource | null,
  ) {}

  /** After the answer is written: queue what is asked (never blocks, never throws). */
  observe(request: ObservedRequest): void {
    const atMs = Math.round(Date.now() - request.latencyMs);
    const log = this.predictionLog;
    const sinks = this.sinks;
    if (log !== null && log.sampleRate > 0 && sinks.random() < log.sampleRate) {
      const sliceHeader = request.headers[SLICE_HEADER];
      sinks.writer.offer({
        endpoint: this.endpoint,
        model: request.model,
        version: request.version,
        requestId: request.requestId,
        status: request.status,
        latencyMs: request.latencyMs,
        timeMs: atMs,
        slice:
          this.logSlice === null
            ? null
            : typeof sliceHeader === 'string' && sliceHeader.trim() !== ''
              ? sliceHeader.trim()
              : null,
        request: request.body,
        answer: request.answer,
        config: log,
        features: this.features,
      });
    }
    const quality = this.quality;
    if (quality !== null && request.status === 200 && request.answer !== null) {
      sinks.collector.offer({
        endpoint: this.endpoint,
        requestId: request.requestId,
        model: request.model,
        version: request.version,
        atMs,
        answer: request.answer,
        body: request.body,
        sliceHeader: request.headers[SLICE_HEADER],
        output: quality.output,
        sliceSource: quality.sliceSource,
      });
    }
  }
}

export interface PredictionSinksOptions {
  /** `<home>/prediction-log`. */
  readonly logDir: string;
  /** Prediction-log records queued at most (default 1 024). */
  readonly logQueueCapacity?: number;
  /** Predictions queued for the control plane at most (default 10 000). */
  readonly qualityQueueCapacity?: number;
  readonly metrics: GatewayMetrics;
  readonly random: RandomSource;
  readonly warn: (fields: Record<string, unknown>, message: string) => void;
}

/** The gateway-wide queues behind every EndpointObserver, and their metrics. */
export class PredictionSinks {
  readonly writer: PredictionLogWriter;
  readonly collector: QualityCollector;
  readonly random: RandomSource;
  private readonly qualityReports: Counter<'outcome'>;
  private reporter: ControlPlaneReporter | null = null;

  constructor(options: PredictionSinksOptions) {
    const registers = [options.metrics.registry];
    const records = new Counter({
      name: 'kiln_gateway_prediction_log_records_total',
      help: 'Prediction-log records: written, dropped (queue full), failed (write error) or too-large (bigger than a whole file).',
      labelNames: ['endpoint', 'outcome'],
      registers,
    });
    const unmatched = new Counter({
      name: 'kiln_gateway_prediction_log_unmatched_redactions_total',
      help: 'Records in which a redaction rule matched no field (the rule may name nothing the endpoint has).',
      labelNames: ['endpoint', 'field'],
      registers,
    });
    const predictions = new Counter({
      name: 'kiln_gateway_quality_predictions_total',
      help: 'Predictions for outcome joins: queued, dropped (queue full) or no-prediction (the answer had no numeric output).',
      labelNames: ['endpoint', 'outcome'],
      registers,
    });
    this.qualityReports = new Counter({
      name: 'kiln_gateway_quality_reports_total',
      help: 'Prediction reports to the control plane: sent or failed (dropped, never retried).',
      labelNames: ['outcome'],
      registers,
    });
    const warned = new Set<string>();
    this.writer = new PredictionLogWriter({
      dir: options.logDir,
      ...(options.logQueueCapacity === undefined ? {} : { capacity: options.logQueueCapacity }),
      count: (endpoint: string, outcome: PredictionLogOutcome, n = 1) =>
        records.labels(endpoint, outcome).inc(n),
      unmatched: (endpoint, field) => {
        unmatched.labels(endpoint, field).inc();
        const key = `${endpoint}\u0000${field}`;
        if (!warned.has(key)) {
          warned.add(key);
          options.warn({ endpoint, field }, 'a redaction rule matched no field of a request');
        }
      },
      warn: options.warn,
    });
    this.collector = new QualityCollector(
      options.qualityQueueCapacity ?? 10_000,
      (endpoint: string, outcome: QualityOutcome) => predictions.labels(endpoint, outcome).inc(),
    );
    this.random = options.random;
    const writer = this.writer;
    new Gauge({
      name: 'kiln_gateway_prediction_log_queue_depth',
      help: 'Prediction-log records waiting to be written (bounded; beyond: dropped).',
      registers,
      collect() {
        this.set(writer.queued);
      },
    });
  }

  /** The observer of one endpoint of a snapshot; null when it asks for neither. */
  observerFor(
    route: EndpointRoute,
    onBadPath: (endpoint: string, problem: string) => void,
  ): EndpointObserver | null {
    const log = route.predictionLog ?? null;
    const quality = route.quality;
    if (log === null && quality === undefined) return null;
    const bad = (problem: string): void => onBadPath(route.name, problem);
    return new EndpointObserver(
      this,
      route.name,
      log,
      route.inputNaming?.featureNames ?? null,
      quality === undefined
        ? null
        : {
            output: quality.output,
            sliceSource: quality.sliceKey === null ? null : keySourceOf(quality.slicePath, bad),
          },
      // The log records the `kiln-slice` header's value when the endpoint slices at all.
      quality?.sliceKey != null || route.traffic?.sliceKey != null
        ? { keyPath: null, segments: [] }
        : null,
    );
  }

  /** Starts sending predictions to the control plane (every `intervalMs`). */
  startReporting(connection: ReporterConnection): void {
    this.reporter = new ControlPlaneReporter({
      ...connection,
      kind: 'prediction report',
      path: '/api/v1/quality/predictions',
      take: (gateway) => this.collector.take(gateway),
      outcome: (outcome) => this.qualityReports.labels(outcome).inc(),
    });
    this.reporter.start();
  }

  async close(): Promise<void> {
    await this.reporter?.stop();
    await this.writer.close();
  }
}
