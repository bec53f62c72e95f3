// What one gateway has measured of each endpoint's demand since its last load report
// (protocol/scaling/load-report.ts), for the autoscaler: arrivals, completions, requests in
// flight integrated over time (held ones included: a request waiting for a replica to wake
// is demand), the most in flight at once, how many the activator holds now, and the
// latency of the 200s. The reporter (load-reporter.ts) takes a report once a second and the
// window starts afresh.
//
//   in flight
//     3 |        ┌──┐
//     2 |     ┌──┘  └─────┐
//     1 |  ┌──┘           └──┐
//     0 └──┴─────────────────┴──▶ t      concurrencyMean = area / window length
//        windowStart             windowEnd   (the area is summed at every change)
//
// Every endpoint's counter lives as long as the gateway: route tables made from later
// snapshots hold the same one, so the hot path reaches it through a reference taken when
// the table was built (as the traffic counters). Memory: one small object and one sketch
// per endpoint routed.

import { HistogramSketch } from '../traffic/histogram-sketch.ts';
import { reportSketchAccuracy } from '../protocol/traffic/traffic-report.ts';
import type { EndpointLoad, LoadReport } from '../protocol/scaling/load-report.ts';

export class EndpointLoadCounter {
  private arrivals = 0;
  private completed = 0;
  /** Requests arrived and not yet answered (held ones included). */
  private inFlight = 0;
  /** ∫ inFlight dt over the window so far, in request·ms, up to `changedAtMs`. */
  private areaMs = 0;
  private changedAtMs: number;
  private maxInFlight = 0;
  private latencyMs = new HistogramSketch(reportSketchAccuracy);
  /** LLM tokens of the answers in the window (cost accounting), from the workers' kiln-usage. */
  private promptTokens = 0;
  private completionTokens = 0;

  constructor(
    readonly endpoint: string,
    private readonly nowMs: () => number,
    windowStartMs: number,
  ) {
    this.changedAtMs = windowStartMs;
  }

  /** An infer request arrived for the endpoint (refused at the door or not). */
  arrive(): void {
    this.advance(this.nowMs());
    this.arrivals += 1;
    this.inFlight += 1;
    if (this.inFlight > this.maxInFlight) this.maxInFlight = this.inFlight;
  }

  /** A request counted by `arrive` was answered (any status; `latencyMs`: arrival → answer). */
  complete(status: number, latencyMs: number): void {
    this.advance(this.nowMs());
    this.completed += 1;
    if (this.inFlight > 0) this.inFlight -= 1;
    if (status === 200) this.latencyMs.add(latencyMs);
  }

  /** An LLM answer's tokens (counted once the worker says them, at its end for a stream). */
  tokens(prompt: number, completion: number): void {
    this.promptTokens += prompt;
    this.completionTokens += completion;
  }

  /**
   * The window [startMs, endMs) as an EndpointLoad (`held`: what the activator holds now),
   * or null when nothing arrived, was answered, in flight or held in it; a new window starts
   * at endMs either way.
   */
  take(startMs: number, endMs: number, held: number): EndpointLoad | null {
    this.advance(endMs);
    const idle =
      this.arrivals === 0 &&
      this.completed === 0 &&
      this.areaMs === 0 &&
      this.inFlight === 0 &&
      held === 0 &&
      this.promptTokens + this.completionTokens === 0;
    const lengthMs = endMs - startMs;
    const load: EndpointLoad | null = idle
      ? null
      : {
          endpoint: this.endpoint,
          arrivals: this.arrivals,
          completed: this.completed,
          // A zero-length window (two takes in one ms): what is in flight now.
          concurrencyMean: lengthMs > 0 ? this.areaMs / lengthMs : this.inFlight,
          concurrencyMax: Math.max(this.maxInFlight, this.inFlight),
          held,
          latencyMs: this.latencyMs.snapshot(),
          // Only when there are some: a report without LLM answers keeps its issue-14 shape.
          ...(this.promptTokens + this.completionTokens === 0
            ? {}
            : { promptTokens: this.promptTokens, completionTokens: this.completionTokens }),
        };
    this.arrivals = 0;
    this.completed = 0;
    this.areaMs = 0;
    this.maxInFlight = this.inFlight;
    this.promptTokens = 0;
    this.completionTokens = 0;
    if (this.latencyMs.count > 0) this.latencyMs = new HistogramSketch(reportSketchAccuracy);
    return load;
  }

  /** Adds the area since the last change (a clock that steps back adds nothing). */
  private advance(nowMs: number): void {
    if (nowMs > this.changedAtMs) {
      this.areaMs += this.inFlight * (nowMs - this.changedAtMs);
      this.changedAtMs = nowMs;
    }
  }
}

export class LoadCounter {
  private readonly endpoints = new Map<string, EndpointLoadCounter>();
  private windowStartMs: number;

  constructor(
    /** Requests the activator holds now for an endpoint (activator.ts). */
    private readonly heldNow: (endpoint: string) => number = () => 0,
    private readonly nowMs: () => number = Date.now,
  ) {
    this.windowStartMs = nowMs();
  }

  /** The counter of one endpoint (made on first use, kept). */
  endpoint(name: string): EndpointLoadCounter {
    let counter = this.endpoints.get(name);
    if (counter === undefined) {
      counter = new EndpointLoadCounter(name, this.nowMs, this.windowStartMs);
      this.endpoints.set(name, counter);
    }
    return counter;
  }

  /**
   * What was measured since the last take, as a report from `gateway`, and a new window
   * begins; null when every endpoint was idle (an idle gateway sends nothing).
   */
  take(gateway: string): LoadReport | null {
    const startMs = this.windowStartMs;
    const endMs = Math.max(startMs, this.nowMs());
    this.windowStartMs = endMs;
    const endpoints: EndpointLoad[] = [];
    for (const counter of this.endpoints.values()) {
      const load = counter.take(startMs, endMs, this.heldNow(counter.endpoint));
      if (load !== null) endpoints.push(load);
    }
    if (endpoints.length === 0) return null;
    return {
      gateway,
      windowStart: new Date(startMs).toISOString(),
      windowEnd: new Date(endMs).toISOString(),
      endpoints,
    };
  }
}
