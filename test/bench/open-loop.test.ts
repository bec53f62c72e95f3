// The open-loop generator's timetable and latency accounting (bench/_open-loop.ts), driven by
// a fake clock: requests leave at their intended times whatever the server does, a late
// generator sends the missed ones at once and their latency counts from the intended time
// (no coordinated omission), failures and unanswered requests are counted, and a rate the
// run did not hold is reported.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  failedBreakdown,
  rateProblem,
  runOpenLoop,
  summarize,
  type OpenLoopClock,
  type OpenLoopResult,
} from '../../bench/_open-loop.ts';

/** A clock whose timers fire in time order when `run` drives it; nothing waits for real. */
class FakeClock implements OpenLoopClock {
  t = 0;
  private timers: { at: number; seq: number; resolve: () => void }[] = [];
  private seq = 0;
  /** Extra delay added to the generator's next sleep (a stalled event loop). */
  oversleepOnceAt: { from: number; byMs: number } | null = null;
  now(): number {
    return this.t;
  }
  sleep(ms: number): Promise<void> {
    let at = this.t + Math.max(0, ms);
    const stall = this.oversleepOnceAt;
    if (stall !== null && this.t >= stall.from) {
      at += stall.byMs;
      this.oversleepOnceAt = null;
    }
    return this.after(at);
  }
  /** A timer at an absolute time (what a fake server uses to answer). */
  after(at: number): Promise<void> {
    return new Promise((resolve) => this.timers.push({ at, seq: this.seq++, resolve }));
  }
  /** Fires timers in order until `done` settles. */
  async run<T>(done: Promise<T>): Promise<T> {
    let settled = false;
    void done.finally(() => (settled = true));
    for (;;) {
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      if (settled) return done;
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers.shift();
      if (next === undefined) throw new Error('nothing left to run and not done');
      this.t = Math.max(this.t, next.at);
      next.resolve();
    }
  }
}

/** A server answering each request `serviceMs(i)` after it was sent, with `status(i)`. */
function server(
  clock: FakeClock,
  serviceMs: (i: number) => number,
  status: (i: number) => number | 'reject' | 'never' = () => 200,
): { send: (i: number) => Promise<number>; sentAt: number[] } {
  const sentAt: number[] = [];
  const send = async (i: number): Promise<number> => {
    sentAt[i] = clock.now();
    const s = status(i);
    if (s === 'never') return new Promise<number>(() => undefined);
    await clock.after(clock.now() + serviceMs(i));
    if (s === 'reject') throw new Error('connection reset');
    return s;
  };
  return { send, sentAt };
}

void test('requests leave on the timetable and latency is the service time when on time', async () => {
  const clock = new FakeClock();
  const { send, sentAt } = server(clock, () => 2);
  const result = await clock.run(
    runOpenLoop({ ratePerS: 1000, durationMs: 100, send, clock, drainMs: 1000 }),
  );
  assert.equal(result.planned, 100);
  assert.equal(result.sent, 100);
  assert.deepEqual(
    sentAt,
    Array.from({ length: 100 }, (_, i) => i),
  );
  assert.equal(result.successes, 100);
  assert.equal(result.failed, 0);
  assert.deepEqual(result.latenciesMs, Array<number>(100).fill(2));
  assert.deepEqual(result.fromSendLatenciesMs, Array<number>(100).fill(2));
  assert.equal(result.maxSendLagMs, 0);
  assert.equal(result.sentRatePerS, 1000);
  // 100 answers, the last at 101 ms: over max(duration, last answer) = 0.101 s.
  assert.equal(result.successRatePerS, 100 / 0.101);
  assert.deepEqual(result.statuses, { '200': 100 });
});

void test('a slow server does not slow the sends: the queue shows in the latencies', async () => {
  const clock = new FakeClock();
  // Requests 10..19 take 50 ms (a stall); a closed loop would have sent fewer meanwhile.
  const { send, sentAt } = server(clock, (i) => (i >= 10 && i < 20 ? 50 : 1));
  const result = await clock.run(
    runOpenLoop({ ratePerS: 1000, durationMs: 50, send, clock, drainMs: 1000 }),
  );
  assert.equal(result.sent, 50);
  assert.deepEqual(
    sentAt,
    Array.from({ length: 50 }, (_, i) => i),
  );
  assert.equal(result.latenciesMs.filter((l) => l === 50).length, 10);
  assert.equal(result.latenciesMs.filter((l) => l === 1).length, 40);
});

