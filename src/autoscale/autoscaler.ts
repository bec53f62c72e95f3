// The autoscaler's decisions (issue 14), pure: a policy, the samples seen so far and the time
// → the replica count wanted now. No clock reads and no I/O, so the same code runs in the
// control plane (src/control/autoscale/autoscale-controller.ts, one instance per endpoint), in the simulator
// (src/simulator/) and in tests with synthetic signal streams.

import { autoscaleDefaults, type AutoscalePolicy } from './autoscale-policy.ts';
import type { ScaleSample } from './scale-signals.ts';
import { hasDemand, signalValue } from './signal-value.ts';
import { backlogReplicas, sloReplicas, type LatencyObjective } from './slo-sizing.ts';

export interface ScaleDecision {
  /** The replica count wanted now (within min/max; 0 only when scale-to-zero applies). */
  readonly replicas: number;
  /** 'panic' while the panic window decides. */
  readonly mode: 'stable' | 'panic';
  /** What the reactive part alone wants (before rate limits and the scale-down delay). */
  readonly reactive: number;
  /** What the predictive part wants (0: none or no prediction). */
  readonly predictive: number;
  /** Why, in words a person reads in `kiln autoscale show` ("concurrency 7.9 / target 2 …"). */
  readonly reason: string;
}

/** What the predictive part needs from the controller (or the simulator) at each decision. */
export interface DemandForecast {
  /** Predicted value of the policy's signal (summed over replicas) at now + startup time. */
  readonly signalAhead: number;
}

/**
 * Anything that decides replica counts from samples: Kiln's policy (`Autoscaler`) and the
 * HPA-like baseline the simulator and the bench compare it with (`HpaBaseline`).
 */
export interface ScalingPolicyRunner {
  /** Feeds one sample (samples arrive in time order). */
  observe(sample: ScaleSample): void;
  /**
   * The replica count wanted at nowMs, given the count now wanted (`current`, what the last
   * decision applied). Calling it again at the same time with no new sample gives the same
   * answer.
   */
  decide(nowMs: number, current: number, forecast?: DemandForecast): ScaleDecision;
}

export interface AutoscalerOptions {
  /**
   * When demand was last seen (a restarted control plane passes the stored lastDemandAt, so
   * the idle period carries on). Absent: the idle period counts from the first sample.
   */
  readonly lastDemandAtMs?: number;
}

/**
 * Knative's KPA in shape, per endpoint. Each decision, in order:
 *
 *   stable  = mean of the signal over the stable window (60 s)   → ceil(stable / target)
 *   panic   = mean over the panic window (6 s)                   → ceil(panic / target)
 *   hyst.   : a lower stable count applies only once stable <= (current - 1 - hysteresis) × target
 *   rate    : each clamped to [floor(current / down), ceil(current × up)]
 *   mode    : panic while panic / target >= panicThreshold × max(1, ready), and until a stable
 *             window has passed since that last held; in panic the count is the most wanted
 *             since panic began (and never below the count panic began at)
 *   predict : max(reactive, ceil(forecast / target))
 *   bounds  : clamp into [minReplicas, maxReplicas]
 *   delay   : the max of those counts over the scale-down delay (a dip must last to count)
 *   zero    : minReplicas 0: after idleMs with no demand → 0 (unless a forecast wants more);
 *             any demand (a request arrived, in flight or held) → at least 1 at once
 *
 * The rates are relative to `current` (the count last applied), not to the ready replicas,
 * so replicas that are still starting count against a further scale-up factor.
 *
 * Signal `slo` has no target: each ceil(· / target) above is instead the count the queueing
 * model (slo-sizing.ts) gives for the window's arrivals and the service time measured over
 * the stable window; the panic window's count adds what clears the backlog now, and panic is
 * that count reaching panicThreshold × ready; the hysteresis asks whether current - 1 would
 * hold the objective for the demand × (current - 1) / (current - 1 - hysteresis).
 */
