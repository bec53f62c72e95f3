// SQLite table for per-team rate limits (migration 3). SqliteStore delegates here.

import type Database from 'better-sqlite3';
import { isoAt, type Clock } from '../../core/clock.ts';
import type { NewTeamLimit, TeamLimitRecord } from '../serving-records.ts';

export interface TeamLimitRow {
  team: string;
  requests_per_second: number;
  burst: number;
  updated_at: string;
}

export function toTeamLimit(row: TeamLimitRow): TeamLimitRecord {
  return {
    team: row.team,
    requestsPerSecond: row.requests_per_second,
    burst: row.burst,
    updatedAt: row.updated_at,
  };
}

export class SqliteTeamLimitTables {
  constructor(
    private readonly db: Database.Database,
    private readonly clock: Clock,
  ) {}

  set(limit: NewTeamLimit): TeamLimitRecord {
    const row = this.db
      .prepare(
        `INSERT INTO team_limits (team, requests_per_second, burst, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (team) DO UPDATE SET requests_per_second = excluded.requests_per_second,
           burst = excluded.burst, updated_at = excluded.updated_at
         RETURNING *`,
      )
      .get(limit.team, limit.requestsPerSecond, limit.burst, isoAt(this.clock)) as TeamLimitRow;
    return toTeamLimit(row);
  }

  delete(team: string): TeamLimitRecord | null {
    const row = this.db.prepare('DELETE FROM team_limits WHERE team = ? RETURNING *').get(team) as
      TeamLimitRow | undefined;
    return row === undefined ? null : toTeamLimit(row);
  }

  list(): TeamLimitRecord[] {
    return (this.db.prepare('SELECT * FROM team_limits ORDER BY team').all() as TeamLimitRow[]).map(
      toTeamLimit,
    );
  }
}
