// Drift windows (issue 15, migration 8): what the workers of an endpoint sketched of the
// requests they served, merged per endpoint, version, window and slice by the control plane's
// drift collector. A window is [windowStart, windowStart + windowMs); the profile is a
// DataProfile (src/observability/profile/data-profile.ts). Kept after the endpoint is deleted
// (like demand rows), until pruned by age.

import type { DataProfile } from '../observability/profile/data-profile.ts';

export interface DriftWindowKey {
  readonly endpoint: string;
  readonly model: string;
  readonly version: number;
  /** ISO 8601, a multiple of windowMs since the epoch. */
  readonly windowStart: string;
  /** The slice value; null: every request (overall). */
  readonly slice: string | null;
}

/** What the collector adds into a window (merged with what the window holds). */
export interface NewDriftWindow extends DriftWindowKey {
  readonly windowMs: number;
  readonly profile: DataProfile;
}

export interface DriftWindowRecord extends NewDriftWindow {
  readonly updatedAt: string;
}

export interface DriftWindowQuery {
  readonly endpoint: string;
  /** Windows starting at or after this time (ISO 8601). */
  readonly since: string;
  readonly until?: string;
  /** 'overall' (default): overall rows only; 'slices': slice rows only; 'all': both. */
  readonly slices?: 'overall' | 'slices' | 'all';
}