export class Autoscaler implements ScalingPolicyRunner {
  /** Samples of the last stable window, oldest first. */
  private readonly samples: ScaleSample[] = [];
  private lastDemandAtMs: number | undefined;
  /** Last decision time at which the panic window was over the threshold; null: not in panic. */
  private lastPanicDemandAtMs: number | null = null;
  /** The most wanted since panic began (panic never scales down). */
  private maxPanicReplicas = 0;
  /** Counts wanted over the scale-down delay, oldest first (one per decision time). */
  private readonly delayWindow: { atMs: number; replicas: number }[] = [];
  /**
   * The count found at the first decision, held for one scale-down delay: a new autoscaler (a
   * restarted controller, a changed policy) has no history of wants yet, and must not scale
   * down on its first few samples.
   */
  private initial: { untilMs: number; replicas: number } | undefined;

  constructor(
    readonly policy: AutoscalePolicy,
    options: AutoscalerOptions = {},
  ) {
    this.lastDemandAtMs = options.lastDemandAtMs;
  }

  observe(sample: ScaleSample): void {
    this.samples.push(sample);
    if (hasDemand(sample) || this.lastDemandAtMs === undefined) {
      this.lastDemandAtMs = Math.max(this.lastDemandAtMs ?? sample.atMs, sample.atMs);
    }
    const oldestKept = sample.atMs - this.policy.stableWindowMs;
    while (this.samples.length > 0 && this.samples[0]!.atMs <= oldestKept) this.samples.shift();
  }

  /** When demand was last seen (for the store's lastDemandAt); undefined: no sample yet. */
  get lastDemandMs(): number | undefined {
    return this.lastDemandAtMs;
  }

