// Whether the batcher gathers — holds requests for more rows, up to the config's
// maxDelayMicros, and runs them joined — or runs each request by itself as soon as the model
// is free. Decided from what a row costs in each mode while serving, measured in two stretches
// back to back, so both see the same load:
//
//   steady (decided mode) ──probe due──► reference stretch: the decided mode ──► probe stretch:
//        ▲                                                                      the other mode
//        │                                                                           │
//        └──────── decide: gather ⇔ cost per row gathering ≤ (1 − gain) × alone ◄────┘
//
// A stretch is a run of consecutive batches (at least stretchBatches, lasting at least
// stretchMicros) from one completion to another; its cost per row is what the process spent
// over it — CPU time where the clock has it (the model and everything else done for those
// requests: reading, decoding, encoding, writing), else the batches' own time — plus the wait
// gathering added, over the rows it completed. Comparing adjacent stretches, not costs by batch
// size gathered at whatever load was then, matters: per-request overheads fall as load rises
// (wake-ups shared, caches warm), so 32-row batches seen at noon read cheaper per row than
// 1-row ones seen at night even on a model whose work is flat in rows.
//
// The ratio gathering ÷ alone of each pair is smoothed across probes (a moving average), and
// hysteresis (gain to start, keepGain to stay) keeps a model near the line from flapping. A
// probe costs two stretches every probeIntervalMicros, one of them in the mode not chosen; a
// failed batch abandons the probe (the next one comes after the interval), and a pause in the
// load restarts it. A cold start gathers, as configured, and probes once warm
// (firstProbeMicros). The CPU clock is read only at stretch boundaries: reading it is a system
// call. Decisions are taken after a batch completes, on the injected
// clock, so tests drive it with fake time and a fake cost model.

export interface AdaptiveGatheringOptions {
  /** Time from the end of one probe to the start of the next, µs. */
  readonly probeIntervalMicros: number;
  /**
   * Time from the first batch to the first probe, µs: a process just started runs its code
   * cold (compiling, caches empty), and what it measures then says little of either mode.
   */
  readonly firstProbeMicros: number;
  /** A stretch lasts at least this many batches… */
  readonly stretchBatches: number;
  /** …and at least this long, µs. */
  readonly stretchMicros: number;
  /**
   * Two completions further apart than this mean the load paused (between a benchmark's
   * points, a client's bursts): the stretch is dropped and measuring starts again from the
   * later one, as a pause's CPU (timers, collection) is not what the requests cost.
   */
  readonly maxGapMicros: number;
  /** Weight of a new probe's ratio in the moving average (0–1]. */
  readonly weight: number;
  /** Gathering starts when it saves at least this fraction per row… */
  readonly gain: number;
  /** …and stops when its saving falls under this one. */
  readonly keepGain: number;
}

export const defaultAdaptiveGathering: AdaptiveGatheringOptions = {
  probeIntervalMicros: 5_000_000,
  firstProbeMicros: 2_000_000,
  stretchBatches: 8,
  stretchMicros: 50_000,
  maxGapMicros: 100_000,
  weight: 0.5,
  gain: 0.1,
  keepGain: 0.05,
};

export interface AdaptiveGatheringHooks {
  /** The batcher started (true) or stopped (false) gathering, probes included. */
  onGathering?(gathering: boolean): void;
  /** A stretch in the given mode ended: its cost and added wait, µs per row. */
  onModeCost?(gathering: boolean, executeMicrosPerRow: number, waitMicrosPerRow: number): void;
  /** A probe stretch began, in the given mode. */
  onProbe?(gathering: boolean): void;
}

/** What one stretch measured, µs per row. */
export interface ModeCost {
  readonly executeMicrosPerRow: number;
  readonly waitMicrosPerRow: number;
  /** When the stretch ended. */
  readonly measuredMicros: number;
}

/** A completed batch: its own time (start to end) and the wait gathering added to it, µs. */
export interface BatchCost {
  readonly rows: number;
  readonly executeMicros: number;
  readonly waitMicros: number;
}

interface Stretch {
  readonly phase: 'reference' | 'probe';
  readonly gathering: boolean;
  /** A probe stretch: what its reference stretch measured, to compare with (else null). */
  readonly reference: ModeCost | null;
  readonly startMicros: number;
  /** The CPU clock at the start (NaN: no CPU clock). */
  readonly startCpu: number;
  /** The last completion in it, µs. */
  lastMicros: number;
  batches: number;
  rows: number;
  executeMicros: number;
  waitMicros: number;
}

export class AdaptiveGathering {
  /**
   * The steady decision (what runs between probes). No evidence yet: the config's rule, as the
   * user set batching up; the cold-start probe then measures it against running alone.
   */
  private decided = true;
  /** A probe is due: it starts at the next completion (stretches run completion to completion). */
  private due = false;
  private stretch: Stretch | null = null;
  /** NaN until the first batch: the first probe is firstProbeMicros after it. */
  private nextProbeMicros = Number.NaN;
  /** Smoothed cost ratio gathering ÷ alone (NaN: none yet). */
  private smoothedRatio = Number.NaN;
  private readonly last: { gather: ModeCost | null; alone: ModeCost | null } = {
    gather: null,
    alone: null,
  };

  /** What onGathering last said. */
  private reported = true;

