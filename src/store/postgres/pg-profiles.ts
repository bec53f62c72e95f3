// PostgreSQL table for reference profiles (migration 7), the counterpart of
// ../sqlite/sqlite-profiles.ts: one profile per live model version, replaced by a later set.

import { kilnError } from '../../core/errors.ts';
import { isoAt, type Clock } from '../../core/clock.ts';
import type { DataProfile } from '../../observability/profile/data-profile.ts';
import type { VersionProfile } from '../profile-records.ts';
import { profileRecordOf, type ProfileRow } from '../sqlite/sqlite-profiles.ts';
import type { PgDatabase } from './pg-database.ts';

export class PgProfileTables {
  constructor(
    private readonly db: PgDatabase,
    private readonly clock: Clock,
  ) {}

  /** KILN_VERSION_NOT_FOUND unless the version exists and is not deleted. */
  setVersionProfile(model: string, version: number, profile: DataProfile): Promise<VersionProfile> {
    return this.db.write(async (c) => {
      // One statement: the version looked up and the profile upserted under the write lock, so
      // a delete of the version cannot slip in between.
      const result = await c.query<ProfileRow>(
        `INSERT INTO version_profiles (version_id, profile_json, stored_at)
         SELECT v.id, $3, $4 FROM model_versions v JOIN models m ON m.id = v.model_id
         WHERE m.name = $1 AND v.version = $2 AND v.deleted_at IS NULL
         ON CONFLICT (version_id) DO UPDATE SET
           profile_json = excluded.profile_json, stored_at = excluded.stored_at
         RETURNING $1::text AS model, $2::bigint AS version, profile_json, stored_at`,
        [model, version, JSON.stringify(profile), isoAt(this.clock)],
      );
      const row = result.rows[0];
      if (row === undefined) throw kilnError('KILN_VERSION_NOT_FOUND', { model, version });
      return profileRecordOf(row);
    });
  }

  getVersionProfile(model: string, version: number): Promise<VersionProfile | null> {
    return this.db.read(async (c) => {
      const result = await c.query<ProfileRow>(
        `SELECT m.name AS model, v.version, p.profile_json, p.stored_at
         FROM version_profiles p JOIN model_versions v ON v.id = p.version_id
         JOIN models m ON m.id = v.model_id
         WHERE m.name = $1 AND v.version = $2 AND v.deleted_at IS NULL`,
        [model, version],
      );
      const row = result.rows[0];
      return row === undefined ? null : profileRecordOf(row);
    });
  }
}
