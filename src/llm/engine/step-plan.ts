// What the scheduler hands the engine loop each step and what the loop hands back: the plan
// (which sequences compute how many tokens, which were preempted or ended while scheduling)
// and the step's results (which sampled tokens ended their sequence). Counts only: token ids,
// logits and sampling stay with the loop.

import type { FinishReason } from './generation.ts';

export interface ScheduledSeq {
  readonly seqId: string;
  /** Positions computed this step: numComputed … numComputed + numTokens − 1. */
  readonly startPosition: number;
  readonly numTokens: number;
  readonly phase: 'prefill' | 'decode';
  /** The chunk reaches the end of the sequence: the model samples a token for it. */
  readonly samples: boolean;
}

export interface FinishedSeq {
  readonly seqId: string;
  readonly reason: FinishReason;
  readonly numOutputTokens: number;
}

/** A sequence moved from waiting to running this step. */
export interface AdmittedSeq {
  readonly seqId: string;
  /** Its tokens at admission: prompt + output so far. */
  readonly numTokens: number;
  /** Leading positions found in the prefix cache (not computed again). */
  readonly numCachedTokens: number;
}

export interface StepPlan {
  readonly scheduled: readonly ScheduledSeq[];
  /** Sum of `scheduled[i].numTokens` (≤ maxNumTokensPerStep). */
  readonly numScheduledTokens: number;
  /** Sent back to the waiting queue this step; their blocks are already freed. */
  readonly preempted: readonly string[];
  /** Those of `preempted` that were paused (over the paused-block budget, or for space). */
  readonly pausedEvictions: readonly string[];
  /** Admitted this step, with their prefix-cache hits. */
  readonly admitted: readonly AdmittedSeq[];
  /** Ended while scheduling ('kv_cache_full'); their blocks are already freed. */
  readonly finished: readonly FinishedSeq[];
}

export interface StepResult {
  readonly seqId: string;
  /** The sampled token ended the sequence (a stop token or stop string). */
  readonly stopped?: boolean;
}
