// What the gateway's reporters share (traffic-reporter.ts, load-reporter.ts): every
// `intervalMs`, when there is something to send, one JSON report POSTed to a control-plane
// path with the gateway's token (as the snapshot poll).
//
// It never blocks serving and never grows: one POST at a time, bounded by `timeoutMs`; while
// one is in flight the counts keep accumulating at their source and go in the next report; a
// report that fails (control plane down, refused, timed out) is dropped and counted
// (`outcome('failed')`), never retried, so a control plane that is away for an hour costs
// nothing but the counts of that hour. Only the first failure after a success is logged.

import { Agent, request } from 'undici';
import type { GatewayLog } from './gateway-log.ts';

export interface ReporterConnection {
  /** Base URL of the control plane, asked before every report (it may move). */
  readonly controlUrl: () => string;
  /** Bearer token ('' = none), asked before every report. */
  readonly token: () => string;
  readonly intervalMs: number;
  /** The longest one POST may take, ms. */
  readonly timeoutMs: number;
  /** Who reports: host and process id. */
  readonly gateway: string;
  readonly log: GatewayLog;
}

export interface ControlPlaneReporterOptions extends ReporterConnection {
  /** What is reported, for messages: 'traffic report'. */
  readonly kind: string;
  /** The control plane's path the reports go to. */
  readonly path: string;
  /** The next report (taking its counts from their source), or null: nothing to send. */
  readonly take: (gateway: string) => unknown;
  readonly outcome: (outcome: 'sent' | 'failed') => void;
}

export class ControlPlaneReporter {
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private readonly agent: Agent;
  /** Failures since the last success: logged on the first only, so a long outage logs once. */
  private failures = 0;

  constructor(private readonly options: ControlPlaneReporterOptions) {
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
    const report = this.options.take(this.options.gateway);
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
    const url = this.options.controlUrl().replace(/\/+$/, '') + this.options.path;
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
        throw new Error(`control plane answered ${response.statusCode} to a ${this.options.kind}`);
      }
      this.options.outcome('sent');
      this.failures = 0;
    } catch (error) {
      this.options.outcome('failed');
      if (this.failures++ === 0) {
        this.options.log.warn(
          { error: (error as Error).message },
          `${this.options.kind} dropped; later failures are counted, not logged`,
        );
      }
    }
  }
}

function tick(reporter: ControlPlaneReporter): void {
  reporter.tick();
}
