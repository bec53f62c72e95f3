// The dynamic batcher's queues (dynamic-batcher.ts): one per shape key, high and normal
// priority in arrival order, and the entries in them. Pure data and the two reads the batcher
// makes of a queue: its state for the batch policy, and the batch at its front.

import type { BatchRequest, Settled } from './batcher-types.ts';
import type { ListNode, RequestList } from './request-list.ts';

export interface Entry<T, R> extends ListNode<Entry<T, R>> {
  readonly request: BatchRequest<T>;
  readonly arrivalMicros: number;
  readonly queue: ShapeQueue<T, R>;
  settle: ((outcome: Settled<R>) => void) | null;
  unlisten: (() => void) | null;
}

export interface ShapeQueue<T, R> {
  readonly key: string;
  readonly high: RequestList<Entry<T, R>>;
  readonly normal: RequestList<Entry<T, R>>;
  rows: number;
  /** Queued requests marked `alone`. */
  aloneCount: number;
}

export function queueState<T, R>(
  queue: ShapeQueue<T, R>,
): { rows: number; oldestArrivalMicros: number; alone: boolean } {
  const high = queue.high.head?.arrivalMicros ?? Number.POSITIVE_INFINITY;
  const normal = queue.normal.head?.arrivalMicros ?? Number.POSITIVE_INFINITY;
  return {
    rows: queue.rows,
    oldestArrivalMicros: Math.min(high, normal),
    alone: queue.aloneCount > 0,
  };
}

/**
 * The requests at the front of a queue that run together: high priority first, then normal,
 * in arrival order, while they fit `limit` rows (0: one request, not gathering); a request
 * marked `alone` runs by itself. Stops at the first that does not fit, so the order holds.
 */
export function frontBatch<T, R>(
  queue: ShapeQueue<T, R>,
  limit: number,
): { batch: Entry<T, R>[]; rows: number } {
  const batch: Entry<T, R>[] = [];
  let rows = 0;
  for (const list of [queue.high, queue.normal]) {
    let entry = list.head;
    while (entry !== null) {
      if (
        batch.length > 0 &&
        (limit === 0 || rows + entry.request.rows > limit || entry.request.alone === true)
      )
        break;
      batch.push(entry);
      rows += entry.request.rows;
      if (entry.request.alone === true) break;
      entry = entry.next;
    }
    if (entry !== null) break; // something did not fit: keep the order, stop here
  }
  return { batch, rows };
}
