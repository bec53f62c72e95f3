// The policy simulator (issue 14): replays a request-rate trace through scaling policies and a
// queueing model of replicas, and reports per policy what the traffic would have seen.
//
// API (bench/autoscale.ts and `kiln simulate` call these; tell helper H of changes):
//
//   simulate(options: SimulationOptions): SimulationReport
//     options.trace      Trace           parseTrace(text) from trace.ts
//     options.model      SimulationModel parseSimulationModel(json) from simulation-model.ts
//     options.policies   SimulatedPolicy[]: {name, createRunner, instanceType?, initialReplicas?,
//                        createForecaster?}; policy-file.ts builds them from policy files
//     options.sloMs      latency objective (arrival → answer), ms
//     options.seed       default 1; the same seed gives the same report
//     options.startAtMs  epoch ms of the trace's t = 0 (day of week for predictive), default
//                        Monday 2026-11-23T00:00Z
//     options.timelinePoints  most points per policy timeline (default 720)
//     options.reportDelayMs   how late the load reaches the policy (default 0; 1000 = the
//                        controller acting on the previous second's reports)
//   formatSimulationTable(report) (simulation-table.ts): the side-by-side text table
//   renderSimulationSvg(report)   (simulation-plot.ts):  the SVG plot
//
// Each policy sees the same requests: arrivals (a Poisson process at the trace's rate) and
// service times come from their own seeded streams, drawn in arrival order, so policies differ
// only in what they decide. Each tick (1 s) builds the ScaleSample the control plane's
// controller builds (gateway demand over the last second, held requests, worker queue depth
// and CPU), feeds it to the policy and applies its decision at once, like the reconciler;
// a request arriving while the count is 0 wakes the endpoint to 1 at once (the activator's
// wake call). Pure: no clock, no I/O.

import { kilnError } from '../core/errors.ts';
import { createRandom, type Random } from '../core/random.ts';
import type { DemandForecast, ScalingPolicyRunner } from '../autoscale/autoscaler.ts';
import type { ScaleSample } from '../autoscale/scale-signals.ts';
import type { DemandPoint } from '../autoscale/demand-profile.ts';
import { HistogramSketch } from '../traffic/histogram-sketch.ts';
import { ReplicaCluster, type HeldBounds } from './replica-cluster.ts';
import { serviceTimeSampler, type ServiceTimeSampler } from './service-time.ts';
import type { SimulationModel } from './simulation-model.ts';
import type { PolicyReport, SimulationReport, Timeline } from './simulation-report.ts';
import type { Trace } from './trace.ts';

/** A finished minute of demand goes in; the predicted signal at now + start-up comes out. */
export interface SimulatedForecaster {
  learn(row: DemandPoint): void;
  forecast(nowMs: number): DemandForecast | undefined;
}

export interface SimulatedPolicy {
  readonly name: string;
  /** A fresh runner for a run (runners keep their samples). */
  readonly createRunner: () => ScalingPolicyRunner;
  /** Default: the model's defaultInstanceType. */
  readonly instanceType?: string;
  /** Replicas ready when the trace starts (it was running before). Default 1. */
  readonly initialReplicas?: number;
  /**
   * A wake from zero (a request arrived, none wanted) asks this many at once, like the
   * controller's wake: max(1, minReplicas). Default 1.
   */
  readonly wakeReplicas?: number;
  /**
   * After a wake, a decision of 0 is ignored this long (the controller's guard: the requests
   * that woke it may not be in a report yet). Default 0; a Kiln policy's scaleToZero.idleMs.
   */
  readonly wakeHoldMs?: number;
  /**
   * The activator's bounds while no replica is ready (a Kiln policy's scaleToZero queueLimit
   * and timeoutMs): a request beyond the limit or held past the timeout fails. Default none.
   */
  readonly activator?: HeldBounds;
  /**
   * For a policy with predictive scaling: learns from the simulated demand as it goes;
   * `startupMs` is the instance type's (how far ahead to look).
   */
  readonly createForecaster?: (context: { readonly startupMs: number }) => SimulatedForecaster;
}

export interface SimulationOptions {
  readonly trace: Trace;
  readonly model: SimulationModel;
  readonly policies: readonly SimulatedPolicy[];
  readonly sloMs: number;
  readonly seed?: number;
  readonly startAtMs?: number;
  readonly timelinePoints?: number;
  /**
   * How old the load the policy sees is (gateway reports and worker load reach the
   * controller up to a report interval late), rounded to whole seconds. Default 0.
   */
  readonly reportDelayMs?: number;
}

