// The activator on its own (activator.ts), with an injected clock, timers and wake call:
// bounded FIFO per endpoint, one wake per cold start (tried again with backoff when it
// fails), release in arrival order, per-request timeouts, clients that leave, endpoints
// that go away, and the cold-start measurement.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ErrorCode, ErrorParams } from '../../src/core/errors.ts';
import {
  Activator,
  type ActivatorMetrics,
  type ColdStart,
  type EndpointReadiness,
  type HeldRequest,
  type Timers,
  type WakeResult,
} from '../../src/gateway/activator.ts';
import type { ActivationRoute } from '../../src/gateway/routing-snapshot.ts';

const activation: ActivationRoute = { queueLimit: 3, timeoutMs: 10_000, coldStartBudgetMs: 2_000 };

/** Timers fired by hand: `advance(ms)` moves the clock and runs what is due, in order. */
class FakeTime implements Timers {
  nowMs = 0;
  private pending: Array<{ atMs: number; callback: () => void; id: number }> = [];
  private nextId = 1;

  set(callback: () => void, delayMs: number): unknown {
    const id = this.nextId++;
    this.pending.push({ atMs: this.nowMs + delayMs, callback, id });
    return id;
  }

  clear(handle: unknown): void {
    this.pending = this.pending.filter((timer) => timer.id !== handle);
  }

  get armed(): number {
    return this.pending.length;
  }

  advance(ms: number): void {
    const end = this.nowMs + ms;
    for (;;) {
      this.pending.sort((a, b) => a.atMs - b.atMs || a.id - b.id);
      const next = this.pending[0];
      if (next === undefined || next.atMs > end) break;
      this.pending.shift();
      this.nowMs = next.atMs;
      next.callback();
    }
    this.nowMs = end;
  }
}

class FakeRequest implements HeldRequest {
  outcome: { released: ColdStart } | { code: ErrorCode; params: ErrorParams } | null = null;

  constructor(
    readonly name: string,
    private readonly order: string[],
  ) {}

  release(coldStart: ColdStart): void {
    this.outcome = { released: coldStart };
    this.order.push(this.name);
  }

  expire(code: ErrorCode, params: ErrorParams): void {
    this.outcome = { code, params };
  }
}

class RecordedMetrics implements ActivatorMetrics {
  coldStarts: Array<{ endpoint: string; seconds: number; overBudget: boolean }> = [];
  unanswered: string[] = [];
  wakes: string[] = [];
  coldStart(endpoint: string, seconds: number, overBudget: boolean): void {
    this.coldStarts.push({ endpoint, seconds, overBudget });
  }
  coldStartOverBudget(endpoint: string): void {
    this.unanswered.push(endpoint);
  }
  wakeCall(outcome: 'ok' | 'failed'): void {
    this.wakes.push(outcome);
  }
}

const silentLog = { info: () => undefined, warn: () => undefined };

function setup(wakeResults: WakeResult[] = []): {
  activator: Activator;
  time: FakeTime;
  metrics: RecordedMetrics;
  wakeCalls: string[];
  order: string[];
  settle: () => Promise<void>;
} {
  const time = new FakeTime();
  const metrics = new RecordedMetrics();
  const wakeCalls: string[] = [];
  const activator = new Activator({
    wake: (endpoint) => {
      wakeCalls.push(endpoint);
      return Promise.resolve(wakeResults.shift() ?? { ok: true });
    },
    metrics,
    log: silentLog,
    now: () => time.nowMs,
    timers: time,
    wakeMinBackoffMs: 100,
    wakeMaxBackoffMs: 400,
  });
  // Wake results arrive on promise ticks.
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { activator, time, metrics, wakeCalls, order: [], settle };
}

test('holds up to queueLimit per endpoint, wakes once per cold start, releases in arrival order', async () => {
  const { activator, time, metrics, wakeCalls, order, settle } = setup();
  const requests = ['r1', 'r2', 'r3'].map((name) => new FakeRequest(name, order));
  for (const request of requests)
    assert.deepEqual(activator.hold('fraud', activation, request), { ok: true });
  const other = new FakeRequest('o1', order);
  assert.deepEqual(activator.hold('other', activation, other), { ok: true });
  assert.deepEqual(activator.hold('fraud', activation, new FakeRequest('r4', order)), {
    ok: false,
    held: 3,
  });
  await settle();
  assert.deepEqual(wakeCalls, ['fraud', 'other'], 'one wake per endpoint, not per request');
  assert.equal(activator.held('fraud'), 3);
  assert.deepEqual(
    [...activator.allHeld()],
    [
      ['fraud', 3],
      ['other', 1],
    ],
  );

  // A snapshot where fraud has a ready replica and other has not.
  time.advance(1_500);
  const readiness = new Map<string, EndpointReadiness>([
    ['fraud', 'ready'],
    ['other', 'waiting'],
  ]);
  activator.sync((endpoint) => readiness.get(endpoint) ?? 'gone');
  assert.deepEqual(order, ['r1', 'r2', 'r3']);
  assert.equal(activator.held('fraud'), 0);
  assert.equal(activator.held('other'), 1);
  assert.equal(other.outcome, null);

  // The first answer measures the cold start (from the first hold), once.
  const released = requests[1]!.outcome;
  assert.ok(released !== null && 'released' in released);
  time.advance(200);
  released.released.answered(200);
  (requests[0]!.outcome as { released: ColdStart }).released.answered(200);
  assert.deepEqual(metrics.coldStarts, [{ endpoint: 'fraud', seconds: 1.7, overBudget: false }]);

  // A new cold start wakes again.
  activator.hold('fraud', activation, new FakeRequest('r5', order));
  await settle();
  assert.deepEqual(wakeCalls, ['fraud', 'other', 'fraud']);
});

