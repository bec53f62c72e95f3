// Persisted SLO state (issue 15, F; docs/slo.md): the SLI counts per endpoint and minute the
// burn rates are computed from, each alert's current state (so a restarted control plane
// neither re-sends a firing alert nor forgets to send its resolution), and the history of
// alert transitions (`kiln slo status`).

/** One endpoint's SLI counts over one minute, summed over gateways. */
export interface SliMinuteRow {
  readonly endpoint: string;
  /** ISO time on a whole minute. */
  readonly minuteStart: string;
  readonly requests: number;
  readonly serverErrors: number;
  readonly latencyTotal: number;
  readonly latencyGood: number;
}

export type SloAlertState = 'firing' | 'resolved';

/** An alert's current state (one per endpoint and alert name). */
export interface SloAlertRecord {
  readonly endpoint: string;
  /** `availability-page`, `latency-ticket`, `drift` (slo-evaluation.ts AlertName). */
  readonly alert: string;
  readonly severity: string;
  readonly state: SloAlertState;
  /** When it entered this state (ISO 8601). */
  readonly since: string;
  /** The last evaluation's one-line summary and figures (JSON). */
  readonly summary: string;
  readonly detail: unknown;
  readonly updatedAt: string;
}

export type SloAlertUpsert = Omit<SloAlertRecord, 'updatedAt'>;

/** One transition of an alert. */
export interface SloAlertEvent {
  readonly id: number;
  readonly endpoint: string;
  readonly alert: string;
  readonly severity: string;
  readonly state: SloAlertState;
  readonly at: string;
  readonly summary: string;
  readonly detail: unknown;
}

export type NewSloAlertEvent = Omit<SloAlertEvent, 'id'>;
