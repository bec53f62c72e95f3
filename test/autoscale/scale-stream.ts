// Drives a ScalingPolicyRunner with a synthetic signal stream on an injected clock, one sample
// and one decision per second, the way the controller ticks: replicas the last decision asked
// for become ready `startupSeconds` later (removals at once), and each change of the applied
// count is a scale event.

import type {
  DemandForecast,
  ScaleDecision,
  ScalingPolicyRunner,
} from '../../src/autoscale/autoscaler.ts';
import type { ScaleSample } from '../../src/autoscale/scale-signals.ts';

/** What the stream shows at second t; ready/starting replicas are filled in by the driver. */
export type Demand = Partial<Omit<ScaleSample, 'atMs' | 'readyReplicas' | 'startingReplicas'>>;

export interface StreamStep {
  readonly t: number;
  readonly sample: ScaleSample;
  readonly decision: ScaleDecision;
  /** The count applied after this decision. */
  readonly replicas: number;
}

export interface StreamRun {
  readonly steps: readonly StreamStep[];
  /** Changes of the applied count, in order. */
  readonly events: readonly { t: number; from: number; to: number }[];
  /** The applied count after second t. */
  at(t: number): number;
}

export interface StreamOptions {
  readonly seconds: number;
  readonly initialReplicas: number;
  /** Seconds from a scale-up decision until its replicas are ready. Default 0. */
  readonly startupSeconds?: number;
  /** First second of the stream (so decisions land on a chosen clock). Default 0. */
  readonly startSecond?: number;
  /** Decide only on seconds where this holds (e.g. HPA's 15 s sync). Default: every second. */
  readonly decideEvery?: number;
  readonly forecast?: (t: number) => DemandForecast | undefined;
}

export function runStream(
  runner: ScalingPolicyRunner,
  demand: (t: number) => Demand,
  options: StreamOptions,
): StreamRun {
  const startupSeconds = options.startupSeconds ?? 0;
  const start = options.startSecond ?? 0;
  let replicas = options.initialReplicas;
  // Replicas ready at or after a time: one entry per replica, its ready second.
  let readyAt: number[] = Array.from({ length: replicas }, () => start);
  const steps: StreamStep[] = [];
  const events: { t: number; from: number; to: number }[] = [];
  const byT = new Map<number, number>();
  for (let t = start; t < start + options.seconds; t++) {
    const ready = readyAt.filter((at) => at <= t).length;
    const d = demand(t);
    const sample: ScaleSample = {
      atMs: t * 1000,
      readyReplicas: ready,
      startingReplicas: readyAt.length - ready,
      concurrency: d.concurrency ?? 0,
      qps: d.qps ?? 0,
      completed: d.completed ?? d.qps ?? 0,
      held: d.held ?? 0,
      queueDepth: d.queueDepth === undefined ? 0 : d.queueDepth,
      cpu: d.cpu === undefined ? null : d.cpu,
      slotsPerReplica: d.slotsPerReplica === undefined ? null : d.slotsPerReplica,
      accelerator: d.accelerator === undefined ? null : d.accelerator,
      custom: d.custom ?? {},
    };
    runner.observe(sample);
    const every = options.decideEvery ?? 1;
    if ((t - start) % every === 0) {
      const decision = runner.decide(t * 1000, replicas, options.forecast?.(t));
      if (decision.replicas !== replicas) {
        events.push({ t, from: replicas, to: decision.replicas });
        if (decision.replicas > replicas) {
          for (let i = replicas; i < decision.replicas; i++) readyAt.push(t + startupSeconds);
        } else {
          // Removal takes the youngest first (the ones still starting).
          readyAt = readyAt.sort((a, b) => a - b).slice(0, decision.replicas);
        }
        replicas = decision.replicas;
      }
      steps.push({ t, sample, decision, replicas });
    }
    byT.set(t, replicas);
  }
  return {
    steps,
    events,
    at: (t) => {
      const value = byT.get(t);
      if (value === undefined) throw new Error(`second ${t} is not in the stream`);
      return value;
    },
  };
}
