// Holds the current routing snapshot and lets gateways long-poll for a newer one. A new
// snapshot is published only when its content changed, so its version counts real changes.
//
// Drain acknowledgements are kept per gateway process (issue 16: `kiln up
// --gateway-processes N` runs N of them, each polling with its own `gateway` id): a replica
// taken out of the routing is stopped only once EVERY live gateway has polled with
// `after` >= the snapshot without it. A gateway is live while one of its polls is open or
// for `gatewayLivenessMs` after its last one began or ended, so a dead process (its poll's
// connection closes) drops out of the set and cannot hold drains for ever.

import type { RoutingSnapshot } from '../gateway/routing-snapshot.ts';
import { isoAt, type Clock } from '../core/clock.ts';

type SnapshotContent = Omit<RoutingSnapshot, 'version' | 'generatedAt'>;

/** A gateway process as its long-polls show it. */
interface GatewayPoller {
  /** The snapshot version its latest poll said it holds (0: none yet). */
  version: number;
  /** Polls that confirmed a version (the control plane's per-gateway ack count). */
  acks: number;
  /** When a poll of it last began or ended (the table's clock, ms). */
  lastSeenMs: number;
  /** Its polls open now. */
  polling: number;
}

export interface RoutingTableOptions {
  /** A gateway with no poll open and none for this long drops out of the ack set. Default 10 000. */
  readonly gatewayLivenessMs?: number;
}

/** How often a drain waiting for acks looks again for gateways that went quiet, ms. */
const ackRecheckMs = 100;

export class RoutingTable {
  private snapshot: RoutingSnapshot;
  private contentKey: string;
  private waiters = new Set<(snapshot: RoutingSnapshot) => void>();
  /** By gateway id (the poll's `gateway`; '' for a poll without one): what it holds. */
  private readonly gateways = new Map<string, GatewayPoller>();
  private readonly gatewayLivenessMs: number;
  private ackWaiters = new Set<() => void>();
  /** Until this settles, long-polls wait: the content is not yet what the platform runs. */
  private held: Promise<void> | null = null;
  /** Told of every snapshot published (issue 17: the leader copies it into the store). */
  private readonly publishListeners: ((snapshot: RoutingSnapshot) => void)[] = [];

  constructor(
    initial: SnapshotContent,
    private readonly clock: Clock,
    options: RoutingTableOptions = {},
  ) {
    this.gatewayLivenessMs = options.gatewayLivenessMs ?? 10_000;
    // Versions start at the wall clock (ms) so they keep increasing across control-plane
    // restarts: a gateway holding a persisted snapshot accepts the new ones.
    this.snapshot = { version: clock.now(), generatedAt: isoAt(clock), ...initial };
    this.contentKey = JSON.stringify(initial);
  }

  /**
   * Makes long-polls wait until `ready` settles: a restarted control plane must not hand a
   * gateway its empty initial snapshot (newer than the gateway's by version) before it has
   * published the replicas it adopted.
   */
  holdUntil(ready: Promise<void>): void {
    const held = ready.finally(() => {
      if (this.held === held) this.held = null;
    });
    this.held = held;
  }

  current(): RoutingSnapshot {
    return this.snapshot;
  }

  onPublish(listener: (snapshot: RoutingSnapshot) => void): void {
    this.publishListeners.push(listener);
  }

  /**
   * Versions from now on are above `version` (issue 17: a new leader continues above the
   * snapshot the last one published, whatever its own clock says).
   */
  advancePast(version: number): void {
    if (this.snapshot.version <= version)
      this.snapshot = { ...this.snapshot, version: version + 1 };
  }

  /**
   * Serves a snapshot published elsewhere as it is, version included (issue 17: a follower
   * control plane serving the leader's snapshot from the store).
   */
  mirror(snapshot: RoutingSnapshot): void {
    if (snapshot.version === this.snapshot.version) return;
    const { version: _version, generatedAt: _generatedAt, ...content } = snapshot;
    this.contentKey = JSON.stringify(content);
    this.snapshot = snapshot;
    this.wakeWaiters();
  }

  /** Publishes `content` as a new version if it differs from the current one. */
  publish(content: SnapshotContent): boolean {
    const key = JSON.stringify(content);
    if (key === this.contentKey) return false;
    this.contentKey = key;
    this.snapshot = {
      version: this.snapshot.version + 1,
      generatedAt: isoAt(this.clock),
      ...content,
    };
    this.wakeWaiters();
    for (const listener of this.publishListeners) listener(this.snapshot);
    return true;
  }

