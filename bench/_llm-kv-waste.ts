// KV memory waste for bench/llm-serving.ts part (c): reserved but unused token slots over
// reserved slots, sampled while a workload runs, for the paged cache the engine really holds
// and, at the same instants and for the same live sequences, for a contiguous reservation.
//
//   paged:       the blocks live sequences hold, each once (a prefix block shared by several
//                is one block, full); unused = their slots − the positions they hold, i.e.
//                the unfilled tail of each sequence's last block (< blockSize each)
//   contiguous:  sequence i reserves rᵢ slots at admission, rᵢ = promptᵢ + max_tokensᵢ
//                (what it may grow to) or the context length (static-shape engines);
//                unused = rᵢ − tᵢ, tᵢ = positions it holds now
//
// Each sample is weighted by how long it held (the engine step it preceded), and the
// percentages are ratios of the weighted sums: slot-seconds unused over slot-seconds reserved.

/** One live sequence holding KV positions. */
export interface KvSequenceSample {
  /** Positions held (tᵢ). */
  readonly numTokens: number;
  readonly promptTokens: number;
  readonly maxTokens: number;
}

/** The engine's memory at one instant. */
export interface KvSample {
  /** Slots of the blocks the live sequences hold (each block once). */
  readonly pagedReservedSlots: number;
  /** Of those, slots holding a position. */
  readonly pagedFilledSlots: number;
  /** The sequences holding blocks. */
  readonly sequences: readonly KvSequenceSample[];
}

export interface KvWaste {
  readonly samples: number;
  /** Mean live sequences holding KV over the samples (time-weighted). */
  readonly meanSequences: number;
  readonly pagedPct: number;
  readonly contiguousMaxTokensPct: number;
  readonly contiguousContextPct: number;
  /** Worst single sample of the paged cache (%). */
  readonly pagedWorstPct: number;
}

export class KvWasteMeter {
  private samples = 0;
  private weight = 0;
  private sequences = 0;
  private pagedReserved = 0;
  private pagedFilled = 0;
  private held = 0;
  private maxTokensReserved = 0;
  private contextReserved = 0;
  private worst = 0;

  constructor(private readonly contextLength: number) {}

  /** Adds one sample held for `weight` (its duration); no-op when nothing holds KV. */
  add(sample: KvSample, weight: number): void {
    if (sample.pagedReservedSlots === 0 || !(weight > 0)) return;
    let held = 0;
    let maxTokens = 0;
    for (const s of sample.sequences) {
      held += s.numTokens;
      maxTokens += Math.min(this.contextLength, s.promptTokens + s.maxTokens);
    }
    const n = sample.sequences.length;
    this.samples += 1;
    this.weight += weight;
    this.sequences += n * weight;
    this.pagedReserved += sample.pagedReservedSlots * weight;
    this.pagedFilled += sample.pagedFilledSlots * weight;
    this.held += held * weight;
    this.maxTokensReserved += maxTokens * weight;
    this.contextReserved += n * this.contextLength * weight;
    const unused = sample.pagedReservedSlots - sample.pagedFilledSlots;
    this.worst = Math.max(this.worst, (100 * unused) / sample.pagedReservedSlots);
  }

  result(): KvWaste {
    const pct = (reserved: number, filled: number) =>
      reserved === 0 ? Number.NaN : (100 * (reserved - filled)) / reserved;
    return {
      samples: this.samples,
      meanSequences: this.weight === 0 ? 0 : this.sequences / this.weight,
      pagedPct: pct(this.pagedReserved, this.pagedFilled),
      contiguousMaxTokensPct: pct(this.maxTokensReserved, this.held),
      contiguousContextPct: pct(this.contextReserved, this.held),
      pagedWorstPct: this.worst,
    };
  }
}
