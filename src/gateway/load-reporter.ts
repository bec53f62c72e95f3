// Sends what the gateway measured of demand (load-counter.ts) to the control plane's
// autoscaler: every `intervalMs`, when any endpoint had a request arrive, in flight or held,
// one LoadReport POSTed to `{control}/api/v1/scaling/reports` with the gateway's token. An
// idle gateway sends nothing (the control plane reads silence as no demand). A failed report
// is dropped, never retried (control-plane-reporter.ts; kiln_gateway_load_reports_total):
// demand is a rate, and the next window carries the next one.

import { loadReportsPath } from '../protocol/scaling/load-report.ts';
import { ControlPlaneReporter, type ReporterConnection } from './control-plane-reporter.ts';
import type { LoadCounter } from './load-counter.ts';
import type { GatewayMetrics } from './metrics.ts';

export interface LoadReporterOptions extends ReporterConnection {
  readonly counter: LoadCounter;
  readonly metrics: GatewayMetrics;
}

export class LoadReporter extends ControlPlaneReporter {
  constructor(options: LoadReporterOptions) {
    super({
      ...options,
      kind: 'load report',
      path: loadReportsPath,
      take: (gateway) => options.counter.take(gateway),
      outcome: (outcome) => options.metrics.loadReport(outcome),
    });
  }
}
