// KV memory waste for bench/llm-serving.ts part (c): reserved but unused token slots over
// reserved slots, sampled while a workload runs, for the paged cache the engine really holds
// and, at the same instants and for the same live sequences, for a contiguous reservation.
//
//   paged:       sequence i holds ⌈tᵢ / B⌉ blocks of B slots; unused = blocks·B − tᵢ (< B,
//                only in its last block; a prefix block shared by several is full)
//   contiguous:  sequence i reserves rᵢ slots at admission, rᵢ = promptᵢ + max_tokensᵢ
//                (what it may grow to) or the context length (static-shape engines);
//                unused = rᵢ − tᵢ
//
// tᵢ = positions whose keys and values the sequence holds now. Each sample is weighted by how
// long it held (the engine step it preceded), and the percentages are ratios of the weighted
// sums: slot-seconds unused over slot-seconds reserved.

/** One live sequence holding KV positions, as the engine reports it. */
export interface KvSequenceSample {
  /** Positions held (tᵢ). */
  readonly numTokens: number;
  /** Slots its blocks give it (blocks · blockSize). */
  readonly reservedSlots: number;
  readonly promptTokens: number;
  readonly maxTokens: number;
}

export interface KvWaste {
  readonly samples: number;
  /** Mean live sequences holding KV over the samples. */
  readonly meanSequences: number;
  readonly pagedPct: number;
  readonly contiguousMaxTokensPct: number;
  readonly contiguousContextPct: number;
  /** Worst single sample of the paged cache (%), among samples with a sequence. */
  readonly pagedWorstPct: number;
}

export class KvWasteMeter {
  private samples = 0;
  private weight = 0;
  private sequences = 0;
  private held = 0;
  private paged = 0;
  private maxTokensReserved = 0;
  private contextReserved = 0;
  private worst = 0;

  constructor(private readonly contextLength: number) {}

  /** Adds one sample held for `weight` (its duration; no-op when nothing holds KV). */
  add(live: readonly KvSequenceSample[], weight: number): void {
    if (live.length === 0 || !(weight > 0)) return;
    let held = 0;
    let paged = 0;
    let maxTokens = 0;
    for (const s of live) {
      held += s.numTokens;
      paged += s.reservedSlots;
      maxTokens += Math.min(this.contextLength, s.promptTokens + s.maxTokens);
    }
    this.samples += 1;
    this.weight += weight;
    this.sequences += live.length * weight;
    this.held += held * weight;
    this.paged += paged * weight;
    this.maxTokensReserved += maxTokens * weight;
    this.contextReserved += live.length * this.contextLength * weight;
    if (paged > 0) this.worst = Math.max(this.worst, (100 * (paged - held)) / paged);
  }

  result(): KvWaste {
    const pct = (reserved: number) =>
      reserved === 0 ? Number.NaN : (100 * (reserved - this.held)) / reserved;
    return {
      samples: this.samples,
      meanSequences: this.weight === 0 ? 0 : this.sequences / this.weight,
      pagedPct: pct(this.paged),
      contiguousMaxTokensPct: pct(this.maxTokensReserved),
      contiguousContextPct: pct(this.contextReserved),
      pagedWorstPct: this.worst,
    };
  }
}
