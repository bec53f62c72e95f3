// Copies of primary requests for shadow versions (issue 13): sent after the primary's answer
// is written, compared with it, counted, and otherwise forgotten. Nothing here can reach a
// primary request: the copy carries its own buffers and figures, the primary has finished
// (slot freed, metrics recorded) before `offer` is called, and sending starts on a later
// turn of the event loop.
//
//   offer ──▶ [ bounded FIFO, `queueCapacity` copies ] ──▶ at most `concurrency` in flight
//     full, or the shadow has no ready replica: dropped (counted), never waits
//   in flight: POST to a shadow replica, `timeoutMs` for the whole exchange (headers and
//   body); ≥ 500, a connection error or the timeout: an error (counted)
//   200 with a primary 200: outputs compared (agreement, |diff|), latencies kept
//
// A copy is counted (offered, and dropped or sent and its outcome) in one step when its fate
// is known, so each report's window is consistent on its own (sent <= offered, compared <=
// sent): a copy still queued or in flight is in none yet.
//
// The queue is a ring buffer of fixed size, so a shadow that hangs costs at most
// `concurrency` sockets and `queueCapacity` queued bodies, and copies beyond are dropped.

import { Pool } from 'undici';
import { performance } from 'node:perf_hooks';
import { answerOutputs, compareOutputs, type AnswerOutput } from './answer-outputs.ts';
import type { GatewayMetrics } from './metrics.ts';
import { pickReplica } from './replica-picker.ts';
import { checkInferBody } from './request-check.ts';
import type { ShadowEntry } from './traffic-entry.ts';

/** One copy to send: everything it needs, taken from the primary when it finished. */
export interface ShadowCopy {
  readonly shadow: ShadowEntry;
  readonly endpoint: string;
  /** The worker path of the infer route (`/v2/models/{endpoint}/infer`). */
  readonly path: string;
  /** The v2 JSON body the primary was sent. */
  readonly body: Buffer;
  /** How the primary's version read requests: another shadow's schema checks it first. */
  readonly requestKey: string;
  readonly requestId: string;
  readonly primaryStatus: number;
  /** The primary's outputs (a 200's); null: none to compare with. */
  readonly primaryOutputs: readonly AnswerOutput[] | null;
  readonly primaryLatencyMs: number;
}

export interface ShadowSenderOptions {
  /** Copies waiting to be sent, at most; beyond: dropped. */
  readonly queueCapacity: number;
  /** Copies in flight at once, at most. */
  readonly concurrency: number;
  /** The longest a copy may take, send to the end of its answer, ms. */
  readonly timeoutMs: number;
  readonly metrics: GatewayMetrics;
}

/** Largest shadow answer read, bytes; a larger one is an error. */
const maxShadowAnswerBytes = 8 * 1024 * 1024;

export class ShadowSender {
  /** Ring buffer: `head` is the oldest copy, `size` copies from it (wrapping). */
  private readonly ring: (ShadowCopy | undefined)[];
  private head = 0;
  private size = 0;
  private inFlight = 0;
  private pumpScheduled = false;
  private closed = false;
  /** One pool per shadow origin, apart from the primary's pools (replica-set.ts). */
  private readonly pools = new Map<string, Pool>();
  private readonly idle = new Set<() => void>();

  constructor(private readonly options: ShadowSenderOptions) {
    this.ring = new Array<ShadowCopy | undefined>(Math.max(1, options.queueCapacity));
  }

  /** Queued copies (for tests and the metrics). */
  get queued(): number {
    return this.size;
  }

  /** Takes a copy, or drops it (counted) when the queue is full or nobody can answer it. */
  offer(copy: ShadowCopy): void {
    if (this.closed || copy.shadow.replicas.length === 0 || this.size >= this.ring.length) {
      const counts = copy.shadow.counts;
      counts.offered += 1;
      counts.dropped += 1;
      this.options.metrics.shadowCopy(copy.endpoint, 'dropped');
      return;
    }
    this.ring[(this.head + this.size) % this.ring.length] = copy;
    this.size += 1;
    this.schedulePump();
  }

