// A fake clock + scheduler for the batcher (microseconds), and an executor whose batches the
// test completes by hand: the batcher is driven step by step, with no real timers.

import type {
  BatcherClock,
  BatcherScheduler,
  TimerHandle,
} from '../../../src/worker/batching/dynamic-batcher.ts';

interface FakeTimer {
  readonly atMicros: number;
  readonly run: () => void;
  cancelled: boolean;
}

export class FakeTime implements BatcherClock, BatcherScheduler {
  private timers: FakeTimer[] = [];
  constructor(public micros = 0) {}

  nowMicros(): number {
    return this.micros;
  }

  schedule(delayMicros: number, run: () => void): TimerHandle {
    const timer: FakeTimer = { atMicros: this.micros + delayMicros, run, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => (timer.cancelled = true) };
  }

  /** Live timers (for tests that check the batcher keeps at most one). */
  get pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** Moves time forward to `micros`, firing due timers in order at their own times. */
  advanceTo(micros: number): void {
    for (;;) {
      this.timers = this.timers.filter((t) => !t.cancelled);
      let next: FakeTimer | undefined;
      for (const timer of this.timers) {
        if (timer.atMicros <= micros && (next === undefined || timer.atMicros < next.atMicros))
          next = timer;
      }
      if (next === undefined) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.micros = Math.max(this.micros, next.atMicros);
      next.run();
    }
    this.micros = Math.max(this.micros, micros);
  }
}

export interface RecordedBatch<T> {
  readonly payloads: readonly T[];
  readonly rows: number;
  readonly atMicros: number;
  finish(): void;
  fail(error: Error): void;
}

/** An executor that records each batch and answers (payload → payload) when told to. */
export class HeldExecutor<T> {
  readonly batches: RecordedBatch<T>[] = [];
  running = 0;
  maxRunning = 0;

  constructor(private readonly time: FakeTime) {}

  readonly run = (payloads: readonly T[], rows: number): Promise<readonly T[]> => {
    this.running += 1;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    return new Promise((resolve, reject) => {
      this.batches.push({
        payloads,
        rows,
        atMicros: this.time.micros,
        finish: () => {
          this.running -= 1;
          resolve(payloads);
        },
        fail: (error) => {
          this.running -= 1;
          reject(error);
        },
      });
    });
  };

  /** Payloads of every batch so far. */
  get formed(): T[][] {
    return this.batches.map((b) => [...b.payloads]);
  }

  last(): RecordedBatch<T> {
    const batch = this.batches.at(-1);
    if (batch === undefined) throw new Error('no batch yet');
    return batch;
  }
}

/** Lets promise callbacks (batch completions) run; not a sleep. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
