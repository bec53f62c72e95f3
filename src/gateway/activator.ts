// The activator (issue 14, scale-to-zero; Knative's activator in role): requests for an
// endpoint whose route has `activation` and no ready replica are held here instead of
// answered 503, while the endpoint wakes.
//
//   request, no ready replica ─▶ hold: FIFO per endpoint, at most queueLimit (else
//       │                        KILN_ACTIVATOR_FULL), each until its deadline (timeoutMs,
//       │                        then KILN_COLD_START_TIMEOUT)
//       ├─ the first hold of a cold start: POST /api/v1/endpoints/{e}/wake, once (a failed
//       │  call is tried again with a doubling backoff while requests are held)
//       ├─ a client that goes away: `leave`, out of the queue
//       └─ sync(new route table): the endpoint has a ready replica ─▶ release, in arrival
//          order (each goes on to a replica from inside this call); the endpoint is gone, or
//          no longer scales to zero ─▶ each fails (404, 503) as it would have at the door
//
// A cold start begins with its first held request and is measured to the first answer of
// any request it released (kiln_gateway_cold_start_seconds), against the endpoint's
// budget (kiln_gateway_cold_start_over_budget_total). It ends when its queue is empty; the
// next held request begins another (and wakes the endpoint again: the wake is idempotent).
//
// The activator never reads the route table itself: the gateway tells it, after each
// snapshot, how each endpoint it holds for stands (`sync`). Time and timers are injected,
// so the unit tests drive it without waiting.

import type { ErrorCode, ErrorParams } from '../core/errors.ts';
import type { GatewayLog } from './gateway-log.ts';
import type { ActivationRoute } from './routing-snapshot.ts';

/** A request the activator holds: the exchange (upstream-exchange.ts) in the gateway. */
export interface HeldRequest {
  /** The endpoint has a ready replica: go on now (the activator has let go of it). */
  release(coldStart: ColdStart): void;
  /** Fail with this error now (the activator has let go of it). */
  expire(code: ErrorCode, params: ErrorParams): void;
}

/** What a wake call came to. Not retryable: the control plane refused it (e.g. 404, 403). */
export type WakeResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly retryable: boolean; readonly reason: string };

/**
 * How an endpoint stands in the latest route table: a ready replica (release), still none
 * (hold on), gone from the table, or none and no `activation` any more.
 */
export type EndpointReadiness = 'ready' | 'waiting' | 'gone' | 'unactivated';

export interface ActivatorMetrics {
  /** A cold start measured: first hold → first answer, and whether over the budget. */
  coldStart(endpoint: string, seconds: number, overBudget: boolean): void;
  /** A cold start that ended with no answer at all, past its budget. */
  coldStartOverBudget(endpoint: string): void;
  wakeCall(outcome: 'ok' | 'failed'): void;
}

export interface Timers {
  set(callback: () => void, delayMs: number): unknown;
  clear(handle: unknown): void;
}

export interface ActivatorOptions {
  readonly wake: (endpoint: string) => Promise<WakeResult>;
  readonly metrics: ActivatorMetrics;
  readonly log: GatewayLog;
  /** Monotonic ms. Default performance.now. */
  readonly now: () => number;
  readonly timers?: Timers;
  /** Backoff between failed wake calls: first and largest, ms. Defaults 250 / 5 000. */
  readonly wakeMinBackoffMs?: number;
  readonly wakeMaxBackoffMs?: number;
}

