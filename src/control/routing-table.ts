// Holds the current routing snapshot and lets gateways long-poll for a newer one. A new
// snapshot is published only when its content changed, so its version counts real changes.

import type { RoutingSnapshot } from '../gateway/routing-snapshot.ts';
import { isoAt, type Clock } from '../core/clock.ts';

type SnapshotContent = Omit<RoutingSnapshot, 'version' | 'generatedAt'>;

export class RoutingTable {
  private snapshot: RoutingSnapshot;
  private contentKey: string;
  private waiters = new Set<(snapshot: RoutingSnapshot) => void>();
  /** Highest snapshot version a gateway has confirmed holding (its long-poll's `after`). */
  private acked = 0;
  private ackWaiters = new Set<() => void>();
  /** Until this settles, long-polls wait: the content is not yet what the platform runs. */
  private held: Promise<void> | null = null;

  constructor(
    initial: SnapshotContent,
    private readonly clock: Clock,
  ) {
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
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake(this.snapshot);
    return true;
  }

  /**
   * A gateway polling with `after = N` holds snapshot N: record it, so a replica taken out of
   * the routing can be stopped once the gateway no longer sends it anything new.
   */
  acknowledge(version: number): void {
    // No gateway can hold a snapshot that was never published: a poll claiming one (a
    // stray or forged `after`) must not release replicas a gateway may still route to.
    const held = Math.min(version, this.snapshot.version);
    if (!(held > this.acked)) return;
    this.acked = held;
    const waiters = [...this.ackWaiters];
    this.ackWaiters.clear();
    for (const wake of waiters) wake();
  }

  /** Resolves true once a gateway holds `version` (or newer), false after timeoutMs. */
  async waitForAck(version: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.acked < version) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          this.ackWaiters.delete(wake);
          resolve();
        }, left);
        this.ackWaiters.add(wake);
      });
    }
    return true;
  }

  /** The current snapshot if newer than `after`, else the next one within waitMs, else null. */
  async waitForNewer(
    after: number,
    waitMs: number,
    signal?: AbortSignal,
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
    return this.waitForNewerNow(after, waitMs, signal);
  }

  private waitForNewerNow(
    after: number,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<RoutingSnapshot | null> {
    this.acknowledge(after);
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
