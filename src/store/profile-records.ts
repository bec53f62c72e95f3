// Reference profiles as the store keeps them (issue 15 B, migration 7): one per model version,
// the profile JSON as the API checked it (src/observability/profile/parse-data-profile.ts).

import type { DataProfile } from '../observability/profile/data-profile.ts';

export interface VersionProfile {
  readonly model: string;
  readonly version: number;
  readonly profile: DataProfile;
  /** When this profile was stored (a later PUT replaces it). */
  readonly storedAt: string;
}
