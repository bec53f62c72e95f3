// Sends what the gateway counted for traffic management (traffic-counter.ts) to the control
// plane: every `intervalMs`, when anything was counted, one TrafficReport POSTed to
// `{control}/api/v1/traffic/reports` with the gateway's token. The counter's size is bounded
// by the versions routed and their slices; how reports are sent, dropped and counted
// (kiln_gateway_traffic_reports_total) is control-plane-reporter.ts.

import { ControlPlaneReporter, type ReporterConnection } from './control-plane-reporter.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { TrafficCounter } from './traffic-counter.ts';

export interface TrafficReporterOptions extends ReporterConnection {
  readonly counter: TrafficCounter;
  readonly metrics: GatewayMetrics;
}

export const trafficReportsPath = '/api/v1/traffic/reports';

export class TrafficReporter extends ControlPlaneReporter {
  constructor(options: TrafficReporterOptions) {
    super({
      ...options,
      kind: 'traffic report',
      path: trafficReportsPath,
      take: (gateway) => options.counter.take(gateway),
      outcome: (outcome) => options.metrics.trafficReport(outcome),
    });
  }
}