  /** Stops: queued copies are let go, those in flight cut (a hung shadow holds nothing up). */
  async close(): Promise<void> {
    this.closed = true;
    while (this.size > 0) this.shift();
    const idle = this.inFlight > 0 ? new Promise<void>((resolve) => this.idle.add(resolve)) : null;
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((pool) => pool.destroy().catch(() => undefined)));
    await idle;
  }

  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    // Not in the primary's turn: its answer's write goes first.
    setImmediate(pump, this);
  }

  /** Starts queued copies while there is room in flight. */
  pump(): void {
    this.pumpScheduled = false;
    while (this.size > 0 && this.inFlight < this.options.concurrency) {
      const copy = this.shift()!;
      this.inFlight += 1;
      void this.send(copy).finally(() => {
        this.inFlight -= 1;
        if (this.size > 0) {
          this.schedulePump();
        } else if (this.inFlight === 0) {
          for (const resolve of this.idle) resolve();
          this.idle.clear();
        }
      });
    }
  }

  private shift(): ShadowCopy | undefined {
    const copy = this.ring[this.head];
    this.ring[this.head] = undefined;
    this.head = (this.head + 1) % this.ring.length;
    this.size -= 1;
    return copy;
  }

  private async send(copy: ShadowCopy): Promise<void> {
    const { shadow, endpoint } = copy;
    const counts = shadow.counts;
    const metrics = this.options.metrics;
    if (shadow.check !== null && shadow.requestKey !== copy.requestKey) {
      // The shadow reads requests otherwise (another schema): what it would refuse is an error.
      if (checkInferBody(copy.body, shadow.check) !== null) {
        counts.offered += 1;
        counts.errors += 1;
        metrics.shadowCopy(endpoint, 'error');
        return;
      }
    }
    const replica = pickReplica(shadow.replicas, shadow.cursor++, performance.now(), null);
    if (replica === null) {
      counts.offered += 1;
      counts.dropped += 1;
      metrics.shadowCopy(endpoint, 'dropped');
      return;
    }
    metrics.shadowCopy(endpoint, 'sent');
    const startMs = performance.now();
    const timeoutMs = this.options.timeoutMs;
    let status: number;
    let answer: Buffer;
    try {
      const response = await this.poolFor(replica.url).request({
        path: replica.pathPrefix + copy.path,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-request-id': copy.requestId,
          'kiln-shadow': '1',
        },
        body: copy.body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = response.statusCode;
      answer = await readLimited(response.body, maxShadowAnswerBytes);
    } catch {
      // Counted, not logged: the log is never written per request.
      counts.offered += 1;
      counts.sent += 1;
      counts.errors += 1;
      metrics.shadowCopy(endpoint, 'error');
      return;
    }
    const latencyMs = performance.now() - startMs;
    counts.offered += 1;
    counts.sent += 1;
    counts.latencyMs.add(latencyMs);
    counts.primaryLatencyMs.add(copy.primaryLatencyMs);
    if (status >= 500) {
      counts.errors += 1;
      metrics.shadowCopy(endpoint, 'error');
      return;
    }
    if (status !== 200 || copy.primaryStatus !== 200 || copy.primaryOutputs === null) return;
    const outputs = answerOutputs(answer);
    if (outputs === null) return;
    counts.compared += 1;
    if (compareOutputs(copy.primaryOutputs, outputs, counts.absDiff)) counts.agreed += 1;
  }

  private poolFor(url: string): Pool {
    const origin = new URL(url).origin;
    let pool = this.pools.get(origin);
    if (pool === undefined) {
      pool = new Pool(origin, { connections: this.options.concurrency, connectTimeout: 2_000 });
      this.pools.set(origin, pool);
    }
    return pool;
  }
}

function pump(sender: ShadowSender): void {
  sender.pump();
}

async function readLimited(body: AsyncIterable<Buffer>, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) throw new Error(`the shadow's answer is larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}
