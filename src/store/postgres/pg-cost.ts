// PostgreSQL tables for cost accounting (migration 10), the counterpart of
// ../sqlite/sqlite-cost.ts: replica time per endpoint, team, hour and shape, and LLM tokens per
// endpoint, team and hour. Merges add into the hour's row, one statement per row (one upsert
// cannot touch the same row twice, and a batch may carry one key twice).

import type { TokenUsageRow, UsageQuery, UsageRow } from '../cost-records.ts';
import {
  checkedTokenHourMs,
  checkedUsageHourMs,
  tokenUsageRowOf,
  usageRowOf,
  type TokenDbRow,
  type UsageDbRow,
} from '../sqlite/sqlite-cost.ts';
import { timeMs } from '../sqlite/sqlite-traffic-data.ts';
import { timeRangeMs } from '../sqlite/time-keyed-rows.ts';
import type { PgDatabase } from './pg-database.ts';

/** `[since, until)` and the endpoint filter as SQL. */
function window(query: UsageQuery): { where: string; args: Array<string | number> } {
  const { sinceMs, untilMs } = timeRangeMs(query);
  const args: Array<string | number> = [sinceMs, untilMs];
  let where = 'hour_ms >= $1 AND hour_ms < $2';
  if (query.endpoint !== undefined) {
    where += ' AND endpoint = $3';
    args.push(query.endpoint);
  }
  return { where, args };
}

export class PgCostTables {
  constructor(private readonly db: PgDatabase) {}

  /** Every row checked first: one bad row refuses the call and nothing is written. */
  async mergeUsage(rows: readonly UsageRow[]): Promise<void> {
    const hours = rows.map(checkedUsageHourMs);
    await this.db.write(async (c) => {
      for (const [i, row] of rows.entries()) {
        await c.query(
          `INSERT INTO cost_usage (endpoint, team, hour_ms, cpu, memory_gib, accelerator_type,
             accelerators, capacity, replica_seconds, observed_seconds, cpu_busy_seconds)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
           ON CONFLICT (endpoint, team, hour_ms, cpu, memory_gib, accelerator_type, accelerators,
             capacity) DO UPDATE SET
             replica_seconds = cost_usage.replica_seconds + excluded.replica_seconds,
             observed_seconds = cost_usage.observed_seconds + excluded.observed_seconds,
             cpu_busy_seconds = cost_usage.cpu_busy_seconds + excluded.cpu_busy_seconds`,
          [
            row.endpoint,
            row.team,
            hours[i],
            row.cpu,
            row.memoryGiB,
            row.acceleratorType,
            row.accelerators,
            row.capacity,
            row.replicaSeconds,
            row.observedSeconds,
            row.cpuBusySeconds,
          ],
        );
      }
    });
  }

  /** Oldest hour first, then by endpoint (and the rest of the key, so ties come in one order). */
  async listUsage(query: UsageQuery): Promise<UsageRow[]> {
    const { where, args } = window(query);
    const result = await this.db.read((c) =>
      c.query<UsageDbRow>(
        `SELECT * FROM cost_usage WHERE ${where}
         ORDER BY hour_ms, endpoint COLLATE "C", team COLLATE "C", cpu, memory_gib,
           accelerator_type COLLATE "C", accelerators, capacity COLLATE "C"`,
        args,
      ),
    );
    return result.rows.map(usageRowOf);
  }

  async mergeTokenUsage(rows: readonly TokenUsageRow[]): Promise<void> {
    const hours = rows.map(checkedTokenHourMs);
    await this.db.write(async (c) => {
      for (const [i, row] of rows.entries()) {
        await c.query(
          `INSERT INTO cost_tokens (endpoint, team, hour_ms, prompt_tokens, completion_tokens)
           VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (endpoint, team, hour_ms) DO UPDATE SET
             prompt_tokens = cost_tokens.prompt_tokens + excluded.prompt_tokens,
             completion_tokens = cost_tokens.completion_tokens + excluded.completion_tokens`,
          [row.endpoint, row.team, hours[i], row.promptTokens, row.completionTokens],
        );
      }
    });
  }

  async listTokenUsage(query: UsageQuery): Promise<TokenUsageRow[]> {
    const { where, args } = window(query);
    const result = await this.db.read((c) =>
      c.query<TokenDbRow>(
        `SELECT * FROM cost_tokens WHERE ${where}
         ORDER BY hour_ms, endpoint COLLATE "C", team COLLATE "C"`,
        args,
      ),
    );
    return result.rows.map(tokenUsageRowOf);
  }

  /** Deletes usage and token rows whose hour starts before `before`; returns how many. */
  async pruneUsage(before: string): Promise<number> {
    const beforeMs = timeMs(before, 'before');
    return this.db.write(async (c) => {
      const usage = await c.query('DELETE FROM cost_usage WHERE hour_ms < $1', [beforeMs]);
      const tokens = await c.query('DELETE FROM cost_tokens WHERE hour_ms < $1', [beforeMs]);
      return (usage.rowCount ?? 0) + (tokens.rowCount ?? 0);
    });
  }
}
