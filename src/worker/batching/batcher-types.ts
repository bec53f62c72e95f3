// The dynamic batcher's interface (dynamic-batcher.ts): what a caller hands it (requests, an
// executor, a clock and a scheduler, hooks) and what it hands back (how each request settled).
// Types only; dynamic-batcher.ts re-exports them, so callers import from there.

import type { AdaptiveGathering } from './adaptive-gathering.ts';
import type { BatchingConfig } from '../../store/serving-records.ts';

export type Priority = 'high' | 'normal';

export interface BatcherClock {
  /** Microseconds on a monotonic clock. */
  nowMicros(): number;
  /**
   * CPU time this process has used, µs (user + system). Given, the adaptive batcher measures
   * a stretch of batches in CPU time — what the requests took of the machine, however busy it
   * is (a wall-clock figure also counts the time the process waited for a core). Absent
   * (tests' fake clocks): the batches' own times.
   */
  cpuMicros?(): number;
}

export interface TimerHandle {
  cancel(): void;
}

export interface BatcherScheduler {
  /** Calls `run` once, about `delayMicros` from now (never before). */
  schedule(delayMicros: number, run: () => void): TimerHandle;
  /**
   * Calls `run` once, after the code running now (and before any I/O). Given, an enqueue
   * does not dispatch at once: requests that arrive together (the frames of one read) then
   * form one batch instead of the first one running alone. Absent, enqueue dispatches
   * synchronously (tests with a fake scheduler see exactly that).
   */
  soon?: (run: () => void) => void;
}

export interface BatchRequest<T> {
  /** Requests are batched only with requests of the same key (see batch-tensors.ts). */
  readonly key: string;
  /** Rows this request brings (its first dimension). */
  readonly rows: number;
  readonly priority: Priority;
  /** Absolute, on the batcher's clock; null = no deadline. */
  readonly deadlineMicros: number | null;
  readonly payload: T;
  /** Cannot share a batch (e.g. inputs without a common first dimension): runs by itself. */
  readonly alone?: boolean;
  /** Fires when the client goes away; a queued request is then removed. */
  readonly signal?: CancelSignal;
}

/**
 * What the batcher needs of a cancellation signal: an AbortSignal has it, and so does the
 * worker's lighter `CancelFlag` (an AbortController costs ~6 µs a request on the hot path).
 */
export interface CancelSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * Runs one batch; resolves one result per payload, in order. `run` describes the batch; the
 * executor may note in it when its own work (the model run) began and ended.
 */
export type BatchExecutor<T, R> = (
  payloads: readonly T[],
  rows: number,
  run: BatchRun,
) => Promise<readonly R[]>;

/**
 * One execution of a batch, on the batcher's clock: what a request's trace shows of the batch
 * it ran in (kiln.batch and kiln.runtime spans). One object per batch, shared by its requests.
 */
export interface BatchRun {
  /** Requests in the batch, and their rows. */
  readonly requests: number;
  readonly rows: number;
  /** Handed to the executor, and its results back. */
  readonly startedMicros: number;
  endedMicros: number;
  /** The executor's own work, when it notes it (-1: not noted). */
  workStartedMicros: number;
  workEndedMicros: number;
}

export type Settled<R> =
  | {
      readonly kind: 'done';
      readonly value: R;
      readonly queuedMicros: number;
      readonly batch: BatchRun;
    }
  | { readonly kind: 'failed'; readonly error: unknown; readonly queuedMicros: number }
  | { readonly kind: 'expired'; readonly queuedMicros: number }
  | { readonly kind: 'cancelled' };

export type EnqueueResult<R> =
  | { readonly ok: true; readonly done: Promise<Settled<R>> }
  | { readonly ok: false; readonly reason: 'queue_full' };

export interface BatcherHooks {
  /** The number of queued (not running) requests changed. */
  onQueueDepth?(depth: number): void;
  /** A batch is about to run. */
  onBatch?(requests: number, rows: number): void;
}

export interface DynamicBatcherOptions<T, R> {
  readonly config: BatchingConfig;
  readonly executor: BatchExecutor<T, R>;
  readonly clock: BatcherClock;
  readonly scheduler: BatcherScheduler;
  readonly hooks?: BatcherHooks;
  /** Absent: the config's fixed rule, always. */
  readonly adaptive?: AdaptiveGathering;
}