void test('a late generator sends the missed requests at once; latency counts from the intended time', async () => {
  const clock = new FakeClock();
  // The generator's sleep after 20 ms oversleeps by 10 ms (a GC pause in the client).
  clock.oversleepOnceAt = { from: 20, byMs: 10 };
  const { send, sentAt } = server(clock, () => 1);
  const result = await clock.run(
    runOpenLoop({ ratePerS: 1000, durationMs: 40, send, clock, drainMs: 1000 }),
  );
  assert.equal(result.sent, 40);
  // Request 21 was due at 21 ms; the generator woke at 31 ms and sent 21..31 then.
  for (let i = 21; i <= 31; i++) assert.equal(sentAt[i], 31, `request ${i} sent at ${sentAt[i]}`);
  assert.equal(result.maxSendLagMs, 10);
  // Their latencies: from the intended time (21..31 ms) to the answer at 32 ms.
  const late = Array.from({ length: 11 }, (_, k) => 32 - (21 + k));
  const onTime = Array<number>(29).fill(1);
  assert.deepEqual(
    result.latenciesMs,
    [...late, ...onTime].sort((a, b) => a - b),
  );
  // From the actual send, every answer took 1 ms: what a coordinated-omission client reports.
  assert.deepEqual(result.fromSendLatenciesMs, Array<number>(40).fill(1));
  // It caught up: the rate over the send window still matches.
  assert.equal(result.sentRatePerS, 1000);
});

void test('non-2xx, transport errors and unanswered requests are failures, kept out of the latencies', async () => {
  const clock = new FakeClock();
  const { send } = server(
    clock,
    () => 3,
    (i) =>
      i % 10 === 0 ? 503 : i % 10 === 1 ? 'reject' : i === 7 ? 'never' : i % 10 === 2 ? 201 : 200,
  );
  const result: OpenLoopResult = await clock.run(
    runOpenLoop({ ratePerS: 100, durationMs: 1000, send, clock, drainMs: 500 }),
  );
  assert.equal(result.planned, 100);
  assert.equal(result.successes, 100 - 10 - 10 - 1);
  assert.equal(result.failed, 21);
  assert.equal(result.unanswered, 1);
  assert.equal(result.latenciesMs.length, 79);
  assert.deepEqual(result.statuses, { '200': 69, '201': 10, '503': 10, error: 10 });
  assert.ok(result.latenciesMs.every((l) => l === 3));
  assert.equal(failedBreakdown(summarize(result, 4)), '503 ×10, error ×10, unanswered ×1');
});

void test('a server answering below the rate is reported short; one that keeps up is not', async () => {
  const summaryOf = async (
    serviceMs: (i: number) => number,
  ): Promise<ReturnType<typeof summarize>> => {
    const clock = new FakeClock();
    const { send } = server(clock, serviceMs);
    return summarize(
      await clock.run(
        runOpenLoop({ ratePerS: 100, durationMs: 1000, send, clock, drainMs: 60_000 }),
      ),
      8,
    );
  };
  const fine = await summaryOf(() => 5);
  assert.equal(rateProblem('kiln', fine), null);
  assert.equal(fine.p50Ms, 5);
  assert.equal(fine.connections, 8);
  // Each request waits its turn behind the previous ones: 20 ms of service per 10 ms gap,
  // so the answers end near 2 s and the answered rate is half the target.
  const slow = await summaryOf((i) => 20 * (i + 1) - 10 * i);
  const problem = rateProblem('flask', slow);
  assert.ok(problem !== null && problem.startsWith('flask: achieved'), String(problem));
  assert.ok(slow.successRatePerS < 0.95 * 100);
  assert.equal(slow.sentRatePerS, 100);
});