export const defaultSimulationStartMs = Date.UTC(2026, 10, 23); // a Monday, 00:00 UTC
const tickMs = 1000;

export function simulate(options: SimulationOptions): SimulationReport {
  const { model, trace } = options;
  if (!(options.sloMs > 0 && Number.isFinite(options.sloMs))) {
    throw invalid(`sloMs must be > 0, got ${options.sloMs}`);
  }
  if (options.policies.length === 0) throw invalid('no policies to simulate');
  const names = new Set<string>();
  for (const policy of options.policies) {
    if (names.has(policy.name)) throw invalid(`two policies are named ${policy.name}`);
    names.add(policy.name);
    const type = policy.instanceType ?? model.defaultInstanceType;
    if (model.instanceTypes[type] === undefined) {
      throw invalid(
        `policy ${policy.name}: instance type ${type} is not in the model (${Object.keys(model.instanceTypes).join(', ')})`,
      );
    }
  }
  const checked = serviceTimeSampler(model.serviceTime);
  if (!checked.ok) throw invalid(`service times: ${checked.reason}`);
  const seed = options.seed ?? 1;
  const reports = options.policies.map((policy) =>
    runPolicy(options, policy, checked.sampler, seed),
  );
  return {
    sloMs: options.sloMs,
    seed,
    durationSeconds: trace.endSeconds - trace.startSeconds,
    requests: reports[0]?.requests ?? 0,
    concurrencyPerReplica: model.concurrencyPerReplica,
    meanServiceMs: checked.sampler.meanMs,
    policies: reports,
  };
}

function invalid(reason: string): Error {
  return kilnError('KILN_SIMULATION_INVALID', { reason });
}

/** Poisson arrivals at a piecewise-constant rate: exponential gaps, restarted per segment. */
class ArrivalStream {
  #segment = 0;
  #t: number;
  constructor(
    private readonly trace: Trace,
    private readonly random: Random,
  ) {
    this.#t = trace.startSeconds;
  }