test('each held request fails after timeoutMs with KILN_COLD_START_TIMEOUT; the rest wait on', async () => {
  const { activator, time, metrics, settle } = setup();
  const order: string[] = [];
  const first = new FakeRequest('a', order);
  const second = new FakeRequest('b', order);
  activator.hold('fraud', activation, first);
  time.advance(4_000);
  activator.hold('fraud', activation, second);
  await settle();
  time.advance(5_999);
  assert.equal(first.outcome, null);
  time.advance(1);
  assert.deepEqual(first.outcome, {
    code: 'KILN_COLD_START_TIMEOUT',
    params: { endpoint: 'fraud', timeoutMs: 10_000 },
  });
  assert.equal(second.outcome, null);
  assert.equal(activator.held('fraud'), 1);
  time.advance(4_000);
  assert.equal((second.outcome as { code: ErrorCode } | null)?.code, 'KILN_COLD_START_TIMEOUT');
  assert.equal(activator.held('fraud'), 0);
  assert.equal(time.armed, 0, 'no timer left once nothing is held');
  assert.deepEqual(metrics.unanswered, ['fraud'], 'ended unanswered past its budget');
});

test('a client that leaves is out of the queue; the last one leaving ends the cold start', async () => {
  const { activator, time, wakeCalls, order, settle } = setup();
  const a = new FakeRequest('a', order);
  const b = new FakeRequest('b', order);
  activator.hold('fraud', activation, a);
  activator.hold('fraud', activation, b);
  activator.leave(a);
  activator.leave(a); // twice: no-op
  assert.equal(activator.held('fraud'), 1);
  activator.sync(() => 'ready');
  assert.deepEqual(order, ['b']);
  assert.equal(a.outcome, null, 'the one that left is never released');
  const c = new FakeRequest('c', order);
  activator.hold('fraud', activation, c);
  activator.leave(c);
  assert.equal(activator.held('fraud'), 0);
  assert.equal(time.armed, 0);
  await settle();
  assert.equal(wakeCalls.length, 2);
});

test('a failed wake is tried again with a doubling backoff while requests are held, not after', async () => {
  const failed: WakeResult = { ok: false, retryable: true, reason: 'connection refused' };
  const { activator, time, metrics, wakeCalls, order, settle } = setup([
    failed,
    failed,
    failed,
    failed,
  ]);
  activator.hold('fraud', activation, new FakeRequest('a', order));
  await settle();
  assert.equal(wakeCalls.length, 1);
  time.advance(99);
  await settle();
  assert.equal(wakeCalls.length, 1);
  time.advance(1); // 100 ms
  await settle();
  assert.equal(wakeCalls.length, 2);
  time.advance(200); // then 200 ms
  await settle();
  assert.equal(wakeCalls.length, 3);
  time.advance(400); // then the largest, 400 ms
  await settle();
  assert.equal(wakeCalls.length, 4);
  time.advance(400); // this one succeeds: no more calls
  await settle();
  assert.equal(wakeCalls.length, 5);
  time.advance(5_000);
  await settle();
  assert.equal(wakeCalls.length, 5);
  assert.deepEqual(metrics.wakes, ['failed', 'failed', 'failed', 'failed', 'ok']);

  // A refusal (not retryable) is not tried again; nor is a failure once nothing is held.
  const refused = setup([{ ok: false, retryable: false, reason: '404' }]);
  refused.activator.hold('gone', activation, new FakeRequest('x', []));
  await refused.settle();
  refused.time.advance(5_000);
  await refused.settle();
  assert.equal(refused.wakeCalls.length, 1);
  const left = setup([failed]);
  const x = new FakeRequest('x', []);
  left.activator.hold('fraud', activation, x);
  left.activator.leave(x);
  await left.settle();
  left.time.advance(5_000);
  await left.settle();
  assert.equal(left.wakeCalls.length, 1);
});

test('an endpoint gone from the table, or no longer scaling from zero, fails what it held', () => {
  const { activator, order } = setup();
  const gone = new FakeRequest('g', order);
  const plain = new FakeRequest('p', order);
  activator.hold('gone', activation, gone);
  activator.hold('plain', activation, plain);
  activator.sync((endpoint) => (endpoint === 'gone' ? 'gone' : 'unactivated'));
  assert.deepEqual(gone.outcome, { code: 'KILN_ENDPOINT_NOT_FOUND', params: { endpoint: 'gone' } });
  assert.equal((plain.outcome as { code: ErrorCode }).code, 'KILN_NO_READY_REPLICA');
  assert.equal(activator.held('gone') + activator.held('plain'), 0);
});

test('a cold start over its budget is counted; 5xx and 499 answers do not end it', () => {
  const { activator, time, metrics, order } = setup();
  const a = new FakeRequest('a', order);
  const b = new FakeRequest('b', order);
  activator.hold('fraud', activation, a);
  activator.hold('fraud', activation, b);
  time.advance(2_500);
  activator.sync(() => 'ready');
  const coldStart = (a.outcome as { released: ColdStart }).released;
  coldStart.answered(503);
  coldStart.answered(499);
  assert.deepEqual(metrics.coldStarts, []);
  coldStart.answered(400);
  assert.deepEqual(metrics.coldStarts, [{ endpoint: 'fraud', seconds: 2.5, overBudget: true }]);
});

test('close fails every held request at once', () => {
  const { activator, time, order } = setup();
  const a = new FakeRequest('a', order);
  activator.hold('fraud', activation, a);
  activator.close();
  assert.equal((a.outcome as { code: ErrorCode }).code, 'KILN_NO_READY_REPLICA');
  assert.equal(time.armed, 0);
});
