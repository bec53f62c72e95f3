// What the gateways report of demand, kept two ways for the autoscale controller:
//
//   now     per endpoint and gateway, the latest report's entry: a sample sums them
//           (concurrency, arrivals per second, held). A gateway that stops reporting an
//           endpoint (idle: not listed, or no report at all) counts as zero for it — at once
//           when its next report leaves it out, after `staleMs` when reports stop.
//   minute  per endpoint and minute, the sums since the last flush (arrivals, concurrency ×
//           seconds, report-seconds, latency sketch), added into the store's demand rows by
//           `drain()` (mergeDemand adds, so partial minutes flush safely).
//
// Pure bookkeeping: times come from the caller, no clock, no I/O.

import { HistogramSketch } from '../../traffic/histogram-sketch.ts';
import { reportSketchAccuracy } from '../../protocol/traffic/traffic-report.ts';
import type { LoadReport } from '../../protocol/scaling/load-report.ts';
import type { DemandRow } from '../../store/scaling-records.ts';
import { demandMinuteMs } from '../../store/sqlite/sqlite-scaling.ts';

/** Gateway demand for one endpoint now, summed over gateways. */
export interface GatewayDemandNow {
  /** Requests in flight, time-averaged over each gateway's last window. */
  readonly concurrency: number;
  /** Arrivals per second over each gateway's last window. */
  readonly qps: number;
  /** Answers per second over each gateway's last window. */
  readonly completed: number;
  /** Requests held by activators at the end of each gateway's last window. */
  readonly held: number;
  /** Gateways whose entry counted. */
  readonly gateways: number;
}

interface LatestEntry {
  readonly receivedMs: number;
  readonly windowSeconds: number;
  readonly arrivals: number;
  readonly completed: number;
  readonly concurrencyMean: number;
  readonly held: number;
}

interface MinuteSums {
  arrivals: number;
  concurrencySeconds: number;
  seconds: number;
  readonly latency: HistogramSketch;
}

export class GatewayDemand {
  /** endpoint → gateway → its latest entry. */
  private readonly latest = new Map<string, Map<string, LatestEntry>>();
  /** `${endpoint}\n${minuteMs}` → sums not yet in the store. */
  private readonly pending = new Map<string, MinuteSums>();

  /**
   * `staleMs`: how long a gateway's entry counts without a newer report. Gateways report each
   * second; two seconds rides out one late report without a dip, and delays noticing that a
   * gateway went idle (it then sends nothing) by at most that.
   */
  constructor(private readonly staleMs = 2_000) {}

  /** Takes a checked report (load-report-check.ts) received at `nowMs`. */
  add(report: LoadReport, nowMs: number): void {
    const startMs = Date.parse(report.windowStart);
    const windowSeconds = (Date.parse(report.windowEnd) - startMs) / 1000;
    const listed = new Set(report.endpoints.map((e) => e.endpoint));
    // Not listed: idle at this gateway now.
    for (const [endpoint, byGateway] of this.latest) {
      if (!listed.has(endpoint)) byGateway.delete(report.gateway);
      if (byGateway.size === 0) this.latest.delete(endpoint);
    }
    const minuteMs = Math.floor(startMs / demandMinuteMs) * demandMinuteMs;
    for (const load of report.endpoints) {
      let byGateway = this.latest.get(load.endpoint);
      if (byGateway === undefined) {
        byGateway = new Map();
        this.latest.set(load.endpoint, byGateway);
      }
      byGateway.set(report.gateway, {
        receivedMs: nowMs,
        windowSeconds,
        arrivals: load.arrivals,
        completed: load.completed,
        concurrencyMean: load.concurrencyMean,
        held: load.held,
      });
      const sums = this.minute(`${load.endpoint}\n${minuteMs}`);
      sums.arrivals += load.arrivals;
      sums.concurrencySeconds += load.concurrencyMean * windowSeconds;
      sums.seconds += windowSeconds;
      const latency = HistogramSketch.fromSnapshot(load.latencyMs);
      // A sketch of another accuracy cannot be added bucket by bucket: its counts are lost
      // from the latency (still counted as arrivals), never mixed in wrongly.
      if (latency.ok) sums.latency.merge(latency.sketch);
    }
  }

  /** The endpoint's demand at `nowMs` over the gateways that reported it recently. */
  now(endpoint: string, nowMs: number): GatewayDemandNow {
    let concurrency = 0;
    let qps = 0;
    let completed = 0;
    let held = 0;
    let gateways = 0;
    for (const [gateway, entry] of this.latest.get(endpoint) ?? []) {
      if (nowMs - entry.receivedMs > this.staleMs) {
        this.latest.get(endpoint)?.delete(gateway);
        continue;
      }
      concurrency += entry.concurrencyMean;
      qps += entry.windowSeconds > 0 ? entry.arrivals / entry.windowSeconds : 0;
      completed += entry.windowSeconds > 0 ? entry.completed / entry.windowSeconds : 0;
      held += entry.held;
      gateways += 1;
    }
    return { concurrency, qps, completed, held, gateways };
  }

  /** The minute sums gathered since the last drain, as rows to add to the store. */
  drain(): DemandRow[] {
    const rows: DemandRow[] = [];
    for (const [key, sums] of this.pending) {
      const [endpoint = '', minute = '0'] = key.split('\n');
      rows.push({
        endpoint,
        minuteStart: new Date(Number(minute)).toISOString(),
        arrivals: sums.arrivals,
        concurrencySeconds: sums.concurrencySeconds,
        seconds: sums.seconds,
        latencyMs: sums.latency.snapshot(),
      });
    }
    this.pending.clear();
    return rows;
  }

  /** The sums pending for one endpoint and minute (key: endpoint, newline, minute ms). */
  private minute(key: string): MinuteSums {
    let sums = this.pending.get(key);
    if (sums === undefined) {
      sums = {
        arrivals: 0,
        concurrencySeconds: 0,
        seconds: 0,
        latency: new HistogramSketch(reportSketchAccuracy),
      };
      this.pending.set(key, sums);
    }
    return sums;
  }

  /** Puts rows back after a failed store write (added to whatever came meanwhile). */
  restore(rows: readonly DemandRow[]): void {
    for (const row of rows) {
      const sums = this.minute(`${row.endpoint}\n${Date.parse(row.minuteStart)}`);
      sums.arrivals += row.arrivals;
      sums.concurrencySeconds += row.concurrencySeconds;
      sums.seconds += row.seconds;
      const latency = HistogramSketch.fromSnapshot(row.latencyMs);
      if (latency.ok) sums.latency.merge(latency.sketch);
    }
  }
}
