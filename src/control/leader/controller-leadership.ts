// Runs a control plane's controllers only while it holds the controllers' lease (issue 17):
//
//   lease gained (term) ─▶ fence the controllers' store with the term ─▶ lead(term)
//   lease lost          ─▶ fence with no term (every controller write refused, at once)
//                          ─▶ stepDown() ─▶ `lost` resolves; no more attempts from here
//
// The fence moves before anything else on both edges: a write the controllers make after the
// loss is refused by the database even while stepDown() is still stopping them. A control
// plane leads at most one term: its controllers are built once per process and cannot start
// again after they stopped, so after a loss it stays a follower (serving the API and the
// published routing) and `kiln up` starts the platform afresh to contend again.

import type { Registry as MetricsRegistry } from 'prom-client';
import { Gauge } from 'prom-client';
import type { PgFence } from '../../store/postgres/pg-database.ts';
import { controllersLease, type LeaderLease, type LeaseTerm } from './leader-lease.ts';

export interface ControllerLeadershipOptions {
  readonly lease: LeaderLease;
  /** The controllers' store's fence (PgStore.setFence). */
  readonly fence: (fence: PgFence) => void;
  /** Starts the controllers under this term. */
  readonly lead: (term: LeaseTerm) => Promise<void>;
  /** Stops them (the fence already refuses their writes). */
  readonly stepDown: () => Promise<void>;
  readonly log?: (message: string) => void;
}

export class ControllerLeadership {
  /** Resolves when a term this process held has ended (and its controllers have stopped). */
  readonly lost: Promise<LeaseTerm>;
  #resolveLost!: (term: LeaseTerm) => void;
  #term: LeaseTerm | null = null;
  #led = false;
  #transitions: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(private readonly options: ControllerLeadershipOptions) {
    this.lost = new Promise((resolve) => (this.#resolveLost = resolve));
    // Until a term is held every controller write is refused (no epoch is ever 0).
    options.fence(noTerm(options.lease));
    options.lease.onChange((term) => this.changed(term));
  }

  /** Whether this process leads now (the lease's own deadline checked). */
  leading(): boolean {
    return this.#term !== null && this.options.lease.term() !== null;
  }

  start(): void {
    this.options.lease.start();
  }

  /** Stops contending; a held lease is released so another takes over at once. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.options.lease.close({ release: true });
    await this.#transitions;
  }

  /** Waits for the controllers to have started or stopped after the latest change. */
  settled(): Promise<void> {
    return this.#transitions;
  }

  private changed(term: LeaseTerm | null): void {
    if (term !== null) {
      if (this.#led || this.#closed) return; // one term per process (see above)
      this.#led = true;
      this.#term = term;
      this.options.fence({ lease: this.options.lease.name, ...term });
      this.then(() => this.options.lead(term), 'starting the controllers');
      return;
    }
    const ended = this.#term;
    if (ended === null) return;
    this.#term = null;
    this.options.fence(noTerm(this.options.lease));
    this.then(async () => {
      await this.options.stepDown();
      // No second term from this process: stop trying (the lease is not held, nothing to release).
      await this.options.lease.close({ release: false });
      this.#resolveLost(ended);
    }, 'stopping the controllers');
  }

  private then(work: () => Promise<void>, what: string): void {
    this.#transitions = this.#transitions.then(work).catch((error: unknown) => {
      this.options.log?.(`leader: ${what} failed: ${(error as Error).message}`);
    });
  }
}

function noTerm(lease: LeaderLease): PgFence {
  return { lease: lease.name, holder: lease.holder, epoch: 0 };
}

/**
 * `kiln_control_leader{holder}` (1 while this process leads the controllers, else 0) and
 * `kiln_control_lease_epoch` (the epoch of the lease as last seen).
 */
export function registerLeaderMetrics(
  metrics: MetricsRegistry,
  lease: LeaderLease,
  leadership: ControllerLeadership,
): void {
  new Gauge({
    name: 'kiln_control_leader',
    help: `1 while this control plane holds the ${controllersLease} lease and runs the controllers`,
    labelNames: ['holder'],
    registers: [metrics],
    collect() {
      this.set({ holder: lease.holder }, leadership.leading() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'kiln_control_lease_epoch',
    help: `The ${controllersLease} lease's epoch as this control plane last saw it`,
    registers: [metrics],
    collect() {
      this.set(lease.lastSeen()?.epoch ?? 0);
    },
  });
}
