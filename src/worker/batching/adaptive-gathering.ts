// Whether the batcher gathers — holds requests for more rows, up to the config's
// maxDelayMicros, and runs them joined — or runs each request by itself as soon as the model
// is free. Decided from what rows cost while serving (row-cost-buckets.ts), not guessed:
//
//   gathering pays  ⇔  the larger batch sizes measured cost, per row (pooled, weighted by
//                      samples), execution + the wait gathering added, at most (1 − gain) ×
//                      the per-row execution cost of the smallest size measured (usually one
//                      row, nothing held)
//
// A model whose per-call cost dominates (falling per-row cost) keeps gathering; one whose
// cost is flat in rows (compute-bound at one row, or one that cannot join rows) stops: there
// joining saves nothing, and a request joined into a batch is answered only when every row of
// it has run. The two modes are probed in turn so a changed model or load is noticed:
//
//   cold start ─► probe: gather, probeBatches batches ─► decide ─► steady (gather or alone)
//        ▲                                                              │ probeIntervalMicros
//        └─ decide ◄── probe: the other mode, probeBatches batches ◄────┘ after the last probe
//
// A probe is bounded: probeBatches executions every probeIntervalMicros, in a mode whose
// worst cost is the config's own bounds (a user's maxDelayMicros and maxBatchSize are upper
// bounds in every mode). Decisions are after a batch completes, on the injected clock, so
// tests drive it with fake time and a fake cost model. Hysteresis (gain to start, keepGain to
// stay) keeps a model near the line from flapping.

import { RowCostBuckets, bucketCount, bucketRows, type RowCost } from './row-cost-buckets.ts';

export interface AdaptiveGatheringOptions {
  /** Time between the end of one probe and the start of the next, µs. */
  readonly probeIntervalMicros: number;
  /** Executions a probe runs in the other mode. */
  readonly probeBatches: number;
  /** Samples a bucket needs before it counts. */
  readonly minSamples: number;
  /** Weight of a new sample in a bucket's moving average (0–1]. */
  readonly weight: number;
  /** A bucket not updated for this long is ignored (and restarted when next measured), µs. */
  readonly staleMicros: number;
  /** Gathering starts when a larger size saves at least this fraction per row… */
  readonly gain: number;
  /** …and stops when its saving falls under this one. */
  readonly keepGain: number;
}

export const defaultAdaptiveGathering: AdaptiveGatheringOptions = {
  probeIntervalMicros: 5_000_000,
  probeBatches: 4,
  minSamples: 2,
  weight: 0.25,
  staleMicros: 30_000_000,
  gain: 0.1,
  keepGain: 0.05,
};

export interface AdaptiveGatheringHooks {
  /** The batcher started (true) or stopped (false) gathering, probes included. */
  onGathering?(gathering: boolean): void;
  /** A bucket's averages after an execution filed in it, µs per row. */
  onRowCost?(bucketRows: number, executeMicrosPerRow: number, waitMicrosPerRow: number): void;
  /** A probe began, in the given mode. */
  onProbe?(gathering: boolean): void;
}

interface Probe {
  readonly gathering: boolean;
  batchesLeft: number;
}

export class AdaptiveGathering {
  private readonly costs: RowCostBuckets;
  /** The steady decision (what runs between probes). */
  private decided = false;
  /** Cold start is a gathering probe: nothing is known, and a probe is bounded. */
  private probe: Probe | null;
  private nextProbeMicros = Number.POSITIVE_INFINITY;

  constructor(
    private readonly options: AdaptiveGatheringOptions = defaultAdaptiveGathering,
    private readonly hooks: AdaptiveGatheringHooks = {},
  ) {
    this.costs = new RowCostBuckets(options.weight, options.staleMicros);
    this.probe = { gathering: true, batchesLeft: options.probeBatches };
    hooks.onGathering?.(true);
  }

  /** Whether the next batch may wait for more rows and join requests. */
  get gathering(): boolean {
    return this.probe?.gathering ?? this.decided;
  }

  /** Whether a probe is running now. */
  get probing(): boolean {
    return this.probe !== null;
  }

  /** Called while the model is idle, before a batch is picked: starts a probe when due. */
  tick(nowMicros: number): void {
    if (this.probe !== null || nowMicros < this.nextProbeMicros) return;
    this.probe = { gathering: !this.decided, batchesLeft: this.options.probeBatches };
    this.hooks.onProbe?.(this.probe.gathering);
    this.hooks.onGathering?.(this.probe.gathering);
  }

  /**
   * A batch ran: `rows` rows; when measured (`sample`; the batcher may measure only some
   * batches), in `executeMicros` (join, run, split), after gathering held its requests
   * `waitMicros` in all (0 if nothing was held while the model was free).
   */
  completed(
    rows: number,
    sample: { readonly executeMicros: number; readonly waitMicros: number } | null,
    nowMicros: number,
  ): void {
    if (sample !== null) {
      const bucket = this.costs.record(rows, sample.executeMicros, sample.waitMicros, nowMicros);
      const cost = this.costs.cost(bucket, nowMicros);
      if (cost !== null)
        this.hooks.onRowCost?.(bucketRows(bucket), cost.executeMicrosPerRow, cost.waitMicrosPerRow);
    }
    this.step(nowMicros);
  }

  /** A batch failed: nothing measured, but it counts against a probe (which must end). */
  failed(nowMicros: number): void {
    this.step(nowMicros);
  }

  /** The figures a decision reads (for metrics and tests). */
  cost(bucket: number, nowMicros: number): RowCost | null {
    return this.costs.cost(bucket, nowMicros);
  }

  private step(nowMicros: number): void {
    const before = this.gathering;
    if (this.probe !== null) {
      this.probe.batchesLeft -= 1;
      if (this.probe.batchesLeft > 0) return;
      this.probe = null;
      this.nextProbeMicros = nowMicros + this.options.probeIntervalMicros;
    }
    this.decided = this.pays(nowMicros);
    if (this.gathering !== before) this.hooks.onGathering?.(this.gathering);
  }

  private pays(nowMicros: number): boolean {
    const { minSamples } = this.options;
    let base: RowCost | null = null;
    let bucket = 0;
    for (; bucket < bucketCount; bucket++) {
      const cost = this.costs.cost(bucket, nowMicros);
      if (cost !== null && cost.samples >= minSamples) {
        base = cost;
        break;
      }
    }
    if (base === null) return false; // nothing known: run requests as they come
    const gain = this.decided ? this.options.keepGain : this.options.gain;
    // The larger buckets pooled (weighted by samples), not each alone: on a noisy machine
    // one of several flat buckets would often read 10 % cheaper by chance.
    let weighted = 0;
    let samples = 0;
    for (let larger = bucket + 1; larger < bucketCount; larger++) {
      const cost = this.costs.cost(larger, nowMicros);
      if (cost === null || cost.samples < minSamples) continue;
      weighted += cost.samples * (cost.executeMicrosPerRow + cost.waitMicrosPerRow);
      samples += cost.samples;
    }
    return samples > 0 && weighted / samples <= (1 - gain) * base.executeMicrosPerRow;
  }
}
