// What a row has cost lately, by the size of the execution it ran in: the adaptive batcher's
// measurements (adaptive-gathering.ts). Executions are filed by rows into power-of-two
// buckets, each holding two moving averages (EWMA), in µs per row:
//
//   bucket:   0     1     2      3      4       …  12
//   rows:     1     2     3–4    5–8    9–16    …  2049–4096 (and above)
//   execute   ──────────────────────────────────  the execution's cost (join, run, split) ÷ rows,
//                                                 in CPU time where the clock has it
//   wait      ──────────────────────────────────  the wait gathering added (the model idle,
//                                                 requests held for more) ÷ rows
//
// A bucket's figures go stale: an average older than `staleMicros` is ignored, so a load that
// changed (batches of 32 at noon, of 2 at night) is judged on what forms now.

export const bucketCount = 13;

/** The bucket of an execution of `rows` rows: ⌈log2 rows⌉, capped. */
export function rowBucket(rows: number): number {
  if (rows <= 1) return 0;
  return Math.min(bucketCount - 1, Math.ceil(Math.log2(rows)));
}

/** The most rows an execution filed in `bucket` holds (its label in metrics). */
export function bucketRows(bucket: number): number {
  return 2 ** bucket;
}

export interface RowCost {
  /** Execution cost per row, µs of CPU (or wall time without a CPU clock) (EWMA). */
  readonly executeMicrosPerRow: number;
  /** Wait added by gathering per row, µs (EWMA; 0 when nothing was held for more). */
  readonly waitMicrosPerRow: number;
  readonly samples: number;
  readonly updatedMicros: number;
}

export class RowCostBuckets {
  // Parallel arrays, one slot per bucket: allocated once.
  private readonly execute = new Float64Array(bucketCount);
  private readonly wait = new Float64Array(bucketCount);
  private readonly samples = new Uint32Array(bucketCount);
  private readonly updated = new Float64Array(bucketCount);

  /** `weight`: the EWMA's weight of a new sample (0–1]. */
  constructor(
    private readonly weight: number,
    private readonly staleMicros: number,
  ) {}

  record(rows: number, executeMicros: number, waitMicros: number, nowMicros: number): number {
    const bucket = rowBucket(rows);
    const perRow = Math.max(0, executeMicros) / Math.max(1, rows);
    const waitPerRow = Math.max(0, waitMicros) / Math.max(1, rows);
    // A stale average is restarted, not blended: it described another load.
    const fresh = this.samples[bucket]! > 0 && !this.isStale(bucket, nowMicros);
    this.execute[bucket] = fresh ? blend(this.execute[bucket]!, perRow, this.weight) : perRow;
    this.wait[bucket] = fresh ? blend(this.wait[bucket]!, waitPerRow, this.weight) : waitPerRow;
    this.samples[bucket] = fresh ? this.samples[bucket]! + 1 : 1;
    this.updated[bucket] = nowMicros;
    return bucket;
  }

  /** The bucket's figures, or null when it has none or they are stale. */
  cost(bucket: number, nowMicros: number): RowCost | null {
    if (this.samples[bucket] === 0 || this.isStale(bucket, nowMicros)) return null;
    return {
      executeMicrosPerRow: this.execute[bucket]!,
      waitMicrosPerRow: this.wait[bucket]!,
      samples: this.samples[bucket]!,
      updatedMicros: this.updated[bucket]!,
    };
  }

  private isStale(bucket: number, nowMicros: number): boolean {
    return nowMicros - this.updated[bucket]! > this.staleMicros;
  }
}

function blend(average: number, sample: number, weight: number): number {
  return average + weight * (sample - average);
}
