// What a canary analysis says about each check, as data: the rollout controller records it with
// a rollback, `kiln rollout status` prints it, and tests assert on its fields, not on prose.
// Every reason names its check, its scope ('overall' or 'slice country=de'), the values it
// measured and the threshold it compared them with; `message` is the same in one sentence.

import type { InvalidReason } from './statistic-result.ts';

/** 'overall', or `slice ${key}=${value}` for one value of the configured slice key. */
export type CanaryScope = string;

/**
 * pass: within bounds. breach: out of bounds (any breach rolls back). insufficient-data: too
 * few observations to judge yet (wait). invalid-input: the observations cannot be compared as
 * given (wait, and say why).
 */
export type CheckOutcome = 'pass' | 'breach' | 'insufficient-data' | 'invalid-input';

interface ReasonBase {
  readonly scope: CanaryScope;
  readonly outcome: CheckOutcome;
  readonly message: string;
}

export interface RequestCountReason extends ReasonBase {
  readonly check: 'request-count';
  readonly outcome: 'insufficient-data';
  readonly baselineRequests: number;
  readonly canaryRequests: number;
  readonly minRequests: number;
}

export interface ErrorRateReason extends ReasonBase {
  readonly check: 'error-rate';
  readonly outcome: 'pass' | 'breach';
  readonly canaryErrors: number;
  readonly canaryRequests: number;
  readonly canaryErrorRate: number;
  readonly baselineErrors: number;
  readonly baselineRequests: number;
  readonly baselineErrorRate: number;
  /** One-sided p-value of "canary rate > baseline rate"; null when neither has variation. */
  readonly pValue: number | null;
  readonly alpha: number;
  readonly maxErrorRate: number;
}

export interface P99LatencyReason extends ReasonBase {
  readonly check: 'p99-latency';
  readonly outcome: 'pass' | 'breach' | 'insufficient-data';
  /** Within the sketch's relative accuracy; null when the sketch is empty. */
  readonly canaryP99Ms: number | null;
  readonly baselineP99Ms: number | null;
  readonly canaryLatencies: number;
  readonly maxP99Ms: number;
}

export interface OutputPsiReason extends ReasonBase {
  readonly check: 'output-psi';
  readonly outcome: CheckOutcome;
  /** PSI of canary outputs against baseline outputs; null when it could not be computed. */
  readonly psi: number | null;
  readonly baselineOutputs: number;
  readonly canaryOutputs: number;
  readonly maxPsi: number;
  /** Why the PSI could not be computed (e.g. 'bins-mismatch' for sketches of different accuracy). */
  readonly invalidReason?: InvalidReason;
}

/** Observations that cannot be judged at all: a slice on one side only, counts out of range. */
export interface InputReason extends ReasonBase {
  readonly check: 'input';
  readonly outcome: 'invalid-input';
  readonly problem: 'slice-on-one-side' | 'count-out-of-range' | 'invalid-thresholds';
}

export type CanaryReason =
  RequestCountReason | ErrorRateReason | P99LatencyReason | OutputPsiReason | InputReason;

export type CanaryDecision = 'promote-step' | 'wait' | 'rollback';

export interface CanaryVerdict {
  readonly decision: CanaryDecision;
  /**
   * What decided it: every breach for a rollback; every scope or check lacking data or
   * valid input for a wait; every check (all passed) for a promotion.
   */
  readonly reasons: readonly CanaryReason[];
  /** Every check made, in scope order (overall first, then slices by value). */
  readonly checks: readonly CanaryReason[];
}
