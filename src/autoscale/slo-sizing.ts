// Replicas sized to a latency objective (issue 14, the autoscaler's `slo` signal): instead of a
// fixed target per replica, the count is the fewest replicas whose queue keeps the share of
// requests answered within `latencyMs` at the objective, given the arrival rate and the service
// time measured over the window. Pure arithmetic; the autoscaler (autoscaler.ts) calls it.
//
// The queueing model is M/M/c (Erlang C) over the endpoint's compute slots (replicas × slots
// per replica): the probability that a request waits longer than a time t is
//
//   P(wait > t) = C(c, a) × exp(-(c μ - λ) t)      a = λ / μ offered load, C = Erlang C
//
// and a request meets the objective if it waits at most t = latencyMs - 3 × mean service (3 ×
// the mean is the 95th percentile of an exponential service time: the slack a slow request
// still has to wait in). The count is the fewest replicas with P(wait > t) <= 1 - objective.
// A load that is only a share of a slot's capacity still takes one replica.
//
// A backlog (requests already queued or held now) is not in the steady-state model: it is the
// mark of demand that grew faster than the windows follow (a spike while replicas start).
// `backlogReplicas` is what clears it within the slack, added where the autoscaler decides on
// its short window (panic), so a spike's queue drains within the objective.

/** The latency objective an endpoint scales to. */
export interface LatencyObjective {
  /** Arrival at a gateway → answer, in ms (> 0). */
  readonly latencyMs: number;
  /** The share of requests answered within latencyMs, in (0, 1). Default 0.999. */
  readonly objective: number;
}

export interface QueueLoad {
  /** Requests arriving per second (>= 0). */
  readonly arrivalsPerSecond: number;
  /** Mean time a request holds a compute slot, in seconds (> 0). */
  readonly meanServiceSeconds: number;
  /** Compute slots per replica (worker threads; >= 1). */
  readonly slotsPerReplica: number;
}

/** The slack a request may wait and still meet the objective, in seconds (may be <= 0). */
export function waitSlackSeconds(slo: LatencyObjective, meanServiceSeconds: number): number {
  return slo.latencyMs / 1000 - 3 * meanServiceSeconds;
}

/**
 * The fewest replicas (at most `maxReplicas`) for which M/M/c keeps P(wait > slack) within
 * 1 - objective. No arrivals → 0. When the service alone leaves no slack (the objective is
 * below three mean service times), waiting cannot be afforded at all: the count keeps the
 * chance of waiting at all within 1 - objective.
 */
export function sloReplicas(load: QueueLoad, slo: LatencyObjective, maxReplicas: number): number {
  const lambda = load.arrivalsPerSecond;
  const service = load.meanServiceSeconds;
  const slots = Math.max(1, Math.floor(load.slotsPerReplica));
  if (!(lambda > 0) || !(service > 0) || !Number.isFinite(lambda * service)) return 0;
  const mu = 1 / service;
  const offered = lambda * service;
  const slack = Math.max(0, waitSlackSeconds(slo, service));
  const allowed = 1 - slo.objective;
  const maxServers = Math.max(1, maxReplicas) * slots;
  // Erlang B by its recurrence B(k) = a B(k-1) / (k + a B(k-1)), B(0) = 1: stable for any c,
  // no factorials; Erlang C from it once c > a.
  let erlangB = 1;
  for (let servers = 1; servers <= maxServers; servers++) {
    erlangB = (offered * erlangB) / (servers + offered * erlangB);
    if (servers % slots !== 0 || servers <= offered) continue;
    const rho = offered / servers;
    const waitProbability = erlangB / (1 - rho * (1 - erlangB));
    const late = waitProbability * Math.exp(-(servers * mu - lambda) * slack);
    if (late <= allowed) return servers / slots;
  }
  return Math.max(1, maxReplicas);
}

/** Replicas that serve a backlog of `queued` requests within the slack, on top of the load. */
export function backlogReplicas(
  queued: number,
  load: Pick<QueueLoad, 'meanServiceSeconds' | 'slotsPerReplica'>,
  slo: LatencyObjective,
): number {
  if (!(queued > 0) || !(load.meanServiceSeconds > 0)) return 0;
  // At least one service time: a backlog cannot clear faster than one request takes.
  const slack = Math.max(load.meanServiceSeconds, waitSlackSeconds(slo, load.meanServiceSeconds));
  const slots = Math.max(1, Math.floor(load.slotsPerReplica));
  return Math.ceil((queued * load.meanServiceSeconds) / slack / slots - 1e-9);
}
