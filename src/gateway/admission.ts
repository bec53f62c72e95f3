// Capacity isolation: the limits that decide whether an infer request is let in at all,
// checked after auth and before any of the body is read, so refusing costs almost nothing.
//
//   - one ConcurrencyGate per endpoint: at most `maxConcurrency` requests in flight at this
//     gateway (429 KILN_ENDPOINT_BUSY beyond), so a flood on one endpoint cannot take the
//     gateway's (and the workers') capacity from the others, and no endpoint queues without
//     limit (every snapshot endpoint has a bound: configured or derived, admission-bound.ts).
//     A full gate refuses at the door; a request takes its slot only once its body is in
//     (infer-exchange.ts), so slow uploads hold none;
//   - one TokenBucket per team: `requestsPerSecond` sustained, `burst` at once (429
//     KILN_RATE_LIMITED beyond).
//
// With N gateway processes on one port (issue 16) each has its own gates, and an endpoint's
// bound is shared: a process may admit max(⌊bound / N⌋, bound − what the others admit), the
// others' count coming from the supervisor every few ms (setOthers). The guaranteed share
// keeps a process from starving; the borrowing lets a process that was handed more
// connections than another (the cluster does not spread them evenly) use the room the
// others leave, so N processes together admit about what one gateway would (overshoot: what
// the others admitted since their last count). Before any count it may admit the bound.
//
// Both outlive snapshots, like replica state: they are keyed by endpoint and team name and
// their limits are updated in place, so a new snapshot neither forgets requests in flight
// nor refills a team's bucket. Route-table entries hold direct references (no lookup per
// request); a request keeps the gate it entered until it finishes.

import type { RoutingSnapshot } from './routing-snapshot.ts';
import { TokenBucket } from './token-bucket.ts';

export class ConcurrencyGate {
  /** Infer requests holding a slot (body in, not yet finished). */
  inflight = 0;
  /** The endpoint's whole bound (the snapshot's), when this gate is one process's part of it. */
  bound: number | null = null;

  constructor(
    /** null = unlimited. */
    public limit: number | null,
  ) {}

  /** At its limit: a new request is refused (429) rather than let in. */
  isFull(): boolean {
    return this.limit !== null && this.inflight >= this.limit;
  }

  enter(): void {
    this.inflight += 1;
  }

  leave(): void {
    this.inflight -= 1;
  }
}

export class Admission {
  private gates = new Map<string, ConcurrencyGate>();
  private buckets = new Map<string, TokenBucket>();
  /** Admitted requests of the other gateway processes, by endpoint (setOthers). */
  private others: ReadonlyMap<string, number> = new Map();

  /** `processes`: the gateway processes sharing each endpoint's bound (default 1). */
  constructor(private readonly processes = 1) {}

  /** Brings gates and buckets in line with a snapshot, keeping their state. */
  sync(snapshot: RoutingSnapshot, nowMs: number): void {
    const gates = new Map<string, ConcurrencyGate>();
    for (const endpoint of snapshot.endpoints) {
      const gate = this.gates.get(endpoint.name) ?? new ConcurrencyGate(null);
      gate.bound = endpoint.maxConcurrency;
      gates.set(endpoint.name, gate);
    }
    this.gates = gates;
    this.applyShares();
    const buckets = new Map<string, TokenBucket>();
    for (const limit of snapshot.teamLimits) {
      let bucket = this.buckets.get(limit.team);
      if (bucket === undefined) {
        bucket = new TokenBucket(limit.requestsPerSecond, limit.burst, nowMs);
      } else {
        bucket.setLimits(limit.requestsPerSecond, limit.burst, nowMs);
      }
      buckets.set(limit.team, bucket);
    }
    this.buckets = buckets;
  }

  /** The other gateway processes' admitted requests by endpoint, as the supervisor last counted. */
  setOthers(others: ReadonlyMap<string, number>): void {
    this.others = others;
    this.applyShares();
  }

  /** This process's admitted requests by endpoint (what the supervisor counts). */
  admitted(): Map<string, number> {
    const admitted = new Map<string, number>();
    for (const [endpoint, gate] of this.gates) admitted.set(endpoint, gate.inflight);
    return admitted;
  }

  private applyShares(): void {
    for (const [endpoint, gate] of this.gates) {
      const bound = gate.bound;
      if (bound === null || this.processes <= 1) {
        gate.limit = bound;
        continue;
      }
      const share = Math.max(1, Math.floor(bound / this.processes));
      gate.limit = Math.max(share, bound - (this.others.get(endpoint) ?? 0));
    }
  }

  /** The endpoint's gate (an unlimited one for an endpoint the last sync did not list). */
  gateFor(endpoint: string): ConcurrencyGate {
    return this.gates.get(endpoint) ?? new ConcurrencyGate(null);
  }

  /** Each endpoint's gate, for the metrics (read when they are scraped). */
  allGates(): ReadonlyMap<string, ConcurrencyGate> {
    return this.gates;
  }

  /** The team's bucket, or null when the team has no limit. */
  bucketFor(team: string): TokenBucket | null {
    return this.buckets.get(team) ?? null;
  }
}
