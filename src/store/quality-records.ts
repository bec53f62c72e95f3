// Predictions awaiting their outcome and joined outcomes (issue 15, D; migration 9). The
// gateway reports one prediction per request of an endpoint with `quality` settings; callers
// later report the true outcome by request id, which is joined to it here.

/** One prediction as the gateway reported it. */
export interface NewPrediction {
  readonly endpoint: string;
  readonly requestId: string;
  readonly model: string;
  readonly version: number;
  /** The score (classification) or value (regression) the answer gave. */
  readonly prediction: number;
  readonly slice: string | null;
  /** Epoch ms the request arrived at the gateway. */
  readonly atMs: number;
}

export interface OutcomeItem {
  readonly requestId: string;
  readonly value: number;
}

/**
 * What became of one reported outcome:
 *   joined    joined to its prediction now
 *   unknown   no prediction with that request id (never logged, or long pruned)
 *   expired   its prediction is older than the join window
 *   duplicate the prediction already has an outcome (or the id came twice in one batch)
 */
export type OutcomeJoinStatus = 'joined' | 'unknown' | 'expired' | 'duplicate';

export interface JoinedPrediction {
  readonly requestId: string;
  readonly model: string;
  readonly version: number;
  readonly prediction: number;
  readonly outcome: number;
  readonly slice: string | null;
  readonly atMs: number;
  readonly joinedAtMs: number;
}
