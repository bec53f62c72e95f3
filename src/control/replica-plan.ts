// The reconciler's decisions as a pure function: given the endpoints users asked for and
// the replicas that exist, which replicas to start, restart and stop. No clock reads, no
// I/O: tested with a fake `nowMs` and plain objects.
//
// A replica is started from a revision: the model, its version and the serving config the
// worker gets (serving-defaults.ts: workerRevision). Redeploying another model, version or
// worker config is a new revision, rolled out like a new version.
//
// Rules, per endpoint (desired revision R, N replicas):
// - slots 0..N-1 of revision R each hold one replica; an empty slot is started;
// - a failed replica is restarted when its backoff has passed: 0.5 s, 1 s, 2 s … 30 s after
//   a crash, 1 min, 2 min … 10 min after a failure that repeats (failureKind); counted from
//   the first failure after ten minutes ready (backoffResetAfterMs);
// - replicas of R in slots ≥ N are stopped (scale down);
// - replicas of other revisions keep serving until every slot of R is ready, then stop
//   (a new revision that never becomes ready never takes the old one's traffic away);
// - replicas of endpoints that no longer exist are stopped.
//
// With traffic management (issue 13) an endpoint runs other revisions beside R on purpose
// (`kept`: the versions of its traffic policy, its shadows, staged candidates and versions
// kept warm until a time). Each kept revision gets its N slots like R (started, restarted
// with backoff, scaled down) and is never stopped as replaced while it is wanted; a warm one
// is wanted until its `untilMs`, after which it is just another revision: stopped once every
// slot of R is ready. Revisions are told apart by their name (model, version, worker config),
// so slot k of each revision is its own place.
//
// Placement (issue 14): a replica whose node is taken away (a spot reclaim, a drain) is
// `evicted`. It keeps serving while a replacement starts in its slot (a surge, on another
// node); once that replacement is ready the evicted one stops (reason `evicted`): no request
// is lost to the reclaim. An evicted replica that is not serving (failed) stops at once.

export type ReplicaState = 'starting' | 'ready' | 'failed' | 'stopping';

export interface DesiredEndpoint {
  readonly name: string;
  readonly version: number;
  /** What its replicas are started from (model, version, worker config). */
  readonly revision: string;
  readonly replicas: number;
  /**
   * Revisions run beside `revision` (policy versions, shadows, staged, warm), each with
   * `replicas` slots; none: the endpoint serves its one revision as before traffic policies.
   */
  readonly kept?: readonly KeptRevision[];
}

export interface KeptRevision {
  readonly version: number;
  readonly revision: string;
  /** Wanted until then (a warm version); absent: as long as it is listed. */
  readonly untilMs?: number;
}

export interface ObservedReplica {
  readonly id: string;
  readonly endpoint: string;
  readonly version: number;
  readonly revision: string;
  readonly slot: number;
  readonly state: ReplicaState;
  readonly restarts: number;
  /** When a failed replica may be started again. */
  readonly restartAtMs: number | null;
  /** Its node is going away: replaced in its slot, then stopped (placement, issue 14). */
  readonly evicted?: boolean;
}

export type ReplicaAction =
  | {
      readonly kind: 'start';
      readonly endpoint: string;
      readonly version: number;
      readonly revision: string;
      readonly slot: number;
    }
  | { readonly kind: 'restart'; readonly replicaId: string }
  | {
      readonly kind: 'stop';
      readonly replicaId: string;
      readonly reason: 'scale-down' | 'replaced' | 'endpoint-deleted' | 'evicted';
    };

/**
 * How a failure is retried. A `crash` (an exit, a kill, a start timeout, a worker that could
 * not be spawned) may well not happen again: restart soon. A failure that `repeats` is about
 * the bytes the worker was given — a blob that does not hash to its name, a blob gone, a model
 * its runtime cannot load: the same launch fails the same way until someone repairs the
 * registry, so restarting it as fast as a crash only burns a worker start (and a full
 * re-hash of the model) every 30 s. It waits minutes; a repair (a re-upload of one of its
 * blobs) retries it at once (Reconciler.blobStored).
 */
export type FailureKind = 'crash' | 'repeats';

/**
 * The error codes a worker (or the launch checks) reports that repeat on a restart. Trust
 * failures (signature policy) are not here: their check runs in the control plane without a
 * worker, so re-checking every 30 s costs nothing and picks up a policy change soon.
 */
