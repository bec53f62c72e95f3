// The SLO gauges and counters on the control plane's registry (GET /metrics): burn rates per
// endpoint, SLI and window, which alerts fire, and what became of webhook notifications.

import { Counter, Gauge, type Registry } from 'prom-client';
import type { WebhookOutcome } from './webhook-sender.ts';

export class SloMetrics {
  private readonly burn: Gauge<'endpoint' | 'sli' | 'window'>;
  private readonly firing: Gauge<'endpoint' | 'alert' | 'severity'>;
  private readonly deliveries: Counter<'outcome'>;
  /** The label sets set per endpoint (prom-client removes a series by its whole label set). */
  private readonly seen = new Map<string, { burn: Set<string>; firing: Set<string> }>();

  constructor(registry: Registry) {
    const registers = [registry];
    this.burn = new Gauge({
      name: 'kiln_slo_burn_rate',
      help: "Error-budget burn rate of an endpoint's SLI over a window (1 = the budget spent exactly over the SLO period).",
      labelNames: ['endpoint', 'sli', 'window'],
      registers,
    });
    this.firing = new Gauge({
      name: 'kiln_slo_alert_firing',
      help: 'Whether an SLO alert fires for an endpoint (1) or not (0), as the control plane evaluates it.',
      labelNames: ['endpoint', 'alert', 'severity'],
      registers,
    });
    this.deliveries = new Counter({
      name: 'kiln_slo_webhook_deliveries_total',
      help: 'SLO alert notifications by outcome: sent, retried (an attempt failed), failed (gave up), dropped (queue full).',
      labelNames: ['outcome'],
      registers,
    });
  }

  burnRate(endpoint: string, sli: string, window: string, value: number): void {
    this.burn.labels(endpoint, sli, window).set(value);
    this.seenOf(endpoint).burn.add(`${sli}\n${window}`);
  }

  alert(endpoint: string, alert: string, severity: string, firing: boolean): void {
    this.firing.labels(endpoint, alert, severity).set(firing ? 1 : 0);
    this.seenOf(endpoint).firing.add(`${alert}\n${severity}`);
  }

  delivery(outcome: WebhookOutcome): void {
    this.deliveries.labels(outcome).inc();
  }

  /** Drops an endpoint's series (its SLO was removed or it was deleted). */
  forget(endpoint: string): void {
    const seen = this.seen.get(endpoint);
    if (seen === undefined) return;
    for (const key of seen.burn)
      this.burn.remove(endpoint, ...(key.split('\n') as [string, string]));
    for (const key of seen.firing) {
      this.firing.remove(endpoint, ...(key.split('\n') as [string, string]));
    }
    this.seen.delete(endpoint);
  }

  /** Endpoints with series now. */
  endpoints(): string[] {
    return [...this.seen.keys()];
  }

  private seenOf(endpoint: string): { burn: Set<string>; firing: Set<string> } {
    let seen = this.seen.get(endpoint);
    if (seen === undefined) {
      seen = { burn: new Set(), firing: new Set() };
      this.seen.set(endpoint, seen);
    }
    return seen;
  }
}
