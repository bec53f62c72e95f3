// Traffic management's settings: how long a version leaving the stable position stays warm,
// and how long the gateways' observation rows are kept. Read from the environment once, at
// `kiln up`; a bad value refuses the start.

import { kilnError } from '../../core/errors.ts';

export interface TrafficServiceOptions {
  /** How long a version that leaves the stable position keeps running (rollback target). */
  readonly warmGraceMs?: number;
  /** Observation rows older than this are deleted (checked at most every 10 minutes). */
  readonly observationRetentionMs?: number;
}

export const defaultWarmGraceMs = 10 * 60_000;
/**
 * The longest grace, per platform as per deploy (`warmGraceMs` of PUT …/endpoints): a version
 * kept running longer is a policy's job. Unbounded, a huge one made every warm `until` an
 * invalid date, so every deploy and rollback failed with a 500 after the deploy was written.
 */
export const maxWarmGraceMs = 7 * 24 * 3_600_000;
export const defaultObservationRetentionMs = 14 * 24 * 3_600_000;

/**
 * KILN_WARM_GRACE_MS (whole milliseconds, at most a week) and KILN_OBSERVATION_RETENTION_MS
 * (whole milliseconds >= 0); absent or empty: the defaults. A bad value is refused at start, not silently replaced.
 */
export function trafficOptionsFromEnv(env: NodeJS.ProcessEnv): TrafficServiceOptions {
  const read = (name: string, max = Number.MAX_SAFE_INTEGER): number | undefined => {
    const text = env[name];
    if (text === undefined || text.trim() === '') return undefined;
    const value = Number(text);
    if (!Number.isSafeInteger(value) || value < 0 || value > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? '>= 0' : `in [0, ${max}]`;
      throw kilnError('KILN_VALIDATION_FAILED', {
        reason: `${name} must be a whole number of milliseconds ${range}, got ${JSON.stringify(text)}`,
      });
    }
    return value;
  };
  const warmGraceMs = read('KILN_WARM_GRACE_MS', maxWarmGraceMs);
  const observationRetentionMs = read('KILN_OBSERVATION_RETENTION_MS');
  return {
    ...(warmGraceMs === undefined ? {} : { warmGraceMs }),
    ...(observationRetentionMs === undefined ? {} : { observationRetentionMs }),
  };
}
