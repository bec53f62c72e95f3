// SQLite tables for cost accounting (issue 15, migration 10): replica time per endpoint, team,
// hour and instance shape, and LLM tokens per endpoint, team and hour. Merges add: the control
// plane samples every few seconds and each sample adds its seconds to the hour's row, so a
// restarted control plane carries on the same rows. SqliteStore delegates here.

import type Database from 'better-sqlite3';
import { kilnError } from '../../core/errors.ts';
import {
  usageHourMs,
  type TokenUsageRow,
  type UsageQuery,
  type UsageRow,
} from '../cost-records.ts';
import { timeMs } from './sqlite-traffic-data.ts';
import { timeRangeMs } from './time-keyed-rows.ts';

export interface UsageDbRow {
  endpoint: string;
  team: string;
  hour_ms: number;
  cpu: number;
  memory_gib: number;
  accelerator_type: string;
  accelerators: number;
  capacity: 'spot' | 'on-demand';
  replica_seconds: number;
  observed_seconds: number;
  cpu_busy_seconds: number;
}

export interface TokenDbRow {
  endpoint: string;
  team: string;
  hour_ms: number;
  prompt_tokens: number;
  completion_tokens: number;
}

function invalid(reason: string): never {
  throw kilnError('KILN_VALIDATION_FAILED', { reason });
}

function isAmount(n: number): boolean {
  return Number.isFinite(n) && n >= 0;
}

function hourOf(iso: string, what: string): number {
  const ms = timeMs(iso, what);
  if (ms % usageHourMs !== 0) invalid(`${what} ${iso} is not on a whole hour`);
  return ms;
}

/**
 * Usage row `index` checked (KILN_VALIDATION_FAILED naming it and the field); its hour in epoch
 * ms. Shared with the PostgreSQL store.
 */
export function checkedUsageHourMs(row: UsageRow, index: number): number {
  const what = `usage row ${index} (endpoint ${row.endpoint}, hour ${row.hourStart})`;
  const hourMs = hourOf(row.hourStart, `${what}: hourStart`);
  if (row.endpoint === '') invalid(`${what}: endpoint is empty`);
  for (const field of [
    'cpu',
    'memoryGiB',
    'accelerators',
    'replicaSeconds',
    'observedSeconds',
    'cpuBusySeconds',
  ] as const)
    if (!isAmount(row[field])) invalid(`${what}: ${field} must be a finite number >= 0`);
  if (row.capacity !== 'spot' && row.capacity !== 'on-demand')
    invalid(`${what}: capacity must be spot or on-demand`);
  return hourMs;
}

/** Token row `index` checked, as checkedUsageHourMs; its hour in epoch ms. */
export function checkedTokenHourMs(row: TokenUsageRow, index: number): number {
  const what = `token row ${index} (endpoint ${row.endpoint}, hour ${row.hourStart})`;
  const hourMs = hourOf(row.hourStart, `${what}: hourStart`);
  if (row.endpoint === '') invalid(`${what}: endpoint is empty`);
  for (const field of ['promptTokens', 'completionTokens'] as const)
    if (!Number.isSafeInteger(row[field]) || row[field] < 0)
      invalid(`${what}: ${field} must be an integer >= 0`);
  return hourMs;
}

export function usageRowOf(row: UsageDbRow): UsageRow {
  return {
    endpoint: row.endpoint,
    team: row.team,
    hourStart: new Date(row.hour_ms).toISOString(),
    cpu: row.cpu,
    memoryGiB: row.memory_gib,
    acceleratorType: row.accelerator_type,
    accelerators: row.accelerators,
    capacity: row.capacity,
    replicaSeconds: row.replica_seconds,
    observedSeconds: row.observed_seconds,
    cpuBusySeconds: row.cpu_busy_seconds,
  };
}

export function tokenUsageRowOf(row: TokenDbRow): TokenUsageRow {
  return {
    endpoint: row.endpoint,
    team: row.team,
    hourStart: new Date(row.hour_ms).toISOString(),
    promptTokens: row.prompt_tokens,
    completionTokens: row.completion_tokens,
  };
}

/** `[since, until)` and the endpoint filter as SQL. */
function window(query: UsageQuery): { where: string; args: Array<string | number> } {
  const { sinceMs, untilMs } = timeRangeMs(query);
  const args: Array<string | number> = [sinceMs, untilMs];
  let where = 'hour_ms >= ? AND hour_ms < ?';
  if (query.endpoint !== undefined) {
    where += ' AND endpoint = ?';
    args.push(query.endpoint);
  }
  return { where, args };
}

export class SqliteCostTables {
  constructor(private readonly db: Database.Database) {}

  mergeUsage(rows: readonly UsageRow[]): void {
    const write = this.db.prepare(
      `INSERT INTO cost_usage (endpoint, team, hour_ms, cpu, memory_gib, accelerator_type,
         accelerators, capacity, replica_seconds, observed_seconds, cpu_busy_seconds)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (endpoint, team, hour_ms, cpu, memory_gib, accelerator_type, accelerators,
         capacity) DO UPDATE SET
         replica_seconds = replica_seconds + excluded.replica_seconds,
         observed_seconds = observed_seconds + excluded.observed_seconds,
         cpu_busy_seconds = cpu_busy_seconds + excluded.cpu_busy_seconds`,
    );
    this.db.transaction(() => {
      for (const [i, row] of rows.entries()) {
        const hourMs = checkedUsageHourMs(row, i);
        write.run(
          row.endpoint,
          row.team,
          hourMs,
          row.cpu,
          row.memoryGiB,
          row.acceleratorType,
          row.accelerators,
          row.capacity,
          row.replicaSeconds,
          row.observedSeconds,
          row.cpuBusySeconds,
        );
      }
    })();
  }

  listUsage(query: UsageQuery): UsageRow[] {
    const { where, args } = window(query);
    const rows = this.db
      .prepare(`SELECT * FROM cost_usage WHERE ${where} ORDER BY hour_ms, endpoint`)
      .all(...args) as UsageDbRow[];
    return rows.map(usageRowOf);
  }

  mergeTokenUsage(rows: readonly TokenUsageRow[]): void {
    const write = this.db.prepare(
      `INSERT INTO cost_tokens (endpoint, team, hour_ms, prompt_tokens, completion_tokens)
       VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (endpoint, team, hour_ms) DO UPDATE SET
         prompt_tokens = prompt_tokens + excluded.prompt_tokens,
         completion_tokens = completion_tokens + excluded.completion_tokens`,
    );
    this.db.transaction(() => {
      for (const [i, row] of rows.entries()) {
        const hourMs = checkedTokenHourMs(row, i);
        write.run(row.endpoint, row.team, hourMs, row.promptTokens, row.completionTokens);
      }
    })();
  }

  listTokenUsage(query: UsageQuery): TokenUsageRow[] {
    const { where, args } = window(query);
    const rows = this.db
      .prepare(`SELECT * FROM cost_tokens WHERE ${where} ORDER BY hour_ms, endpoint`)
      .all(...args) as TokenDbRow[];
    return rows.map(tokenUsageRowOf);
  }

  pruneUsage(before: string): number {
    const beforeMs = timeMs(before, 'before');
    const usage = this.db.prepare('DELETE FROM cost_usage WHERE hour_ms < ?').run(beforeMs);
    const tokens = this.db.prepare('DELETE FROM cost_tokens WHERE hour_ms < ?').run(beforeMs);
    return usage.changes + tokens.changes;
  }
}