const realTimers: Timers = {
  set(callback, delayMs) {
    const timer = setTimeout(callback, delayMs);
    timer.unref();
    return timer;
  },
  clear(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

/** One cold start of one endpoint: measured once, by the first answer of what it released. */
export class ColdStart {
  private measured = false;

  constructor(
    readonly endpoint: string,
    readonly startedAtMs: number,
    readonly budgetMs: number,
    private readonly now: () => number,
    private readonly metrics: ActivatorMetrics,
  ) {}

  /** A released request was answered with `status` (499: the client left; 5xx: no answer). */
  answered(status: number): void {
    if (this.measured || status >= 500 || status === 499) return;
    this.measured = true;
    const elapsedMs = this.now() - this.startedAtMs;
    this.metrics.coldStart(this.endpoint, elapsedMs / 1000, elapsedMs > this.budgetMs);
  }

  /** The cold start ended with nothing released (every request timed out or left). */
  endedUnanswered(): void {
    if (this.measured) return;
    this.measured = true;
    if (this.now() - this.startedAtMs > this.budgetMs) {
      this.metrics.coldStartOverBudget(this.endpoint);
    }
  }
}

interface Held {
  readonly request: HeldRequest;
  readonly deadlineMs: number;
  readonly timeoutMs: number;
}

/** The requests held for one endpoint during one cold start, and its wake call. */
class EndpointHold {
  readonly queue: Held[] = [];
  wake: 'calling' | 'backoff' | 'done' | 'refused' = 'calling';
  wakeBackoffMs: number;
  wakeTimer: unknown = null;
  expiryTimer: unknown = null;
  /** When `expiryTimer` fires (Infinity: not armed). */
  expiryAtMs = Infinity;

  constructor(
    readonly endpoint: string,
    readonly coldStart: ColdStart,
    minBackoffMs: number,
  ) {
    this.wakeBackoffMs = minBackoffMs;
  }
}

export type HoldOutcome = { readonly ok: true } | { readonly ok: false; readonly held: number };

export class Activator {
  private readonly holds = new Map<string, EndpointHold>();
  private readonly heldIn = new Map<HeldRequest, EndpointHold>();
  private readonly timers: Timers;
  private readonly minBackoffMs: number;
  private readonly maxBackoffMs: number;

  constructor(private readonly options: ActivatorOptions) {
    this.timers = options.timers ?? realTimers;
    this.minBackoffMs = options.wakeMinBackoffMs ?? 250;
    this.maxBackoffMs = options.wakeMaxBackoffMs ?? 5_000;
  }

  /** Requests held for `endpoint` now. */
  held(endpoint: string): number {
    return this.holds.get(endpoint)?.queue.length ?? 0;
  }

  /** Requests held now, by endpoint (endpoints holding none are absent). */
  allHeld(): ReadonlyMap<string, number> {
    const counts = new Map<string, number>();
    for (const [endpoint, hold] of this.holds) counts.set(endpoint, hold.queue.length);
    return counts;
  }

  /**
   * Holds `request` until `endpoint` has a ready replica (its first hold of a cold start
   * wakes it); `{ok: false}` when `activation.queueLimit` requests are held already.
   */
  hold(endpoint: string, activation: ActivationRoute, request: HeldRequest): HoldOutcome {
    let hold = this.holds.get(endpoint);
    if (hold !== undefined && hold.queue.length >= activation.queueLimit) {
      return { ok: false, held: hold.queue.length };
    }
    const nowMs = this.options.now();
    if (hold === undefined) {
      const coldStart = new ColdStart(
        endpoint,
        nowMs,
        activation.coldStartBudgetMs,
        this.options.now,
        this.options.metrics,
      );
      hold = new EndpointHold(endpoint, coldStart, this.minBackoffMs);
      this.holds.set(endpoint, hold);
      this.callWake(hold);
    }
    const deadlineMs = nowMs + activation.timeoutMs;
    hold.queue.push({ request, deadlineMs, timeoutMs: activation.timeoutMs });
    this.heldIn.set(request, hold);
    if (deadlineMs < hold.expiryAtMs) this.armExpiry(hold, deadlineMs, nowMs);
    return { ok: true };
  }

  /** A held request's client went away: out of the queue (a no-op if it is not held). */
  leave(request: HeldRequest): void {
    const hold = this.heldIn.get(request);
    if (hold === undefined) return;
    this.heldIn.delete(request);
    const at = hold.queue.findIndex((held) => held.request === request);
    if (at !== -1) hold.queue.splice(at, 1);
    if (hold.queue.length === 0) this.end(hold, false);
  }

  /** After a new route table: releases, fails or keeps each endpoint's held requests. */
  sync(readiness: (endpoint: string) => EndpointReadiness): void {
    for (const hold of [...this.holds.values()]) {
      const state = readiness(hold.endpoint);
      switch (state) {
        case 'waiting':
          break;
        case 'ready':
          this.release(hold);
          break;
        case 'gone':
          this.failAll(hold, 'KILN_ENDPOINT_NOT_FOUND', { endpoint: hold.endpoint });
          break;
        case 'unactivated':
          this.failAll(hold, 'KILN_NO_READY_REPLICA', {
            endpoint: hold.endpoint,
            reason: 'none is ready and it no longer scales from zero',
          });
          break;
        default: {
          const never: never = state;
          throw new Error(`unknown readiness ${String(never)}`);
        }
      }
    }
  }

  /** The gateway is stopping: every held request fails now (503, retryable elsewhere). */
  close(): void {
    for (const hold of [...this.holds.values()]) {
      this.failAll(hold, 'KILN_NO_READY_REPLICA', {
        endpoint: hold.endpoint,
        reason: 'the gateway is shutting down',
      });
    }
  }

  // --- inside ---------------------------------------------------------------------------

  private release(hold: EndpointHold): void {
    const queue = hold.queue.splice(0);
    this.end(hold, true);
    for (const held of queue) {
      this.heldIn.delete(held.request);
      try {
        held.request.release(hold.coldStart);
      } catch (error) {
        this.options.log.warn(
          { endpoint: hold.endpoint, error: (error as Error).message },
          'a released request failed to go on',
        );
      }
    }
  }

  private failAll(hold: EndpointHold, code: ErrorCode, params: ErrorParams): void {
    const queue = hold.queue.splice(0);
    this.end(hold, false);
    for (const held of queue) {
      this.heldIn.delete(held.request);
      held.request.expire(code, params);
    }
  }

  /** The cold start's queue is empty: its timers stop and the next hold begins another. */
  private end(hold: EndpointHold, released: boolean): void {
    if (this.holds.get(hold.endpoint) === hold) this.holds.delete(hold.endpoint);
    if (hold.expiryTimer !== null) this.timers.clear(hold.expiryTimer);
    if (hold.wakeTimer !== null) this.timers.clear(hold.wakeTimer);
    hold.expiryTimer = null;
    hold.wakeTimer = null;
    hold.expiryAtMs = Infinity;
    if (!released) hold.coldStart.endedUnanswered();
  }

  private armExpiry(hold: EndpointHold, atMs: number, nowMs: number): void {
    if (hold.expiryTimer !== null) this.timers.clear(hold.expiryTimer);
    hold.expiryAtMs = atMs;
    hold.expiryTimer = this.timers.set(() => this.expire(hold), Math.max(0, atMs - nowMs));
  }

  /** Fails the requests past their deadline (in arrival order) and re-arms for the next. */
  private expire(hold: EndpointHold): void {
    hold.expiryTimer = null;
    hold.expiryAtMs = Infinity;
    const nowMs = this.options.now();
    const due: Held[] = [];
    let next = Infinity;
    for (let i = 0; i < hold.queue.length;) {
      const held = hold.queue[i]!;
      if (held.deadlineMs <= nowMs) {
        due.push(held);
        hold.queue.splice(i, 1);
      } else {
        next = Math.min(next, held.deadlineMs);
        i++;
      }
    }
    if (hold.queue.length === 0) this.end(hold, false);
    else if (next !== Infinity) this.armExpiry(hold, next, nowMs);
    for (const held of due) {
      this.heldIn.delete(held.request);
      held.request.expire('KILN_COLD_START_TIMEOUT', {
        endpoint: hold.endpoint,
        timeoutMs: held.timeoutMs,
      });
    }
  }

  private callWake(hold: EndpointHold): void {
    hold.wake = 'calling';
    this.options.wake(hold.endpoint).then(
      (result) => this.woke(hold, result),
      (error: unknown) =>
        this.woke(hold, { ok: false, retryable: true, reason: (error as Error).message }),
    );
  }

  private woke(hold: EndpointHold, result: WakeResult): void {
    this.options.metrics.wakeCall(result.ok ? 'ok' : 'failed');
    if (result.ok) {
      hold.wake = 'done';
      return;
    }
    const current = this.holds.get(hold.endpoint) === hold && hold.queue.length > 0;
    if (!result.retryable) {
      hold.wake = 'refused';
      this.options.log.warn(
        { endpoint: hold.endpoint, reason: result.reason },
        'wake refused by the control plane; held requests wait for a replica or time out',
      );
      return;
    }
    if (!current) return; // the cold start is over: nothing to wake for
    if (hold.wakeBackoffMs === this.minBackoffMs) {
      this.options.log.warn(
        { endpoint: hold.endpoint, reason: result.reason, retryInMs: hold.wakeBackoffMs },
        'wake call failed; trying again while requests are held',
      );
    }
    hold.wake = 'backoff';
    const delayMs = hold.wakeBackoffMs;
    hold.wakeBackoffMs = Math.min(this.maxBackoffMs, hold.wakeBackoffMs * 2);
    hold.wakeTimer = this.timers.set(() => {
      hold.wakeTimer = null;
      if (this.holds.get(hold.endpoint) === hold && hold.queue.length > 0) this.callWake(hold);
    }, delayMs);
  }
}
