// Sends what the gateway measured of demand (load-counter.ts) to the control plane's
// autoscaler: every `intervalMs`, when any endpoint had a request arrive, in flight or held,
// one LoadReport POSTed to `{control}/api/v1/scaling/reports` with the gateway's token. An
// idle gateway sends nothing (the control plane reads silence as no demand).
//
// As the traffic reporter (traffic-reporter.ts): it never blocks serving and never grows.
// One POST at a time, bounded by `timeoutMs`; while one is in flight the counts keep
// accumulating and go in the next report; a report that fails is dropped and counted
// (kiln_gateway_load_reports_total{outcome="failed"}), never retried: demand is a rate, and
// the next window carries the next one.

import { Agent, request } from 'undici';
import { loadReportsPath } from '../protocol/scaling/load-report.ts';
import type { GatewayLog } from './gateway-log.ts';
import type { LoadCounter } from './load-counter.ts';
import type { GatewayMetrics } from './metrics.ts';

export interface LoadReporterOptions {
  /** Base URL of the control plane, asked before every report (it may move). */
  readonly controlUrl: () => string;
  /** Bearer token ('' = none), asked before every report. */
  readonly token: () => string;
  readonly intervalMs: number;
  /** The longest one POST may take, ms. */
  readonly timeoutMs: number;
  readonly counter: LoadCounter;
  /** Who reports: host and process id. */
  readonly gateway: string;
  readonly metrics: GatewayMetrics;
  readonly log: GatewayLog;
}

export class LoadReporter {
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private readonly agent: Agent;
  /** Failures since the last success: logged on the first only, so a long outage logs once. */
  private failures = 0;

  constructor(private readonly options: LoadReporterOptions) {
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

  /** Sends what is measured now, unless a report is already on its way. */
  tick(): void {
    if (this.inFlight !== null) return;
    const report = this.options.counter.take(this.options.gateway);
    if (report === null) return;
    this.inFlight = this.post(JSON.stringify(report)).finally(() => {
      this.inFlight = null;
    });
  }

  /** Stops; the last window goes out first (bounded by the timeout). */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.inFlight;
    this.tick();
    await this.inFlight;
    await this.agent.destroy();
  }

  private async post(body: string): Promise<void> {
    const url = this.options.controlUrl().replace(/\/+$/, '') + loadReportsPath;
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
        throw new Error(`control plane answered ${response.statusCode} to a load report`);
      }
      this.options.metrics.loadReport('sent');
      this.failures = 0;
    } catch (error) {
      this.options.metrics.loadReport('failed');
      if (this.failures++ === 0) {
        this.options.log.warn(
          { error: (error as Error).message },
          'load report dropped; later failures are counted, not logged',
        );
      }
    }
  }
}

function tick(reporter: LoadReporter): void {
  reporter.tick();
}