  decide(nowMs: number, current: number, forecast?: DemandForecast): ScaleDecision {
    const p = this.policy;
    const clamp = (n: number): number => Math.min(p.maxReplicas, Math.max(p.minReplicas, n));
    const predictive = this.predictive(forecast);
    const latest = this.latestAt(nowMs);
    if (latest === undefined) {
      const replicas = clamp(current);
      return {
        replicas,
        mode: 'stable',
        reactive: current,
        predictive,
        reason: `no samples yet; holding ${replicas}`,
      };
    }

    const name = p.signal === 'custom' ? `${p.signal} ${p.customMetric ?? ''}` : p.signal;
    const stable = this.windowMean(nowMs, p.stableWindowMs);
    if (p.minReplicas === 0 && p.scaleToZero !== undefined && predictive === 0) {
      const idleMs = nowMs - (this.lastDemandAtMs ?? nowMs);
      if (idleMs >= p.scaleToZero.idleMs) {
        // No request for the whole idle period: whatever the windows still remember, go to
        // zero, and forget panic and the older wants so a wake starts from what it sees then.
        // Checked before the panic state moves, so that deciding again gives the same.
        this.exitPanic();
        this.delayWindow.length = 0;
        return {
          replicas: 0,
          mode: 'stable',
          reactive: stable === null ? 0 : replicasFor(stable, p.target),
          predictive,
          reason: `no requests for ${seconds(idleMs)} (idle after ${seconds(p.scaleToZero.idleMs)}) → 0`,
        };
      }
    }
    const reasons: string[] = [];
    let mode: ScaleDecision['mode'] = 'stable';
    let reactive: number;
    let wanted: number;
    const sizing = this.sizing(nowMs, latest);
    if (stable === null || (p.signal === 'slo' && sizing === null)) {
      // Nothing measured (worker load not reported, no answer yet to time): hold, not guess.
      reactive = current;
      wanted = current;
      const what = stable === null ? name : 'service time (worker CPU per answer)';
      reasons.push(`no ${what} measured in ${seconds(p.stableWindowMs)}; holding ${current}`);
    } else {
      const panic = this.windowMean(nowMs, p.panicWindowMs) ?? stable;
      const stableWants = sizing?.replicas(stable, 0) ?? replicasFor(stable, p.target);
      const panicWants = sizing?.replicas(panic, sizing.backlog) ?? replicasFor(panic, p.target);
      const maxUp = Math.ceil(p.maxScaleUpRate * Math.max(1, current));
      const maxDown = Math.floor(current / p.maxScaleDownRate);
      const limit = (n: number): number => Math.min(maxUp, Math.max(maxDown, n));
      const ready = Math.max(1, latest.readyReplicas);
      const panicDemand = sizing === null ? panic / p.target : panicWants;
      if (panicDemand >= p.panicThreshold * ready) {
        if (this.lastPanicDemandAtMs === null) this.maxPanicReplicas = current;
        this.lastPanicDemandAtMs = nowMs;
      } else if (
        this.lastPanicDemandAtMs !== null &&
        nowMs - this.lastPanicDemandAtMs >= p.stableWindowMs
      ) {
        this.exitPanic();
      }
      reactive = stableWants;
      // Hysteresis: down only when the demand would fit one replica fewer with
      // scaleDownHysteresis replicas to spare, so noise around a boundary (Poisson arrivals)
      // does not flip the count up at once and down a delay later, again and again.
      const hysteresis = p.scaleDownHysteresis ?? autoscaleDefaults.scaleDownHysteresis;
      const spare = current - 1 - hysteresis;
      const fitsFewer =
        sizing === null
          ? stable <= spare * p.target
          : spare > 0 && sizing.replicas((stable * (current - 1)) / spare, 0) <= current - 1;
      const stableApplied = stableWants >= current || fitsFewer ? stableWants : current;
      wanted = limit(stableApplied);
      reasons.push(
        sizing === null
          ? `${name} ${fixed(stable)} (${seconds(p.stableWindowMs)} mean) / target ${fixed(p.target)} → ${stableWants}`
          : `${fixed(stable)} requests/s (${seconds(p.stableWindowMs)} mean) × ${fixed(sizing.serviceMs)} ms service → ${stableWants} for ${fixed(sizing.slo.objective * 100)} % within ${fixed(sizing.slo.latencyMs)} ms`,
      );
      if (stableApplied > stableWants && current > p.minReplicas && sizing !== null) {
        reasons.push(
          spare > 0
            ? `kept ${current} (down once ${current - 1} would hold the objective with ${fixed(hysteresis)} replicas of demand to spare)`
            : `kept ${current} (scaleDownHysteresis ${fixed(hysteresis)} leaves no lower count)`,
        );
      } else if (stableApplied > stableWants && current > p.minReplicas) {
        const downAt = spare * p.target;
        // A negative threshold is no level the signal can reach: say what does lower it.
        reasons.push(
          downAt >= 0
            ? `kept ${current} (down once ${name} ≤ ${fixed(downAt)})`
            : current === 1 && p.scaleToZero !== undefined
              ? `kept 1 until idle ${seconds(p.scaleToZero.idleMs)} (then to zero)`
              : `kept ${current} (scaleDownHysteresis ${fixed(hysteresis)} leaves no lower count)`,
        );
      }
      if (this.lastPanicDemandAtMs !== null) {
        mode = 'panic';
        reactive = Math.max(stableWants, panicWants);
        wanted = Math.max(wanted, limit(panicWants));
        this.maxPanicReplicas = Math.max(this.maxPanicReplicas, wanted);
        wanted = this.maxPanicReplicas;
        const backlog =
          sizing === null || sizing.backlog === 0 ? '' : ` and ${fixed(sizing.backlog)} queued`;
        reasons.push(
          `panic since ${name} reached ${fixed(p.panicThreshold)} × the capacity of the ready replicas: ${fixed(panic)} (${seconds(p.panicWindowMs)} mean)${backlog} → ${panicWants}, never down in panic`,
        );
      }
      if (wanted !== stableApplied && mode === 'stable') {
        reasons.push(`rate-limited to ${wanted} (from ${current})`);
      }
    }

    if (predictive > wanted) {
      reasons.push(`predictive ${predictive} (forecast ${fixed(forecast?.signalAhead ?? 0)})`);
      wanted = predictive;
    }
    const bounded = clamp(wanted);
    if (bounded !== wanted)
      reasons.push(`bounded to ${bounded} by [${p.minReplicas}, ${p.maxReplicas}]`);

    this.initial ??= { untilMs: nowMs + p.scaleDownDelayMs, replicas: clamp(current) };
    let replicas = this.delayed(nowMs, bounded);
    if (nowMs < this.initial.untilMs) replicas = Math.max(replicas, this.initial.replicas);
    if (replicas > bounded)
      reasons.push(`held at ${replicas} by the scale-down delay (${seconds(p.scaleDownDelayMs)})`);
    if (replicas === 0 && p.minReplicas === 0) {
      replicas = 1;
      reasons.push(
        current === 0
          ? 'demand while at zero → wake to 1'
          : 'requests within the idle period → at least 1',
      );
    }
    return { replicas, mode, reactive, predictive, reason: reasons.join('; ') };
  }

