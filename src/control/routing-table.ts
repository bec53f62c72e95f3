// Holds the current routing snapshot and lets gateways long-poll for a newer one. A new
// snapshot is published only when its content changed, so its version counts real changes.

import type { RoutingSnapshot } from '../gateway/routing-snapshot.ts';
import { isoAt, type Clock } from '../core/clock.ts';

type SnapshotContent = Omit<RoutingSnapshot, 'version' | 'generatedAt'>;

export class RoutingTable {
  private snapshot: RoutingSnapshot;
  private contentKey: string;
  private waiters = new Set<(snapshot: RoutingSnapshot) => void>();

  constructor(
    initial: SnapshotContent,
    private readonly clock: Clock,
  ) {
    // Versions start at the wall clock (ms) so they keep increasing across control-plane
    // restarts: a gateway holding a persisted snapshot accepts the new ones.
    this.snapshot = { version: clock.now(), generatedAt: isoAt(clock), ...initial };
    this.contentKey = JSON.stringify(initial);
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

  /** The current snapshot if newer than `after`, else the next one within waitMs, else null. */
  waitForNewer(
    after: number,
    waitMs: number,
    signal?: AbortSignal,
  ): Promise<RoutingSnapshot | null> {
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
