// One evaluation of an endpoint's SLO at one instant: each alert's condition (burn-rate pairs
// per SLI and severity, the drift ceiling) with the figures behind it. Pure; the control
// plane's SloService feeds it the stored minutes and drift readings, then applies the
// conditions to the stored alert states (alert-transitions.ts).

import type { SloConfig } from '../../store/observability-config.ts';
import {
  burnRate,
  burnRules,
  windowCounts,
  windowName,
  type BurnSeverity,
  type SliMinute,
  type SliName,
} from './burn-rate.ts';

/** A feature's or output's latest PSI against the reference profile (drift's results). */
export interface DriftReading {
  readonly version: number;
  /** `feature NAME` or `output NAME`, as drift reports them. */
  readonly name: string;
  readonly psi: number;
}

/** `availability-page`, `latency-ticket`, … and `drift`. */
export type AlertName = `${SliName}-${BurnSeverity}` | 'drift';

export type AlertSeverity = BurnSeverity;

export interface WindowFigures {
  readonly window: string;
  readonly total: number;
  readonly bad: number;
  readonly burnRate: number;
}

export interface AlertCondition {
  readonly alert: AlertName;
  readonly severity: AlertSeverity;
  /** Whether the alert's condition holds now. */
  readonly active: boolean;
  /** One line: what is measured against what. */
  readonly summary: string;
  /** Burn alerts: the long and short windows; drift: the readings over the ceiling. */
  readonly detail: {
    readonly factor?: number;
    readonly windows?: readonly WindowFigures[];
    readonly overCeiling?: readonly DriftReading[];
  };
}

export interface SliStatus {
  readonly sli: SliName;
  readonly objective: number;
  /** Every window any rule reads, by name (`5m`, `30m`, `1h`, `6h`). */
  readonly windows: readonly WindowFigures[];
}

export interface SloEvaluation {
  readonly atMs: number;
  readonly slis: readonly SliStatus[];
  readonly conditions: readonly AlertCondition[];
}

/** Drift readings listed in an alert at most (the highest PSI first). */
const maxDriftListed = 10;

function objectiveOf(slo: SloConfig, sli: SliName): number | null {
  return sli === 'availability' ? slo.availability : slo.latencyTarget;
}

function figures(
  minutes: readonly SliMinute[],
  sli: SliName,
  objective: number,
  nowMs: number,
  windowMs: number,
): WindowFigures {
  const counts = windowCounts(minutes, sli, nowMs, windowMs);
  return { window: windowName(windowMs), ...counts, burnRate: burnRate(counts, objective) };
}

function describe(sli: SliName, slo: SloConfig, objective: number): string {
  return sli === 'availability'
    ? `availability objective ${objective}`
    : `latency objective ${objective} within ${slo.latencyMs} ms`;
}

export function evaluateSlo(
  slo: SloConfig,
  minutes: readonly SliMinute[],
  nowMs: number,
  drift: readonly DriftReading[] = [],
): SloEvaluation {
  const slis: SliStatus[] = [];
  const conditions: AlertCondition[] = [];
  for (const sli of ['availability', 'latency'] as const) {
    const objective = objectiveOf(slo, sli);
    if (objective === null) continue;
    const windowMs = [...new Set(burnRules.flatMap((r) => [r.shortMs, r.longMs]))].sort(
      (a, b) => a - b,
    );
    slis.push({
      sli,
      objective,
      windows: windowMs.map((ms) => figures(minutes, sli, objective, nowMs, ms)),
    });
    for (const rule of burnRules) {
      const long = figures(minutes, sli, objective, nowMs, rule.longMs);
      const short = figures(minutes, sli, objective, nowMs, rule.shortMs);
      const active = long.burnRate > rule.factor && short.burnRate > rule.factor;
      conditions.push({
        alert: `${sli}-${rule.severity}`,
        severity: rule.severity,
        active,
        summary:
          `${describe(sli, slo, objective)}: burn rate ${long.burnRate.toFixed(2)} over ${long.window}, ` +
          `${short.burnRate.toFixed(2)} over ${short.window} (alert above ${rule.factor} in both)`,
        detail: { factor: rule.factor, windows: [long, short] },
      });
    }
  }
  if (slo.driftPsiCeiling !== null) {
    const ceiling = slo.driftPsiCeiling;
    const over = drift
      .filter((reading) => reading.psi > ceiling)
      .sort((a, b) => b.psi - a.psi)
      .slice(0, maxDriftListed);
    const worst = over[0];
    conditions.push({
      alert: 'drift',
      // Drift is a model-quality question for its owners, not an outage: a ticket.
      severity: 'ticket',
      active: worst !== undefined,
      summary:
        worst === undefined
          ? `no feature or output above PSI ${ceiling}`
          : `${over.length} feature(s)/output(s) above PSI ${ceiling}; highest ${worst.name} ` +
            `of version ${worst.version} at ${worst.psi.toFixed(3)}`,
      detail: { overCeiling: over },
    });
  }
  return { atMs: nowMs, slis, conditions };
}
