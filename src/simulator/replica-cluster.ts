// The queueing model of one endpoint's replicas (issue 14 simulator), driven by simulate.ts.
//
//   arrival ─▶ gateway ─┬─ a ready replica exists ─▶ least outstanding ready replica
//                       │                             ├─ a free slot: served at once
//                       │                             └─ else its FIFO queue
//                       └─ none ready ─▶ held (the activator's FIFO), released in order to
//                                        routing when a replica becomes ready; beyond its
//                                        limit, or held past its timeout, a request fails
//
// A replica is 'starting' for its instance type's start-up time, then 'ready'; a scale-down
// removes starting replicas first (newest first: they never served), then drains the ready
// ones with the fewest outstanding requests (no new requests; gone when the last answers).
// It keeps the integrals the autoscaler's samples and the report need: in-flight requests
// (held included, as the gateways measure concurrency), busy slots and replicas, over time.

import type { Random } from '../core/random.ts';
import { EventHeap, type HeapEvent } from './event-heap.ts';
import type { ServiceTimeSampler } from './service-time.ts';

export interface SimRequest {
  readonly arrivalMs: number;
  readonly serviceMs: number;
}

export type ReplicaState = 'starting' | 'ready' | 'draining' | 'gone';

export interface SimReplica {
  readonly id: number;
  state: ReplicaState;
  /** Requests in service (<= slots). */
  busy: number;
  /** FIFO of waiting requests; [queueHead, length) are waiting. */
  readonly queue: SimRequest[];
  queueHead: number;
}

export type ClusterEvent =
  | { readonly atMs: number; seq: number; readonly kind: 'ready'; readonly replica: SimReplica }
  | {
      readonly atMs: number;
      seq: number;
      readonly kind: 'complete';
      readonly replica: SimReplica;
      readonly request: SimRequest;
    };

/** What happens to each answered request: the report records it. */
export type AnswerSink = (request: SimRequest, startedMs: number, answeredMs: number) => void;

/** The activator's bounds on held requests (Infinity: unbounded). */
export interface HeldBounds {
  /** Most requests held at once; one more fails at once (KILN_ACTIVATOR_FULL). */
  readonly limit: number;
  /** A request held this long fails (KILN_COLD_START_TIMEOUT). */
  readonly timeoutMs: number;
}

export class ReplicaCluster {
  readonly events = new EventHeap<ClusterEvent & HeapEvent>();
  readonly #slots: number;
  readonly #startupMs: number;
  readonly #onAnswer: AnswerSink;
  readonly #onFail: (request: SimRequest, failedMs: number) => void;
  readonly #heldBounds: HeldBounds;
  readonly #replicas: SimReplica[] = [];
  readonly #held: SimRequest[] = [];
  #heldHead = 0;
  #nextId = 0;
  #nowMs: number;
  readonly #integralsUntilMs: number;

  // Counts now, and their integrals (count × ms) since the last takeIntegrals().
  #inFlight = 0;
  #busySlots = 0;
  #replicaCount = 0;
  #readyCount = 0;
  #startingCount = 0;
  #inFlightArea = 0;
  /** Requests answered since the last takeIntegrals(). */
  #completed = 0;
  #busyArea = 0;
  #replicaArea = 0;
  #readyArea = 0;

  constructor(options: {
    readonly slotsPerReplica: number;
    readonly startupMs: number;
    readonly nowMs: number;
    readonly integralsUntilMs: number;
    readonly initialReplicas: number;
    readonly onAnswer: AnswerSink;
    readonly onFail?: (request: SimRequest, failedMs: number) => void;
    readonly heldBounds?: HeldBounds;
  }) {
    this.#slots = options.slotsPerReplica;
    this.#startupMs = options.startupMs;
    this.#nowMs = options.nowMs;
    this.#integralsUntilMs = options.integralsUntilMs;
    this.#onAnswer = options.onAnswer;
    this.#onFail = options.onFail ?? (() => undefined);
    this.#heldBounds = options.heldBounds ?? { limit: Infinity, timeoutMs: Infinity };
    // The initial replicas were running before the trace began: ready at once.
    for (let i = 0; i < options.initialReplicas; i++) {
      this.#replicas.push(this.#newReplica('ready'));
      this.#replicaCount++;
      this.#readyCount++;
    }
  }

