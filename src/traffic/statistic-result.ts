// What the traffic statistics return: a result, or the reason the input cannot give one.
// Bad input from a caller (an empty group, a count above its trials, bins that do not line up)
// is an expected outcome, so it is a value the report can show, never a NaN that travels on
// into a rollback decision unnoticed.

export type InvalidReason =
  | 'empty-group' // a group with no observations (n = 0)
  | 'too-few-observations' // fewer than the statistic needs (Welch: n >= 2 per group)
  | 'zero-variance' // no spread in either group: the test statistic is undefined
  | 'count-out-of-range' // successes < 0, successes > trials, or not an integer
  | 'probability-out-of-range' // a rate outside [0, 1] (or outside (0, 1) where needed)
  | 'bins-mismatch' // two distributions over different bins
  | 'not-finite' // NaN or an infinity among the inputs
  | 'invalid-parameter'; // alpha, power, confidence, effect or bin count out of range

export interface InvalidInput {
  readonly ok: false;
  readonly reason: InvalidReason;
  /** One sentence naming the offending input, for the report and the API's 4xx. */
  readonly message: string;
}

export type StatisticResult<T extends object> = ({ readonly ok: true } & T) | InvalidInput;

export function invalidInput(reason: InvalidReason, message: string): InvalidInput {
  return { ok: false, reason, message };
}

/** A confidence level must lie strictly between 0 and 1. */
export function checkConfidence(confidence: number): InvalidInput | null {
  if (!(confidence > 0 && confidence < 1)) {
    return invalidInput('invalid-parameter', `confidence ${confidence} must lie in (0, 1)`);
  }
  return null;
}