  constructor(
    private readonly options: AdaptiveGatheringOptions = defaultAdaptiveGathering,
    private readonly hooks: AdaptiveGatheringHooks = {},
  ) {
    hooks.onGathering?.(true);
  }

  /** Whether the next batch may wait for more rows and join requests. */
  get gathering(): boolean {
    return this.stretch?.gathering ?? this.decided;
  }

  /** Whether a probe is due or running. */
  get probing(): boolean {
    return this.due || this.stretch !== null;
  }

  /** The last stretch measured in each mode and the smoothed ratio (metrics, tests). */
  costs(): {
    readonly gather: ModeCost | null;
    readonly alone: ModeCost | null;
    readonly ratio: number | null;
  } {
    const ratio = Number.isNaN(this.smoothedRatio) ? null : this.smoothedRatio;
    return { gather: this.last.gather, alone: this.last.alone, ratio };
  }

  /** Called while the model is idle, before a batch is picked: a probe becomes due. */
  tick(nowMicros: number): void {
    if (Number.isNaN(this.nextProbeMicros))
      this.nextProbeMicros = nowMicros + this.options.firstProbeMicros;
    if (!this.probing && nowMicros >= this.nextProbeMicros) this.due = true;
  }

  /**
   * A batch completed at `nowMicros`. `cpuMicros` reads the CPU clock (null: none; then the
   * batches' own times are the cost); it is called only at a stretch's start and end.
   */
  completed(batch: BatchCost, nowMicros: number, cpuMicros: (() => number) | null): void {
    let stretch = this.stretch;
    if (stretch !== null && nowMicros - stretch.lastMicros > this.options.maxGapMicros) {
      // The load paused: start the probe again from this completion.
      [stretch, this.stretch, this.due] = [null, null, true];
    }
    if (stretch === null) {
      if (this.due) this.begin('reference', this.decided, null, nowMicros, cpuMicros);
      return;
    }
    stretch.lastMicros = nowMicros;
    stretch.batches += 1;
    stretch.rows += batch.rows;
    stretch.executeMicros += Math.max(0, batch.executeMicros);
    stretch.waitMicros += Math.max(0, batch.waitMicros);
    if (
      stretch.batches < this.options.stretchBatches ||
      nowMicros - stretch.startMicros < this.options.stretchMicros
    )
      return;
    const cpuNow = Number.isNaN(stretch.startCpu) || cpuMicros === null ? Number.NaN : cpuMicros();
    const executed = Number.isNaN(cpuNow) ? stretch.executeMicros : cpuNow - stretch.startCpu;
    const rows = Math.max(1, stretch.rows);
    const cost: ModeCost = {
      executeMicrosPerRow: Math.max(0, executed) / rows,
      waitMicrosPerRow: stretch.waitMicros / rows,
      measuredMicros: nowMicros,
    };
    this.last[stretch.gathering ? 'gather' : 'alone'] = cost;
    this.hooks.onModeCost?.(stretch.gathering, cost.executeMicrosPerRow, cost.waitMicrosPerRow);
    const reference = stretch.reference;
    if (stretch.phase === 'reference' || reference === null) {
      // The next stretch starts where this one ended: one CPU reading serves both.
      this.hooks.onProbe?.(!this.decided);
      this.begin('probe', !this.decided, cost, nowMicros, () => cpuNow);
      return;
    }
    this.end(nowMicros);
    const [gather, alone] = stretch.gathering ? [cost, reference] : [reference, cost];
    const ratio =
      (gather.executeMicrosPerRow + gather.waitMicrosPerRow) /
      Math.max(Number.MIN_VALUE, alone.executeMicrosPerRow + alone.waitMicrosPerRow);
    this.smoothedRatio = Number.isNaN(this.smoothedRatio)
      ? ratio
      : this.smoothedRatio + this.options.weight * (ratio - this.smoothedRatio);
    const gain = this.decided ? this.options.keepGain : this.options.gain;
    this.decide(this.smoothedRatio <= 1 - gain);
  }

  /** A batch failed: nothing to measure; a probe running now is abandoned. */
  failed(nowMicros: number): void {
    if (this.stretch === null) return;
    this.end(nowMicros);
    this.report(); // back to the steady mode
  }

  private begin(
    phase: Stretch['phase'],
    gathering: boolean,
    reference: ModeCost | null,
    nowMicros: number,
    cpuMicros: (() => number) | null,
  ): void {
    this.due = false;
    this.stretch = {
      phase,
      gathering,
      reference,
      startMicros: nowMicros,
      startCpu: cpuMicros === null ? Number.NaN : cpuMicros(),
      lastMicros: nowMicros,
      batches: 0,
      rows: 0,
      executeMicros: 0,
      waitMicros: 0,
    };
    this.report();
  }

  private end(nowMicros: number): void {
    this.stretch = null;
    this.nextProbeMicros = nowMicros + this.options.probeIntervalMicros;
  }

  /** Sets the steady mode (a probe ended). */
  private decide(gathering: boolean): void {
    this.decided = gathering;
    this.report();
  }

  /** Tells the hook when what runs changed. */
  private report(): void {
    if (this.gathering === this.reported) return;
    this.reported = this.gathering;
    this.hooks.onGathering?.(this.reported);
  }
}
