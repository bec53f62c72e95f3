// When a queue of same-shape requests becomes a batch, and how many rows that batch takes.
// Pure functions of the queue's state and the config, so the rule can be read in one place.
//
// Ready (the queue may be dispatched as soon as no batch is running), when any holds:
//   1. it holds at least maxBatchSize rows;
//   2. its oldest request has waited at least maxDelayMicros;
//   3. it holds a request that cannot share a batch (marked `alone`);
//   4. the batcher is draining (a stopping worker runs what it accepted, without waiting).
//
// Cut (how many rows the batch may take, at most):
//   rows ≥ maxBatchSize                      → maxBatchSize
//   some preferred size p ≤ rows < max       → the largest such p        (Triton's rule)
//   otherwise                                → all the rows queued
// Requests are taken whole, in order (high priority first, then normal, FIFO within each),
// until the next one would pass the cut; the first is always taken, so a request bigger
// than the cut (or than maxBatchSize) runs alone rather than waiting forever.
//
// Preferred sizes shape the cut, not the timing: unlike Triton, reaching a preferred size
// does not dispatch early; only a full batch, the delay or draining does. Rows left behind by
// a preferred cut are already past their delay, so they go out as the next batch.

import type { BatchingConfig } from '../../store/serving-records.ts';

export interface QueueState {
  /** Rows queued (sum of the requests' first dimensions). */
  readonly rows: number;
  /** When the oldest queued request arrived, in µs on the batcher's clock. */
  readonly oldestArrivalMicros: number;
  /** A request in the queue may not share its batch. */
  readonly alone: boolean;
}

export function isReady(
  queue: QueueState,
  config: BatchingConfig,
  nowMicros: number,
  draining: boolean,
): boolean {
  return (
    queue.rows >= config.maxBatchSize ||
    queue.alone ||
    draining ||
    nowMicros - queue.oldestArrivalMicros >= config.maxDelayMicros
  );
}

/** When a not-yet-ready queue becomes ready by delay, in µs on the batcher's clock. */
export function readyAtMicros(queue: QueueState, config: BatchingConfig): number {
  return queue.oldestArrivalMicros + config.maxDelayMicros;
}

/** The most rows the next batch of a ready queue may take. */
export function cutRows(rowsQueued: number, config: BatchingConfig): number {
  if (rowsQueued >= config.maxBatchSize) return config.maxBatchSize;
  let best = 0;
  for (const size of config.preferredBatchSizes ?? []) {
    if (size <= rowsQueued && size > best) best = size;
  }
  return best > 0 ? best : rowsQueued;
}
