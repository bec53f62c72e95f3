// Sends what the gateway counted for traffic management (traffic-counter.ts) to the control
// plane: every `intervalMs`, when anything was counted, one TrafficReport POSTed to
// `{control}/api/v1/traffic/reports` with the gateway's token (as the snapshot poll).
//
// It never blocks serving and never grows: one POST at a time, bounded by `timeoutMs`; while
// one is in flight the counts keep accumulating in the counter (whose size is bounded by the
// versions routed and their slices) and go in the next report; a report that fails (control
// plane down, refused, timed out) is dropped and counted (kiln_gateway_traffic_reports_total
// {outcome="failed"}), never retried, so a control plane that is away for an hour costs
// nothing but the counts of that hour.

import { Agent, request } from 'undici';
import type { GatewayLog } from './gateway-log.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { TrafficCounter } from './traffic-counter.ts';

export interface TrafficReporterOptions {
  /** Base URL of the control plane, asked before every report (it may move). */
  readonly controlUrl: () => string;
  /** Bearer token ('' = none), asked before every report. */
  readonly token: () => string;
  readonly intervalMs: number;
  /** The longest one POST may take, ms. */
  readonly timeoutMs: number;
  readonly counter: TrafficCounter;
  /** Who reports: host and process id. */
  readonly gateway: string;
  readonly metrics: GatewayMetrics;
  readonly log: GatewayLog;
}

export const trafficReportsPath = '/api/v1/traffic/reports';

export class TrafficReporter {
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private readonly agent: Agent;
  /** Failures since the last success: logged on the first only, so a long outage logs once. */
  private failures = 0;

  constructor(private readonly options: TrafficReporterOptions) {
    this.agent = new Agent({
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connectTimeout: Math.min(options.timeoutMs, 2_000),
      connections: 1,
    });
  }

  start(): void {
    this.timer ??= setInterval(tick, this.options.intervalMs, this);
    this.timer.unref();
  }

  /** Sends what is counted now, unless a report is already on its way. */
  tick(): void {
    if (this.inFlight !== null) return;
    const report = this.options.counter.take(this.options.gateway);
    if (report === null) return;
    this.inFlight = this.post(JSON.stringify(report)).finally(() => {
      this.inFlight = null;
    });
  }

  /** Stops; the counts of the last window go out first (bounded by the timeout). */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.inFlight;
    this.tick();
    await this.inFlight;
    await this.agent.destroy();
  }

  private async post(body: string): Promise<void> {
    const url = this.options.controlUrl().replace(/\/+$/, '') + trafficReportsPath;
    const token = this.options.token();
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token !== '') headers.authorization = `Bearer ${token}`;
    try {
      const response = await request(url, {
        method: 'POST',
        headers,
        body,
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      await response.body.dump();
      if (response.statusCode >= 300) {
        throw new Error(`control plane answered ${response.statusCode} to a traffic report`);
      }
      this.options.metrics.trafficReport('sent');
      this.failures = 0;
    } catch (error) {
      this.options.metrics.trafficReport('failed');
      if (this.failures++ === 0) {
        this.options.log.warn(
          { error: (error as Error).message },
          'traffic report dropped; later failures are counted, not logged',
        );
      }
    }
  }
}

function tick(reporter: TrafficReporter): void {
  reporter.tick();
}
