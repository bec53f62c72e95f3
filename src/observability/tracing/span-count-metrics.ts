// The tracing counts of a gateway or worker on its Prometheus registry, read at scrape time:
// spans exported and spans dropped (queue full: the collector is behind or gone; export
// failed: it refused or could not be reached). Serving never waits on export, so a dropped
// span is the whole cost of a bad collector, and this is where it shows.

import { Gauge, type Registry } from 'prom-client';
import type { SpanCounts } from './start-tracing.ts';

export function registerSpanCounts(
  registry: Registry,
  process: 'gateway' | 'worker',
  counts: Readonly<SpanCounts>,
): void {
  const registers = [registry];
  new Gauge({
    name: `kiln_${process}_trace_spans_exported`,
    help: 'Spans the OTLP exporter delivered since the process started.',
    registers,
    collect() {
      this.set(counts.exported);
    },
  });
  new Gauge({
    name: `kiln_${process}_trace_spans_dropped`,
    help: 'Spans dropped since the process started: queue_full (the collector is behind or gone) or export_failed.',
    labelNames: ['reason'],
    registers,
    collect() {
      this.set({ reason: 'queue_full' }, counts.droppedQueueFull);
      this.set({ reason: 'export_failed' }, counts.droppedExportFailed);
    },
  });
}
