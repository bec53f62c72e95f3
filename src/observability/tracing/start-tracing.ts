// The process-wide tracer of a gateway or a worker: an OpenTelemetry SDK tracer provider whose
// spans leave through a BatchSpanProcessor to an OTLP/HTTP collector (or, in tests, any
// exporter). Only `startTracing` loads the SDK (dynamic imports): a process with tracing off
// never does.
//
//   span.end() ─▶ BoundedProcessor (counts; drops past maxQueueSize) ─▶ BatchSpanProcessor
//     ─▶ every scheduledDelayMs or maxExportBatchSize spans: CountingExporter ─▶ OTLP POST
//
// Serving never waits on the collector: ending a span only appends it to the queue; a full
// queue (a slow or dead collector) drops the span and counts it, and a failed export drops
// its batch and counts it. The counts are the process's `kiln_*_trace_spans_dropped_total`.

import type { SpanExporter, ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Context } from '@opentelemetry/api';
import type { ExportResult, ExportResultCode } from '@opentelemetry/core';
import { kilnVersion } from '../../core/version.ts';
import { KilnTracer } from './kiln-tracer.ts';
import { otlpTracesUrl, otlpUrlEnv, otlpUrlProblem } from './otlp-url.ts';

export interface TracingOptions {
  /** `service.name` of the spans: kiln-gateway, kiln-worker. */
  readonly serviceName: string;
  /** More resource attributes (service.instance.id, kiln.replica). */
  readonly resource?: Readonly<Record<string, string>>;
  /** An OTLP/HTTP collector (`http://host:4318`, or the full `…/v1/traces` URL). */
  readonly otlpUrl?: string;
  /** Instead of OTLP: where spans go (tests: an InMemorySpanExporter). */
  readonly exporter?: SpanExporter;
  /** Most finished spans waiting for export; beyond, spans are dropped (default 2048). */
  readonly maxQueueSize?: number;
  /** How often a batch is exported (default 1000 ms). */
  readonly scheduledDelayMs?: number;
  /** Most time one export may take (default 5000 ms). */
  readonly exportTimeoutMs?: number;
}

export interface SpanCounts {
  /** Handed to the exporter and accepted. */
  exported: number;
  /** Dropped at the end of a span: the queue was full (the collector is behind or gone). */
  droppedQueueFull: number;
  /** Dropped with their batch: the export failed (the collector refused or is unreachable). */
  droppedExportFailed: number;
  /** In the queue now, not yet handed to the exporter. */
  queued: number;
}

export interface ProcessTracing {
  readonly tracer: KilnTracer;
  readonly counts: Readonly<SpanCounts>;
  /** Exports what is queued now (tests; a clean stop). */
  forceFlush(): Promise<void>;
  /** Exports what is queued, then stops (bounded by the export timeout). */
  shutdown(): Promise<void>;
}

export async function startTracing(options: TracingOptions): Promise<ProcessTracing> {
  const [base, resources, core] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
  ]);
  let exporter = options.exporter;
  if (exporter === undefined) {
    if (options.otlpUrl === undefined) throw new Error('tracing needs an OTLP URL or an exporter');
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    exporter = new OTLPTraceExporter({
      url: otlpTracesUrl(options.otlpUrl),
      timeoutMillis: options.exportTimeoutMs ?? 5_000,
    });
  }
  const maxQueueSize = options.maxQueueSize ?? 2048;
  const counts: SpanCounts = {
    exported: 0,
    droppedQueueFull: 0,
    droppedExportFailed: 0,
    queued: 0,
  };
  const batch = new base.BatchSpanProcessor(
    new CountingExporter(exporter, counts, core.ExportResultCode.SUCCESS),
    {
      maxQueueSize,
      maxExportBatchSize: Math.min(512, maxQueueSize),
      scheduledDelayMillis: options.scheduledDelayMs ?? 1_000,
      exportTimeoutMillis: options.exportTimeoutMs ?? 5_000,
    },
  );
  const processor = new BoundedProcessor(batch, maxQueueSize, counts);
  const provider = new base.BasicTracerProvider({
    resource: resources.resourceFromAttributes({
      'service.name': options.serviceName,
      'service.version': kilnVersion,
      ...options.resource,
    }),
    // Whether to trace is decided before a span starts (kiln-tracer.ts: shouldTrace).
    sampler: new base.AlwaysOnSampler(),
    spanProcessors: [processor],
  });
  return {
    tracer: new KilnTracer(provider.getTracer('kiln', kilnVersion)),
    counts,
    forceFlush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

/**
 * Tracing as the environment asks (`KILN_OTLP_URL`); null when it is off. A URL that cannot
 * be a collector's turns tracing off with a line on stderr: it never stops a process serving.
 */
export async function tracingFromEnv(
  serviceName: string,
  resource: Readonly<Record<string, string>> = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<ProcessTracing | null> {
  const url = env[otlpUrlEnv];
  if (url === undefined || url === '') return null;
  const problem = otlpUrlProblem(url);
  if (problem !== null) {
    process.stderr.write(`${serviceName}: tracing off, ${otlpUrlEnv}=${url}: ${problem}\n`);
    return null;
  }
  return startTracing({ serviceName, resource, otlpUrl: url });
}

/**
 * Keeps the BatchSpanProcessor's queue bounded with a count of what it drops (the SDK's own
 * count is only logged). `counts.queued` is what was handed on and not yet exported, never
 * less than what the inner processor holds, so the inner one never drops on its own.
 */
class BoundedProcessor implements SpanProcessor {
  constructor(
    private readonly inner: SpanProcessor,
    private readonly maxQueueSize: number,
    private readonly counts: SpanCounts,
  ) {}

  onStart(_span: unknown, _context: Context): void {}

  onEnd(span: ReadableSpan): void {
    if (this.counts.queued >= this.maxQueueSize) {
      this.counts.droppedQueueFull += 1;
      return;
    }
    this.counts.queued += 1;
    this.inner.onEnd(span);
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

class CountingExporter implements SpanExporter {
  constructor(
    private readonly inner: SpanExporter,
    private readonly counts: SpanCounts,
    private readonly success: ExportResultCode,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.counts.queued = Math.max(0, this.counts.queued - spans.length);
    this.inner.export(spans, (result) => {
      if (result.code === this.success) this.counts.exported += spans.length;
      else this.counts.droppedExportFailed += spans.length;
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}
