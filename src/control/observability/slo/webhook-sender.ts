// Delivers alert notifications to webhooks (an endpoint's `slo.webhooks`): POST JSON, each
// attempt bounded by a timeout, retried with doubling backoff, through a bounded queue.
// `send` never waits: the SLO evaluator (and so serving, which never waits on the evaluator)
// hands a notification over and moves on. A webhook that hangs costs one delivery slot for
// `attemptTimeoutMs` at most; one that fails is logged and counted
// (kiln_slo_webhook_deliveries_total{outcome}); a full queue drops the new notification,
// logged and counted, rather than grow.
//
//   send ─▶ queue (≤ queueLimit, retries waiting included) ─▶ ≤ concurrency attempts at once,
//                                                              ≤ perUrlConcurrency per URL
//              ▲                                                   │ timeout / 5xx / refused
//              └──────────── after backoff (1 s, 2 s, 4 s …) ◀─────┘ until maxAttempts

export type WebhookOutcome = 'sent' | 'failed' | 'dropped' | 'retried';

export interface WebhookSenderOptions {
  /** Notifications queued or waiting to retry, at most. Default 1000. */
  readonly queueLimit?: number;
  /** Attempts in flight at once. Default 4. */
  readonly concurrency?: number;
  /** Attempts in flight at once to one URL (one: in order, but for retries). Default 1. */
  readonly perUrlConcurrency?: number;
  /** One attempt's bound, connect to response headers. Default 5000. */
  readonly attemptTimeoutMs?: number;
  /** Attempts per notification, the first included. Default 4. */
  readonly maxAttempts?: number;
  /** Wait before the first retry; doubles each time, at most 30 s. Default 1000. */
  readonly backoffMs?: number;
  readonly log?: (line: string) => void;
  readonly onOutcome?: (outcome: WebhookOutcome) => void;
}

interface Delivery {
  readonly url: string;
  readonly body: string;
  attempts: number;
}

const maxBackoffMs = 30_000;

export class WebhookSender {
  private readonly queue: Delivery[] = [];
  private active = 0;
  private readonly activeByUrl = new Map<string, number>();
  /** Deliveries waiting out a backoff (they count against the queue limit). */
  private waiting = 0;
  private closed = false;
  private readonly stop = new AbortController();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly counts: Record<WebhookOutcome, number> = {
    sent: 0,
    failed: 0,
    dropped: 0,
    retried: 0,
  };

  constructor(private readonly options: WebhookSenderOptions = {}) {}

  /** Queues one POST of `payload` to `url`; false when dropped (queue full or closed). */
  send(url: string, payload: unknown): boolean {
    if (this.closed) return false;
    if (this.queue.length + this.waiting + this.active >= (this.options.queueLimit ?? 1000)) {
      this.outcome('dropped');
      this.options.log?.(`slo webhook ${url}: queue full, notification dropped`);
      return false;
    }
    this.queue.push({ url, body: JSON.stringify(payload), attempts: 0 });
    this.pump();
    return true;
  }

  /** Outcomes so far, and what is still queued, in flight or waiting to retry. */
  stats(): Readonly<Record<WebhookOutcome, number>> & { readonly pending: number } {
    return { ...this.counts, pending: this.queue.length + this.waiting + this.active };
  }

  /** Stops: attempts in flight are aborted, nothing queued is sent. */
  close(): void {
    this.closed = true;
    this.stop.abort();
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.queue.length = 0;
    this.waiting = 0;
  }

  private outcome(outcome: WebhookOutcome): void {
    this.counts[outcome] += 1;
    this.options.onOutcome?.(outcome);
  }

  /**
   * Starts queued deliveries while slots are free, oldest first, skipping a URL that has its
   * `perUrlConcurrency` in flight: a hanging webhook holds its own slots, not the others'.
   */
  private pump(): void {
    const perUrl = this.options.perUrlConcurrency ?? 1;
    while (!this.closed && this.active < (this.options.concurrency ?? 4)) {
      const index = this.queue.findIndex((d) => (this.activeByUrl.get(d.url) ?? 0) < perUrl);
      if (index < 0) return;
      const [delivery] = this.queue.splice(index, 1);
      if (delivery === undefined) return;
      this.active += 1;
      this.activeByUrl.set(delivery.url, (this.activeByUrl.get(delivery.url) ?? 0) + 1);
      void this.attempt(delivery).finally(() => {
        this.active -= 1;
        const left = (this.activeByUrl.get(delivery.url) ?? 1) - 1;
        if (left === 0) this.activeByUrl.delete(delivery.url);
        else this.activeByUrl.set(delivery.url, left);
        this.pump();
      });
    }
  }

  private async attempt(delivery: Delivery): Promise<void> {
    delivery.attempts += 1;
    const timeoutMs = this.options.attemptTimeoutMs ?? 5000;
    let problem: string;
    let retryable = true;
    try {
      const reply = await fetch(delivery.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: delivery.body,
        signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), this.stop.signal]),
        redirect: 'manual',
      });
      // The answer's body is not read: a webhook that streams one forever holds nothing.
      await reply.body?.cancel().catch(() => undefined);
      if (reply.ok) {
        this.outcome('sent');
        return;
      }
      problem = `HTTP ${reply.status}`;
      // A client error other than timeout / too many requests would repeat: not retried.
      retryable = reply.status >= 500 || reply.status === 408 || reply.status === 429;
    } catch (error) {
      if (this.closed) return;
      const name = error instanceof Error ? error.name : '';
      problem =
        name === 'TimeoutError'
          ? `no answer within ${timeoutMs} ms`
          : error instanceof Error
            ? error.cause instanceof Error
              ? error.cause.message
              : error.message
            : String(error);
    }
    if (this.closed) return;
    const maxAttempts = this.options.maxAttempts ?? 4;
    if (!retryable || delivery.attempts >= maxAttempts) {
      this.outcome('failed');
      this.options.log?.(
        `slo webhook ${delivery.url}: ${problem}; gave up after ${delivery.attempts} attempt(s)`,
      );
      return;
    }
    this.outcome('retried');
    const delayMs = Math.min(
      maxBackoffMs,
      (this.options.backoffMs ?? 1000) * 2 ** (delivery.attempts - 1),
    );
    this.waiting += 1;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.waiting -= 1;
      if (this.closed) return;
      this.queue.push(delivery);
      this.pump();
    }, delayMs);
    timer.unref();
    this.timers.add(timer);
  }
}
