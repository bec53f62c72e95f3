// What one gateway has counted for traffic management since its last report: per endpoint
// with a traffic policy, per served version (overall and per slice value) and per shadow
// version, following the counting rules of protocol/traffic/traffic-report.ts. The
// reporter (traffic-reporter.ts) takes the counts as a TrafficReport once a second and the
// counting starts afresh.
//
//   TrafficCounter ─ endpoint name ─▶ EndpointTrafficCounter
//                                       ├ 'model:version' ─▶ VersionCounter (overall + slices)
//                                       └ 'model:version' ─▶ ShadowCounter
//
// The counter objects live as long as the gateway (route tables made from later snapshots
// hold the same ones), so the hot path reaches its counter through a reference taken when
// the table was built, never through a lookup; `take` snapshots and empties them in place.
// Memory is bounded by the versions routed and `maxSliceValues` slices per version.

import { HistogramSketch } from '../traffic/histogram-sketch.ts';
import { RunningMoments } from '../traffic/running-moments.ts';
import {
  maxSliceValues,
  otherSlice,
  reportSketchAccuracy,
  type EndpointTrafficReport,
  type ShadowTrafficReport,
  type TrafficReport,
  type VersionTrafficReport,
  type WindowCounts,
} from '../protocol/traffic/traffic-report.ts';

/** Requests, errors, latency and outputs of one version (and slice) in the current window. */
class WindowAccumulator {
  requests = 0;
  errors = 0;
  latencyMs = new HistogramSketch(reportSketchAccuracy);
  outputs = new HistogramSketch(reportSketchAccuracy);

  add(status: number, latencyMs: number, outputs: readonly number[] | null): void {
    this.requests += 1;
    if (status >= 500) this.errors += 1;
    this.latencyMs.add(latencyMs);
    if (outputs !== null) for (const value of outputs) this.outputs.add(value);
  }

  snapshot(): WindowCounts {
    return {
      requests: this.requests,
      errors: this.errors,
      latencyMs: this.latencyMs.snapshot(),
      outputs: this.outputs.snapshot(),
    };
  }
}

export class VersionCounter {
  private overall = new WindowAccumulator();
  private slices = new Map<string, WindowAccumulator>();

  constructor(
    readonly model: string,
    readonly version: number,
  ) {}

  /**
   * One answered request: its status, its latency from arrival (ms), its slice value (null:
   * none) and the output values counted from its answer (null: none).
   */
  record(
    status: number,
    latencyMs: number,
    slice: string | null,
    outputs: readonly number[] | null,
  ): void {
    this.overall.add(status, latencyMs, outputs);
    if (slice === null) return;
    let counts = this.slices.get(slice);
    if (counts === undefined) {
      const key = this.slices.size < maxSliceValues ? slice : otherSlice;
      counts = this.slices.get(key);
      if (counts === undefined) {
        counts = new WindowAccumulator();
        this.slices.set(key, counts);
      }
    }
    counts.add(status, latencyMs, outputs);
  }

  get requests(): number {
    return this.overall.requests;
  }

  /** The window's counts, or null when empty; the counter starts a new window either way. */
  take(): VersionTrafficReport | null {
    const overall = this.overall;
    if (overall.requests === 0) return null;
    const slices: Record<string, WindowCounts> = {};
    for (const [value, counts] of this.slices) slices[value] = counts.snapshot();
    this.overall = new WindowAccumulator();
    this.slices = new Map();
    return { model: this.model, version: this.version, overall: overall.snapshot(), slices };
  }
}

export class ShadowCounter {
  offered = 0;
  sent = 0;
  dropped = 0;
  errors = 0;
  compared = 0;
  agreed = 0;
  absDiff = new RunningMoments();
  latencyMs = new HistogramSketch(reportSketchAccuracy);
  primaryLatencyMs = new HistogramSketch(reportSketchAccuracy);

  constructor(
    readonly model: string,
    readonly version: number,
  ) {}

  take(): ShadowTrafficReport | null {
    if (this.offered === 0 && this.sent === 0 && this.errors === 0 && this.compared === 0) {
      return null;
    }
    const report: ShadowTrafficReport = {
      model: this.model,
      version: this.version,
      counts: {
        offered: this.offered,
        sent: this.sent,
        dropped: this.dropped,
        errors: this.errors,
        compared: this.compared,
        agreed: this.agreed,
        absDiff: this.absDiff.snapshot(),
        latencyMs: this.latencyMs.snapshot(),
        primaryLatencyMs: this.primaryLatencyMs.snapshot(),
      },
    };
    this.offered = this.sent = this.dropped = this.errors = this.compared = this.agreed = 0;
    this.absDiff = new RunningMoments();
    this.latencyMs = new HistogramSketch(reportSketchAccuracy);
    this.primaryLatencyMs = new HistogramSketch(reportSketchAccuracy);
    return report;
  }
}

export class EndpointTrafficCounter {
  private readonly versions = new Map<string, VersionCounter>();
  private readonly shadows = new Map<string, ShadowCounter>();

  constructor(readonly endpoint: string) {}

  /** The counter of one served version (made on first use, kept). */
  version(model: string, version: number): VersionCounter {
    const key = `${model}:${version}`;
    let counter = this.versions.get(key);
    if (counter === undefined) {
      counter = new VersionCounter(model, version);
      this.versions.set(key, counter);
    }
    return counter;
  }

  shadow(model: string, version: number): ShadowCounter {
    const key = `${model}:${version}`;
    let counter = this.shadows.get(key);
    if (counter === undefined) {
      counter = new ShadowCounter(model, version);
      this.shadows.set(key, counter);
    }
    return counter;
  }

  take(): EndpointTrafficReport | null {
    const versions: VersionTrafficReport[] = [];
    for (const counter of this.versions.values()) {
      const report = counter.take();
      if (report !== null) versions.push(report);
    }
    const shadows: ShadowTrafficReport[] = [];
    for (const counter of this.shadows.values()) {
      const report = counter.take();
      if (report !== null) shadows.push(report);
    }
    if (versions.length === 0 && shadows.length === 0) return null;
    return { endpoint: this.endpoint, versions, shadows };
  }
}

export class TrafficCounter {
  private readonly endpoints = new Map<string, EndpointTrafficCounter>();
  private windowStartMs: number;

  constructor(private readonly nowMs: () => number = Date.now) {
    this.windowStartMs = nowMs();
  }

  /** The counter of one endpoint (made on first use, kept). */
  endpoint(name: string): EndpointTrafficCounter {
    let counter = this.endpoints.get(name);
    if (counter === undefined) {
      counter = new EndpointTrafficCounter(name);
      this.endpoints.set(name, counter);
    }
    return counter;
  }

  /**
   * Everything counted since the last take, as a report from `gateway`, and a new window
   * begins; null when nothing was counted.
   */
  take(gateway: string): TrafficReport | null {
    const endpoints: EndpointTrafficReport[] = [];
    for (const counter of this.endpoints.values()) {
      const report = counter.take();
      if (report !== null) endpoints.push(report);
    }
    const endMs = this.nowMs();
    if (endpoints.length === 0) {
      this.windowStartMs = endMs; // an empty window is no window: the next starts now
      return null;
    }
    const windowStart = new Date(this.windowStartMs).toISOString();
    this.windowStartMs = endMs;
    return { gateway, windowStart, windowEnd: new Date(endMs).toISOString(), endpoints };
  }
}