const repeatingCodes: ReadonlySet<string> = new Set([
  'KILN_ARTIFACT_CORRUPT',
  'KILN_ARTIFACT_QUARANTINED',
  'KILN_ARTIFACT_MISSING',
  'KILN_INVALID_ARTIFACT',
  'KILN_UNSAFE_ARTIFACT',
  'KILN_FORMAT_NOT_SERVABLE',
  'KILN_MODEL_LOAD_FAILED',
]);

/** The kind of a failure from its error code (null: none reported, as for a crash). */
export function failureKind(code: string | null): FailureKind {
  return code !== null && repeatingCodes.has(code) ? 'repeats' : 'crash';
}

export const maxBackoffMs = 30_000;
export const maxRepeatBackoffMs = 10 * 60_000;

/**
 * A replica ready this long before it fails starts its backoff over (as a Kubernetes pod's
 * crash-loop backoff does after ten minutes of running): a crash a day must not, after a
 * week, wait as long as a crash loop. Ready for less — a crash loop that passes through
 * ready — the backoff keeps growing.
 */
export const backoffResetAfterMs = 10 * 60_000;

/** Delay before the n-th restart (n = restarts in a row so far) after a failure of this kind. */
export function restartBackoffMs(restarts: number, kind: FailureKind = 'crash'): number {
  const doublings = 2 ** Math.min(restarts, 16);
  switch (kind) {
    case 'crash':
      return Math.min(maxBackoffMs, 500 * doublings);
    case 'repeats':
      return Math.min(maxRepeatBackoffMs, 60_000 * doublings);
  }
}

export function planReplicas(
  endpoints: readonly DesiredEndpoint[],
  replicas: readonly ObservedReplica[],
  nowMs: number,
): ReplicaAction[] {
  const actions: ReplicaAction[] = [];
  const desired = new Map(endpoints.map((e) => [e.name, e]));
  const live = replicas.filter((r) => r.state !== 'stopping');

  for (const replica of live) {
    if (!desired.has(replica.endpoint)) {
      actions.push({ kind: 'stop', replicaId: replica.id, reason: 'endpoint-deleted' });
    }
  }

  for (const endpoint of endpoints) {
    const mine = live.filter((r) => r.endpoint === endpoint.name);
    const wanted = wantedRevisions(endpoint, nowMs);
    for (const { version, revision } of wanted.values()) {
      const current = mine.filter((r) => r.revision === revision);
      // An evicted replica holds its slot only until its replacement is ready.
      const staying = current.filter((r) => r.evicted !== true);
      for (let slot = 0; slot < endpoint.replicas; slot++) {
        const holder = staying.find((r) => r.slot === slot);
        if (holder === undefined) {
          actions.push({ kind: 'start', endpoint: endpoint.name, version, revision, slot });
        } else if (
          holder.state === 'failed' &&
          holder.restartAtMs !== null &&
          holder.restartAtMs <= nowMs
        ) {
          actions.push({ kind: 'restart', replicaId: holder.id });
        }
      }
      for (const replica of current) {
        if (replica.slot >= endpoint.replicas) {
          actions.push({ kind: 'stop', replicaId: replica.id, reason: 'scale-down' });
        } else if (replica.evicted === true) {
          const successor = staying.find((r) => r.slot === replica.slot);
          if (replica.state !== 'ready' || successor?.state === 'ready')
            actions.push({ kind: 'stop', replicaId: replica.id, reason: 'evicted' });
        }
      }
    }
    const readyCurrent = mine.filter(
      (r) =>
        r.revision === endpoint.revision &&
        r.state === 'ready' &&
        r.slot < endpoint.replicas &&
        r.evicted !== true,
    ).length;
    if (readyCurrent >= endpoint.replicas) {
      for (const replica of mine) {
        if (!wanted.has(replica.revision)) {
          actions.push({ kind: 'stop', replicaId: replica.id, reason: 'replaced' });
        }
      }
    }
  }
  return actions;
}

/**
 * The revisions an endpoint runs now, by name: its own first, then the kept ones still
 * wanted at `nowMs` (a warm one until its time; one listed twice or equal to the endpoint's
 * own runs once).
 */
export function wantedRevisions(
  endpoint: DesiredEndpoint,
  nowMs: number,
): Map<string, { readonly version: number; readonly revision: string }> {
  const wanted = new Map([
    [endpoint.revision, { version: endpoint.version, revision: endpoint.revision }],
  ]);
  for (const kept of endpoint.kept ?? []) {
    if (kept.untilMs !== undefined && kept.untilMs <= nowMs) continue;
    if (!wanted.has(kept.revision))
      wanted.set(kept.revision, { version: kept.version, revision: kept.revision });
  }
  return wanted;
}