  private predictive(forecast: DemandForecast | undefined): number {
    if (
      forecast === undefined ||
      !Number.isFinite(forecast.signalAhead) ||
      forecast.signalAhead <= 0
    ) {
      return 0;
    }
    return Math.min(this.policy.maxReplicas, replicasFor(forecast.signalAhead, this.policy.target));
  }

  /**
   * Signal `slo`: what sizes a demand (requests/s) into replicas, from the service time
   * measured over the stable window (busy slot-seconds per answer: under saturation too,
   * where arrivals outrun answers) and the backlog now (queued in workers, held at gateways).
   * Null for every other signal, or with no service time measured yet (then: hold).
   */
  private sizing(nowMs: number, latest: ScaleSample): SloSizing | null {
    const slo = this.policy.slo;
    if (this.policy.signal !== 'slo' || slo === undefined) return null;
    let busy = 0;
    let answered = 0;
    let slots = 0;
    let measured = 0;
    for (const sample of this.samples) {
      if (sample.atMs <= nowMs - this.policy.stableWindowMs || sample.atMs > nowMs) continue;
      if (sample.cpu === null || sample.slotsPerReplica === null) continue;
      busy += sample.cpu * sample.slotsPerReplica;
      answered += sample.completed;
      slots += sample.slotsPerReplica;
      measured += 1;
    }
    if (answered <= 0 || busy <= 0 || measured === 0) return null;
    const load = { meanServiceSeconds: busy / answered, slotsPerReplica: slots / measured };
    const maxReplicas = this.policy.maxReplicas;
    const backlog = (latest.queueDepth ?? 0) + latest.held;
    return {
      slo,
      serviceMs: load.meanServiceSeconds * 1000,
      backlog,
      replicas: (arrivalsPerSecond, queued) =>
        Math.min(
          maxReplicas,
          sloReplicas({ ...load, arrivalsPerSecond }, slo, maxReplicas) +
            backlogReplicas(queued, load, slo),
        ),
    };
  }

  private exitPanic(): void {
    this.lastPanicDemandAtMs = null;
    this.maxPanicReplicas = 0;
  }

  private latestAt(nowMs: number): ScaleSample | undefined {
    for (let i = this.samples.length - 1; i >= 0; i--) {
      const sample = this.samples[i]!;
      if (sample.atMs <= nowMs) return sample;
    }
    return undefined;
  }

  /** Mean of the signal over samples in (now - windowMs, now] that measured it; null: none. */
  private windowMean(nowMs: number, windowMs: number): number | null {
    let sum = 0;
    let count = 0;
    for (const sample of this.samples) {
      if (sample.atMs <= nowMs - windowMs || sample.atMs > nowMs) continue;
      const value = signalValue(this.policy, sample);
      if (value === null || !Number.isFinite(value)) continue;
      sum += Math.max(0, value);
      count += 1;
    }
    return count === 0 ? null : sum / count;
  }

  /** Records this decision's count and answers the max over the scale-down delay. */
  private delayed(nowMs: number, replicas: number): number {
    const delayMs = this.policy.scaleDownDelayMs;
    if (delayMs <= 0) return replicas;
    const window = this.delayWindow;
    // A second decision at the same time replaces the first: deciding again gives the same.
    if (window.length > 0 && window[window.length - 1]!.atMs === nowMs) window.pop();
    window.push({ atMs: nowMs, replicas });
    while (window.length > 0 && window[0]!.atMs <= nowMs - delayMs) window.shift();
    return window.reduce((most, entry) => Math.max(most, entry.replicas), 0);
  }
}

interface SloSizing {
  readonly slo: LatencyObjective;
  readonly serviceMs: number;
  /** Requests queued in the workers and held at the gateways at the latest sample. */
  readonly backlog: number;
  /** Replicas for a demand of requests/s, plus those that clear `queued` within the slack. */
  replicas(arrivalsPerSecond: number, queued: number): number;
}

/**
 * ceil(value / target), with a tolerance so that a signal of exactly n × target (up to float
 * rounding of the means) asks for n replicas, not n + 1.
 */
export function replicasFor(value: number, target: number): number {
  return Math.max(0, Math.ceil(value / target - 1e-9));
}

function fixed(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

function seconds(ms: number): string {
  return `${fixed(ms / 1000)} s`;
}