  private wakeWaiters(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake(this.snapshot);
  }

  /**
   * A gateway polling with `after = N` holds snapshot N: record it, so a replica taken out of
   * the routing can be stopped once every gateway no longer sends it anything new. Its
   * latest poll counts, not its highest: a restarted process under the same id may hold an
   * older (persisted) snapshot until its next poll.
   */
  acknowledge(version: number, gateway = ''): void {
    // No gateway can hold a snapshot that was never published: a poll claiming one (a
    // stray or forged `after`) must not release replicas a gateway may still route to.
    const held = Math.min(version, this.snapshot.version);
    const poller = this.poller(gateway);
    poller.version = held;
    poller.acks += 1;
    this.wakeAckWaiters();
  }

  /** Acknowledgements so far by live gateway id (a metric: kiln_control_routing_acks_total). */
  ackCounts(): ReadonlyMap<string, number> {
    this.dropQuietGateways();
    return new Map([...this.gateways].map(([id, poller]) => [id, poller.acks]));
  }

  /** Whether every live gateway holds `version` or newer (false with none live). */
  allAcked(version: number): boolean {
    this.dropQuietGateways();
    if (this.gateways.size === 0) return false;
    for (const poller of this.gateways.values()) if (poller.version < version) return false;
    return true;
  }

  /** Resolves true once every live gateway holds `version` (or newer), false after timeoutMs. */
  async waitForAck(version: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.allAcked(version)) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      // Woken by an ack, or after a short while to drop gateways that went quiet.
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(
          () => {
            this.ackWaiters.delete(wake);
            resolve();
          },
          Math.min(left, ackRecheckMs),
        );
        this.ackWaiters.add(wake);
      });
    }
    return true;
  }

  private poller(gateway: string): GatewayPoller {
    let poller = this.gateways.get(gateway);
    if (poller === undefined) {
      poller = { version: 0, acks: 0, lastSeenMs: this.clock.now(), polling: 0 };
      this.gateways.set(gateway, poller);
    }
    poller.lastSeenMs = this.clock.now();
    return poller;
  }

  private dropQuietGateways(): void {
    const now = this.clock.now();
    for (const [id, poller] of this.gateways) {
      if (poller.polling === 0 && now - poller.lastSeenMs > this.gatewayLivenessMs)
        this.gateways.delete(id);
    }
  }

  private wakeAckWaiters(): void {
    const waiters = [...this.ackWaiters];
    this.ackWaiters.clear();
    for (const wake of waiters) wake();
  }

  /** The current snapshot if newer than `after`, else the next one within waitMs, else null. */
  async waitForNewer(
    after: number,
    waitMs: number,
    signal?: AbortSignal,
    gateway = '',
  ): Promise<RoutingSnapshot | null> {
    if (this.held !== null) {
      const startedMs = Date.now();
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        this.held.then(() => false),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), waitMs))),
      ]);
      clearTimeout(timer);
      if (timedOut || signal?.aborted === true) return null;
      waitMs = Math.max(0, waitMs - (Date.now() - startedMs));
    }
    const poller = this.poller(gateway);
    poller.polling += 1;
    try {
      return await this.waitForNewerNow(after, waitMs, gateway, signal);
    } finally {
      // Seen until the liveness window after its poll ends (the next one follows at once).
      poller.polling -= 1;
      poller.lastSeenMs = this.clock.now();
    }
  }

  private waitForNewerNow(
    after: number,
    waitMs: number,
    gateway: string,
    signal?: AbortSignal,
  ): Promise<RoutingSnapshot | null> {
    // A poll without `after` (a gateway holding no snapshot yet) registers it as holding
    // none: it gets the newest at once and confirms it with its next poll.
    this.acknowledge(after, gateway);
    if (this.snapshot.version > after) return Promise.resolve(this.snapshot);
    return new Promise((resolve) => {
      const wake = (snapshot: RoutingSnapshot): void => {
        clearTimeout(timer);
        resolve(snapshot);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(wake);
        resolve(null);
      }, waitMs);
      signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve(null);
      });
      this.waiters.add(wake);
    });
  }

  /** Releases every waiting long-poll (shutdown). */
  close(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake(this.snapshot);
  }
}
