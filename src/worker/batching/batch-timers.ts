// The batcher's real clock and scheduler (tests use fake ones). Node's timers have a
// millisecond grain, so a delay is rounded up: a batch never leaves before its delay.

import type { BatcherClock, BatcherScheduler } from './dynamic-batcher.ts';

export const monotonicClock: BatcherClock = {
  nowMicros: () => performance.now() * 1000,
  cpuMicros: () => {
    const usage = process.cpuUsage();
    return usage.user + usage.system;
  },
};

export const timerScheduler: BatcherScheduler = {
  schedule(delayMicros, run) {
    const timer = setTimeout(run, Math.ceil(delayMicros / 1000));
    return { cancel: () => clearTimeout(timer) };
  },
  // After the current callback and its microtasks: the channel's frames from one read (and
  // whatever else this turn enqueues) then go out as one batch.
  soon(run) {
    process.nextTick(run);
  },
};
