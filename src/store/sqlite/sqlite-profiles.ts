// SQLite table for reference profiles (migration 7): one profile per model version, stored as
// the JSON the API checked. SqliteStore delegates here. A deleted version's profile is kept
// (like its golden set) but no longer returned.

import type Database from 'better-sqlite3';
import { kilnError } from '../../core/errors.ts';
import { isoAt, type Clock } from '../../core/clock.ts';
import type { DataProfile } from '../../observability/profile/data-profile.ts';
import type { VersionProfile } from '../profile-records.ts';
import { liveVersionId } from './sqlite-traffic-data.ts';

export interface ProfileRow {
  model: string;
  version: number;
  profile_json: string;
  stored_at: string;
}

/** A stored row as the Store returns it (shared with the PostgreSQL store). */
export function profileRecordOf(row: ProfileRow): VersionProfile {
  return {
    model: row.model,
    version: row.version,
    // Written by setVersionProfile from a checked DataProfile: trusted as that shape.
    profile: JSON.parse(row.profile_json) as DataProfile,
    storedAt: row.stored_at,
  };
}

export class SqliteProfileTables {
  private readonly db: Database.Database;
  private readonly clock: Clock;

  constructor(db: Database.Database, clock: Clock) {
    this.db = db;
    this.clock = clock;
  }

  setVersionProfile(model: string, version: number, profile: DataProfile): VersionProfile {
    const put = this.db.transaction((): VersionProfile => {
      const versionId = liveVersionId(this.db, model, version);
      if (versionId === null) throw kilnError('KILN_VERSION_NOT_FOUND', { model, version });
      this.db
        .prepare(
          `INSERT INTO version_profiles (version_id, profile_json, stored_at) VALUES (?, ?, ?)
           ON CONFLICT (version_id) DO UPDATE SET
             profile_json = excluded.profile_json, stored_at = excluded.stored_at`,
        )
        .run(versionId, JSON.stringify(profile), isoAt(this.clock));
      const stored = this.getVersionProfile(model, version);
      if (stored === null) throw kilnError('KILN_INTERNAL', { reason: 'profile vanished' });
      return stored;
    });
    return put.immediate();
  }

  getVersionProfile(model: string, version: number): VersionProfile | null {
    const row = this.db
      .prepare(
        `SELECT m.name AS model, v.version, p.profile_json, p.stored_at
         FROM version_profiles p JOIN model_versions v ON v.id = p.version_id
         JOIN models m ON m.id = v.model_id
         WHERE m.name = ? AND v.version = ? AND v.deleted_at IS NULL`,
      )
      .get(model, version) as ProfileRow | undefined;
    return row === undefined ? null : profileRecordOf(row);
  }
}