  get readyReplicas(): number {
    return this.#readyCount;
  }
  get startingReplicas(): number {
    return this.#startingCount;
  }
  /** Starting + ready (what the scale count asks for); draining ones are on their way out. */
  get activeReplicas(): number {
    return this.#startingCount + this.#readyCount;
  }
  /** Every replica that costs money now: starting, ready and draining. */
  get billedReplicas(): number {
    return this.#replicaCount;
  }
  get held(): number {
    return this.#held.length - this.#heldHead;
  }
  get inFlight(): number {
    return this.#inFlight;
  }
  /** Requests waiting in replicas' queues (not in service, not held). */
  get queueDepth(): number {
    let waiting = 0;
    for (const replica of this.#replicas) waiting += replica.queue.length - replica.queueHead;
    return waiting;
  }

  /**
   * Moves the clock to nowMs (>= the last), adding to the integrals up to `integralsUntilMs`
   * (the trace's end: what happens after it, answering the last requests, is not billed).
   */
  advance(nowMs: number): void {
    const from = Math.min(this.#nowMs, this.#integralsUntilMs);
    const dt = Math.min(nowMs, this.#integralsUntilMs) - from;
    if (nowMs > this.#nowMs) this.#nowMs = nowMs;
    if (dt <= 0) return;
    this.#inFlightArea += this.#inFlight * dt;
    this.#busyArea += this.#busySlots * dt;
    this.#replicaArea += this.#replicaCount * dt;
    this.#readyArea += this.#readyCount * dt;
  }

  /**
   * The integrals since the last call (count × ms), and the requests answered since then,
   * reset to zero.
   */
  takeIntegrals(): {
    inFlight: number;
    busySlots: number;
    replicas: number;
    ready: number;
    completed: number;
  } {
    const taken = {
      inFlight: this.#inFlightArea,
      busySlots: this.#busyArea,
      replicas: this.#replicaArea,
      ready: this.#readyArea,
      completed: this.#completed,
    };
    this.#completed = 0;
    this.#inFlightArea = 0;
    this.#busyArea = 0;
    this.#replicaArea = 0;
    this.#readyArea = 0;
    return taken;
  }

  arrive(request: SimRequest): void {
    this.#inFlight++;
    if (this.#readyCount > 0) this.#route(request);
    else if (this.held >= this.#heldBounds.limit) this.#fail(request, this.#nowMs);
    else this.#held.push(request);
  }

  /** Fails the held requests whose timeout has passed by now (the oldest are first). */
  expireHeld(): void {
    const timeoutMs = this.#heldBounds.timeoutMs;
    while (this.#heldHead < this.#held.length) {
      const request = this.#held[this.#heldHead];
      if (request === undefined || request.arrivalMs + timeoutMs > this.#nowMs) break;
      this.#heldHead++;
      this.#fail(request, request.arrivalMs + timeoutMs);
    }
    this.#compactHeld();
  }

  #fail(request: SimRequest, failedMs: number): void {
    this.#inFlight--;
    this.#onFail(request, failedMs);
  }

  /** Starts or removes replicas so that activeReplicas === count. */
  scaleTo(count: number): void {
    while (this.activeReplicas < count) this.#start();
    while (this.activeReplicas > count) this.#removeOne();
  }

  /** Runs one due event (its time is the clock's: call advance first). */
  handle(event: ClusterEvent): void {
    const replica = event.replica;
    if (event.kind === 'ready') {
      if (replica.state !== 'starting') return; // removed while starting
      replica.state = 'ready';
      this.#startingCount--;
      this.#readyCount++;
      this.#releaseHeld();
      return;
    }
    this.#busySlots--;
    replica.busy--;
    this.#inFlight--;
    this.#completed++;
    this.#onAnswer(event.request, event.atMs - event.request.serviceMs, event.atMs);
    const next = replica.queue[replica.queueHead];
    if (next !== undefined) {
      replica.queueHead++;
      if (replica.queueHead > 1024 && replica.queueHead * 2 > replica.queue.length) {
        replica.queue.splice(0, replica.queueHead);
        replica.queueHead = 0;
      }
      this.#serve(replica, next);
    }
    if (replica.state === 'draining' && outstanding(replica) === 0) this.#remove(replica);
  }

  #newReplica(state: ReplicaState): SimReplica {
    return { id: this.#nextId++, state, busy: 0, queue: [], queueHead: 0 };
  }

  #start(): void {
    const replica = this.#newReplica('starting');
    this.#replicas.push(replica);
    this.#replicaCount++;
    this.#startingCount++;
    if (this.#startupMs <= 0) {
      this.handle({ atMs: this.#nowMs, seq: 0, kind: 'ready', replica });
      return;
    }
    this.events.push({ atMs: this.#nowMs + this.#startupMs, seq: 0, kind: 'ready', replica });
  }

  #removeOne(): void {
    // Newest starting replica first: it has served nothing.
    for (let i = this.#replicas.length - 1; i >= 0; i--) {
      const replica = this.#replicas[i];
      if (replica?.state === 'starting') {
        this.#startingCount--;
        this.#remove(replica);
        return;
      }
    }
    let victim: SimReplica | undefined;
    for (const replica of this.#replicas) {
      if (replica.state !== 'ready') continue;
      if (victim === undefined || outstanding(replica) < outstanding(victim)) victim = replica;
    }
    if (victim === undefined) return;
    this.#readyCount--;
    if (outstanding(victim) === 0) this.#remove(victim);
    else victim.state = 'draining';
  }

  #remove(replica: SimReplica): void {
    replica.state = 'gone';
    this.#replicaCount--;
    const at = this.#replicas.indexOf(replica);
    if (at >= 0) this.#replicas.splice(at, 1);
  }

  #releaseHeld(): void {
    this.expireHeld();
    while (this.#heldHead < this.#held.length && this.#readyCount > 0) {
      const request = this.#held[this.#heldHead++];
      if (request !== undefined) this.#route(request);
    }
    this.#compactHeld();
  }

  #compactHeld(): void {
    if (this.#heldHead === this.#held.length) {
      this.#held.length = 0;
      this.#heldHead = 0;
    }
  }

  /** Least outstanding ready replica; ties go to the oldest, so routing is deterministic. */
  #route(request: SimRequest): void {
    let best: SimReplica | undefined;
    let bestOutstanding = Infinity;
    for (const replica of this.#replicas) {
      if (replica.state !== 'ready') continue;
      const load = outstanding(replica);
      if (load < bestOutstanding) {
        best = replica;
        bestOutstanding = load;
      }
    }
    if (best === undefined) {
      this.#held.push(request);
      return;
    }
    if (best.busy < this.#slots) this.#serve(best, request);
    else best.queue.push(request);
  }

  #serve(replica: SimReplica, request: SimRequest): void {
    replica.busy++;
    this.#busySlots++;
    this.events.push({
      atMs: this.#nowMs + request.serviceMs,
      seq: 0,
      kind: 'complete',
      replica,
      request,
    });
  }
}

function outstanding(replica: SimReplica): number {
  return replica.busy + replica.queue.length - replica.queueHead;
}

/** Draws requests' service times from `sampler` with `random` (one stream, arrival order). */
export function requestAt(
  arrivalMs: number,
  sampler: ServiceTimeSampler,
  random: Random,
): SimRequest {
  return { arrivalMs, serviceMs: sampler.draw(random) };
}
