// Multi-window, multi-burn-rate SLO alerting (Google SRE workbook, "Alerting on SLOs", the
// recommended parameters), over per-minute SLI counts. Pure: times come from the caller.
//
// The burn rate of a window is how fast the error budget is spent there:
//
//   burn rate = (bad / total over the window) / (1 - objective)
//
// 1 spends exactly the budget over the SLO period; 14.4 spends 2 % of a 30-day budget in an
// hour. An alert fires while BOTH its long and its short window burn above its factor: the
// long window says the burn is significant, the short one that it is still happening (so
// the alert resolves within minutes of a fix, not an hour later).
//
//   severity  long  short  factor   budget spent (30 d) before it fires
//   page      1 h   5 min  14.4     2 %
//   ticket    6 h   30 min 6        5 %
//
// Windows are to the minute: a window of W at time t sums the minute rows starting in
// [t - W, t) — the current minute's row counts as far as it has been filled.

/** One endpoint's SLI counts over one minute (summed over gateways). */
export interface SliMinute {
  /** Start of the minute, ms since the epoch (a multiple of 60 000). */
  readonly minuteMs: number;
  /** Answers (any status but those the door refused for the caller's own reasons). */
  readonly requests: number;
  /** Answers with a server error: 5xx, timeouts included. */
  readonly serverErrors: number;
  /** 200 answers, the latency SLI's total. */
  readonly latencyTotal: number;
  /** 200 answers within the objective's latencyMs. */
  readonly latencyGood: number;
}

export type SliName = 'availability' | 'latency';
export type BurnSeverity = 'page' | 'ticket';

export interface BurnRule {
  readonly severity: BurnSeverity;
  readonly longMs: number;
  readonly shortMs: number;
  readonly factor: number;
}

export const burnRules: readonly BurnRule[] = [
  { severity: 'page', longMs: 3_600_000, shortMs: 300_000, factor: 14.4 },
  { severity: 'ticket', longMs: 21_600_000, shortMs: 1_800_000, factor: 6 },
];

/** The longest window any rule reads: what the evaluator must load. */
export const longestBurnWindowMs = Math.max(...burnRules.map((rule) => rule.longMs));

/** Window names as Prometheus writes durations (rule names, metric labels, reports). */
export function windowName(ms: number): string {
  return ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : `${ms / 60_000}m`;
}

export interface WindowCounts {
  readonly total: number;
  readonly bad: number;
}

/** The SLI's good/bad counts over [nowMs - windowMs, nowMs). */
export function windowCounts(
  minutes: readonly SliMinute[],
  sli: SliName,
  nowMs: number,
  windowMs: number,
): WindowCounts {
  let total = 0;
  let bad = 0;
  const fromMs = nowMs - windowMs;
  for (const minute of minutes) {
    if (minute.minuteMs < fromMs || minute.minuteMs >= nowMs) continue;
    if (sli === 'availability') {
      total += minute.requests;
      bad += minute.serverErrors;
    } else {
      total += minute.latencyTotal;
      bad += minute.latencyTotal - minute.latencyGood;
    }
  }
  return { total, bad };
}

/** The burn rate of a window; 0 when it saw no request (no traffic burns no budget). */
export function burnRate(counts: WindowCounts, objective: number): number {
  if (counts.total === 0) return 0;
  return counts.bad / counts.total / (1 - objective);
}
