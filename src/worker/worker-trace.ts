// A traced request's spans in the worker (docs/tracing.md), continuing the context the gateway
// sent (its kiln.channel span is the parent):
//
//   kiln.worker (SERVER) ─┬─ kiln.queue     enqueued → handed to the model with its batch
//                         ├─ kiln.batch     the batch's execution (size, rows) ─ kiln.runtime
//                         └─ kiln.encode    the v2 JSON answer
//   (no batcher: kiln.runtime right under kiln.worker)
//
// The batch is shared by every request in it; each traced request records it in its own
// trace, from the times the batcher noted (dynamic-batcher.ts BatchRun), so nothing here
// touches the batcher's path. Built only for sampled requests.

import type { IncomingHttpHeaders } from 'node:http';
import type { Span } from '@opentelemetry/api';
import { SpanStatusCode } from '@opentelemetry/api';
import { epochMs, SpanKind, type KilnTracer } from '../observability/tracing/kiln-tracer.ts';
import type { BatcherClock, BatchRun } from './batching/dynamic-batcher.ts';
import type { WorkerSpec } from './worker-spec.ts';

export class WorkerTrace {
  private constructor(
    private readonly tracer: KilnTracer,
    private readonly span: Span,
    private readonly clock: BatcherClock,
  ) {}

  /** The request's worker span, or null when its context cannot be continued. */
  static start(
    tracer: KilnTracer,
    spec: WorkerSpec,
    headers: IncomingHttpHeaders,
    clock: BatcherClock,
  ): WorkerTrace | null {
    const requestId = headers['x-request-id'];
    const span = tracer.continueSampled('kiln.worker', headers.traceparent, headers.tracestate, {
      'kiln.endpoint': spec.endpoint,
      'kiln.model': spec.model,
      'kiln.version': String(spec.version),
      'kiln.replica': spec.replicaId,
      ...(typeof requestId === 'string' ? { 'kiln.request_id': requestId } : {}),
    });
    return span === null ? null : new WorkerTrace(tracer, span, clock);
  }

  /** The model run now (no batcher); end() it when done. */
  runtime(runtimeName: string, rows: number): Span {
    return this.tracer.child(this.span, 'kiln.runtime', SpanKind.INTERNAL, undefined, {
      'kiln.runtime': runtimeName,
      'kiln.batch.size': 1,
      'kiln.batch.rows': rows,
    });
  }

  /** The request waited from `enqueuedMicros` and ran in `batch` (batcher clock). */
  batched(enqueuedMicros: number, batch: BatchRun, runtimeName: string, rows: number): void {
    // The batcher's clock to epoch milliseconds, as spans take times.
    const offsetMs = epochMs() - this.clock.nowMicros() / 1000;
    const at = (micros: number): number => offsetMs + micros / 1000;
    this.tracer
      .child(this.span, 'kiln.queue', SpanKind.INTERNAL, at(enqueuedMicros))
      .end(at(Math.max(enqueuedMicros, batch.startedMicros)));
    const attributes = {
      'kiln.batch.size': batch.requests,
      'kiln.batch.rows': batch.rows,
      'kiln.request.rows': rows,
    };
    const batchSpan = this.tracer.child(
      this.span,
      'kiln.batch',
      SpanKind.INTERNAL,
      at(batch.startedMicros),
      attributes,
    );
    if (batch.workStartedMicros >= 0) {
      this.tracer
        .child(batchSpan, 'kiln.runtime', SpanKind.INTERNAL, at(batch.workStartedMicros), {
          'kiln.runtime': runtimeName,
          ...attributes,
        })
        .end(at(Math.max(batch.workStartedMicros, batch.workEndedMicros)));
    }
    batchSpan.end(at(batch.endedMicros));
  }

  /** Encoding the answer now; end() it when done. */
  encode(): Span {
    return this.tracer.child(this.span, 'kiln.encode');
  }

  end(status: number): void {
    this.span.setAttribute('http.response.status_code', status);
    if (status >= 500) this.span.setStatus({ code: SpanStatusCode.ERROR });
    this.span.end();
  }
}