  /** The next arrival's time in seconds, Infinity after the trace. */
  next(): number {
    const points = this.trace.points;
    for (;;) {
      const point = points[this.#segment];
      if (point === undefined) return Infinity;
      const end = points[this.#segment + 1]?.tSeconds ?? this.trace.endSeconds;
      if (point.rps > 0) {
        const gap = -Math.log(1 - this.random.next()) / point.rps;
        if (this.#t + gap < end) {
          this.#t += gap;
          return this.#t;
        }
      }
      // Memoryless: the gap past the segment's end is redrawn at the next segment's rate.
      this.#t = end;
      this.#segment++;
    }
  }
}

function runPolicy(
  options: SimulationOptions,
  policy: SimulatedPolicy,
  sampler: ServiceTimeSampler,
  seed: number,
): PolicyReport {
  const { model, trace } = options;
  const instanceType = policy.instanceType ?? model.defaultInstanceType;
  const instance = model.instanceTypes[instanceType] ?? { startupMs: 0, usdPerHour: 0 };
  const startAtMs = options.startAtMs ?? defaultSimulationStartMs;
  const originMs = startAtMs + trace.startSeconds * 1000;
  const endMs = startAtMs + trace.endSeconds * 1000;
  const arrivals = new ArrivalStream(trace, createRandom(seed));
  const serviceRandom = createRandom((seed ^ 0x9e3779b9) >>> 0);
  const runner = policy.createRunner();
  const forecaster = policy.createForecaster?.({ startupMs: instance.startupMs });

  const latency = new HistogramSketch();
  let answered = 0;
  let failed = 0;
  let withinSlo = 0;
  let latencySum = 0;
  let waitSum = 0;
  let waited = 0;
  let maxLatency = 0;
  const cluster = new ReplicaCluster({
    slotsPerReplica: model.concurrencyPerReplica,
    startupMs: instance.startupMs,
    nowMs: originMs,
    integralsUntilMs: endMs,
    initialReplicas: Math.max(0, Math.round(policy.initialReplicas ?? 1)),
    ...(policy.activator === undefined ? {} : { heldBounds: policy.activator }),
    onFail: () => {
      failed++;
    },
    onAnswer: (request, startedMs, answeredMs) => {
      const ms = answeredMs - request.arrivalMs;
      answered++;
      latency.add(ms);
      latencySum += ms;
      if (ms > maxLatency) maxLatency = ms;
      if (ms <= options.sloMs) withinSlo++;
      const wait = startedMs - request.arrivalMs;
      // Service starts at a completion or arrival instant; float error is far below 1 µs.
      if (wait > 1e-6) {
        waited++;
        waitSum += wait;
      }
    },
  });

  const ticks = Math.max(1, Math.ceil((endMs - originMs) / tickMs));
  const tickArrivals = new Float64Array(ticks);
  const tickReady = new Float64Array(ticks);
  const tickWanted = new Float64Array(ticks);
  let wanted = cluster.activeReplicas;
  let maxReplicas = cluster.billedReplicas;
  let scaleUps = 0;
  let scaleDowns = 0;
  let coldStarts = 0;
  let heldRequests = 0;
  let panicTicks = 0;
  let wokeAtMs: number | null = null;
  let replicaMs = 0;
  let readyMs = 0;
  let requests = 0;
  let arrivalsThisTick = 0;
  let tickIndex = 0;
  let minute = emptyMinute(originMs);
  const reportDelayTicks = Math.max(0, Math.round((options.reportDelayMs ?? 0) / tickMs));
  const pendingLoad: ScaleSample[] = [];

  const apply = (count: number): void => {
    const next = Math.max(0, Math.round(count));
    if (next > wanted) scaleUps++;
    else if (next < wanted) scaleDowns++;
    wanted = next;
    cluster.scaleTo(next);
    maxReplicas = Math.max(maxReplicas, cluster.billedReplicas);
  };

  const tick = (atMs: number): void => {
    cluster.expireHeld();
    const areas = cluster.takeIntegrals();
    replicaMs += areas.replicas;
    readyMs += areas.ready;
    const slots = model.concurrencyPerReplica;
    const measured: ScaleSample = {
      atMs,
      readyReplicas: cluster.readyReplicas,
      startingReplicas: cluster.startingReplicas,
      concurrency: areas.inFlight / tickMs,
      qps: arrivalsThisTick / (tickMs / 1000),
      completed: areas.completed / (tickMs / 1000),
      held: cluster.held,
      queueDepth: cluster.queueDepth,
      cpu: areas.busySlots / tickMs / slots,
      slotsPerReplica: slots,
      accelerator: null,
      custom: {},
    };
    // Reports arrive late: the policy sees the load measured reportDelayTicks ago, and the
    // replica counts (which the controller reads from the reconciler) as they are now.
    pendingLoad.push(measured);
    const reported = pendingLoad.length > reportDelayTicks ? pendingLoad.shift() : undefined;
    const sample: ScaleSample =
      reportDelayTicks === 0
        ? measured
        : {
            ...(reported ?? idleLoad(atMs)),
            atMs,
            readyReplicas: cluster.readyReplicas,
            startingReplicas: cluster.startingReplicas,
          };
    minute.arrivals += arrivalsThisTick;
    minute.concurrencySeconds += areas.inFlight / 1000;
    minute.seconds += tickMs / 1000;
    if (atMs - minute.startMs >= 60_000) {
      forecaster?.learn(demandRow(minute));
      minute = emptyMinute(atMs);
    }
    runner.observe(sample);
    const decision = runner.decide(atMs, wanted, forecaster?.forecast(atMs));
    if (decision.mode === 'panic') panicTicks++;
    const justWoken = wokeAtMs !== null && atMs - wokeAtMs < (policy.wakeHoldMs ?? 0);
    apply(decision.replicas === 0 && justWoken ? wanted : decision.replicas);
    if (tickIndex < ticks) {
      tickArrivals[tickIndex] = arrivalsThisTick;
      tickReady[tickIndex] = cluster.readyReplicas;
      tickWanted[tickIndex] = wanted;
    }
    tickIndex++;
    arrivalsThisTick = 0;
  };

  let nextArrivalMs = startAtMs + arrivals.next() * 1000;
  let nextTickMs = originMs + tickMs;
  for (;;) {
    const eventMs = cluster.events.peekTime();
    const tickDue = nextTickMs <= endMs ? nextTickMs : Infinity;
    const arrivalDue = nextArrivalMs < endMs ? nextArrivalMs : Infinity;
    const nowMs = Math.min(eventMs, tickDue, arrivalDue);
    if (nowMs === Infinity) break;
    cluster.advance(nowMs);
    if (nowMs === eventMs) {
      const event = cluster.events.pop();
      if (event !== undefined) cluster.handle(event);
    } else if (nowMs === arrivalDue) {
      requests++;
      arrivalsThisTick++;
      if (wanted === 0) {
        coldStarts++;
        wokeAtMs = nowMs;
        apply(Math.max(1, policy.wakeReplicas ?? 1));
      }
      const failedBefore = failed;
      const held = cluster.readyReplicas === 0;
      cluster.arrive({ arrivalMs: nowMs, serviceMs: sampler.draw(serviceRandom) });
      if (held && failed === failedBefore) heldRequests++;
      nextArrivalMs = startAtMs + arrivals.next() * 1000;
    } else {
      tick(nowMs);
      nextTickMs += tickMs;
    }
  }
  // A last partial tick (a trace not a whole number of seconds) still bills its replicas.
  const rest = cluster.takeIntegrals();
  replicaMs += rest.replicas;
  readyMs += rest.ready;

  const durationSeconds = (endMs - originMs) / 1000;
  const hasAnswers = answered > 0;
  return {
    name: policy.name,
    instanceType,
    startupMs: instance.startupMs,
    requests,
    withinSlo,
    failedRequests: failed,
    sloAttainment: requests === 0 ? 1 : withinSlo / requests,
    p50Ms: latency.quantile(0.5),
    p95Ms: latency.quantile(0.95),
    p99Ms: latency.quantile(0.99),
    maxMs: hasAnswers ? maxLatency : null,
    meanLatencyMs: hasAnswers ? latencySum / answered : null,
    meanWaitMs: hasAnswers ? waitSum / answered : null,
    waitedShare: hasAnswers ? waited / answered : 0,
    replicaSeconds: replicaMs / 1000,
    meanReplicas: replicaMs / 1000 / durationSeconds,
    meanReadyReplicas: readyMs / 1000 / durationSeconds,
    maxReplicas,
    costUsd: (replicaMs / 3_600_000) * instance.usdPerHour,
    scaleUps,
    scaleDowns,
    coldStarts,
    heldRequests,
    panicSeconds: (panicTicks * tickMs) / 1000,
    timeline: downsample(
      { arrivals: tickArrivals, ready: tickReady, wanted: tickWanted },
      Math.min(ticks, tickIndex),
      options.timelinePoints ?? 720,
      (model.concurrencyPerReplica * 1000) / sampler.meanMs,
    ),
  };
}

/** What the policy sees before the first (delayed) report: no demand. */
function idleLoad(atMs: number): ScaleSample {
  return {
    atMs,
    readyReplicas: 0,
    startingReplicas: 0,
    concurrency: 0,
    qps: 0,
    completed: 0,
    held: 0,
    queueDepth: 0,
    cpu: 0,
    slotsPerReplica: null,
    accelerator: null,
    custom: {},
  };
}

interface Minute {
  readonly startMs: number;
  arrivals: number;
  concurrencySeconds: number;
  seconds: number;
}

function emptyMinute(startMs: number): Minute {
  return { startMs, arrivals: 0, concurrencySeconds: 0, seconds: 0 };
}

function demandRow(minute: Minute): DemandPoint {
  return {
    minuteStart: new Date(minute.startMs - (minute.startMs % 60_000)).toISOString(),
    arrivals: minute.arrivals,
    concurrencySeconds: minute.concurrencySeconds,
  };
}

function downsample(
  series: { arrivals: Float64Array; ready: Float64Array; wanted: Float64Array },
  ticks: number,
  maxPoints: number,
  rpsPerReadyReplica: number,
): Timeline {
  const perBucket = Math.max(1, Math.ceil(ticks / Math.max(1, maxPoints)));
  const timeline = {
    bucketSeconds: (perBucket * tickMs) / 1000,
    tSeconds: [] as number[],
    demandRps: [] as number[],
    capacityRps: [] as number[],
    replicas: [] as number[],
    readyReplicas: [] as number[],
  };
  for (let start = 0; start < ticks; start += perBucket) {
    const end = Math.min(ticks, start + perBucket);
    let arrivals = 0;
    let ready = 0;
    let wanted = 0;
    for (let i = start; i < end; i++) {
      arrivals += series.arrivals[i] ?? 0;
      ready += series.ready[i] ?? 0;
      wanted += series.wanted[i] ?? 0;
    }
    const n = end - start;
    timeline.tSeconds.push((start * tickMs) / 1000);
    timeline.demandRps.push(arrivals / ((n * tickMs) / 1000));
    timeline.capacityRps.push((ready / n) * rpsPerReadyReplica);
    timeline.replicas.push(wanted / n);
    timeline.readyReplicas.push(ready / n);
  }
  return timeline;
}
