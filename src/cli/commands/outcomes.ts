// `kiln outcomes send ENDPOINT FILE`: true outcomes of earlier predictions, joined by request
// id to what the gateway reported (issue 15, D; docs/outcomes.md). The file is CSV with a
// header naming `requestId` (or `request_id`) and `value` (or `outcome`) columns, JSON (a
// list or {"outcomes": [...]}) or JSON lines of {requestId, value}; sent in batches of at most
// what the API takes per call.

import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { OutcomeReport } from '../../control/observability/quality-service.ts';
import { withClient } from '../context.ts';
import { describeFsError, localFileError } from '../errors.ts';
import { apiPath } from '../http-client.ts';
import { emit, type JsonOption } from '../output.ts';

/** As the API takes them per call (quality-service.ts). */
const outcomesPerCall = 10_000;

interface OutcomeLine {
  readonly requestId: unknown;
  readonly value: unknown;
}

export function registerOutcomesCommands(program: Command): void {
  const outcomes = program
    .command('outcomes')
    .description('true outcomes of earlier predictions, joined by request id (model quality)');

  outcomes
    .command('send')
    .description('send a batch of outcomes from a CSV, JSON or JSON-lines file')
    .argument('<endpoint>', 'endpoint name')
    .argument('<file>', 'CSV (requestId,value header) or JSON / JSON lines of {requestId, value}')
    .option('--json', 'print JSON')
    .action(async (endpoint: string, file: string, options: JsonOption, command: Command) => {
      const items = await readOutcomeFile(file);
      const total = await withClient(command, async (client) => {
        const counts: Record<string, number> = { joined: 0, unknown: 0, expired: 0, duplicate: 0 };
        const results: OutcomeReport['results'][number][] = [];
        for (let at = 0; at < items.length; at += outcomesPerCall) {
          const reply = await client.post<OutcomeReport>(
            apiPath('endpoints', endpoint, 'outcomes'),
            {
              outcomes: items.slice(at, at + outcomesPerCall),
            },
          );
          for (const [status, n] of Object.entries(reply.counts)) {
            counts[status] = (counts[status] ?? 0) + n;
          }
          results.push(...reply.results);
        }
        return { endpoint, counts, results };
      });
      emit(options, total, () => {
        const c = total.counts;
        const lines = [
          `${items.length} outcomes for endpoint ${endpoint}: ${c.joined} joined, ${c.unknown} unknown request id, ${c.expired} expired, ${c.duplicate} duplicate`,
        ];
        const notJoined = total.results.filter((r) => r.status !== 'joined');
        for (const r of notJoined.slice(0, 10)) lines.push(`  ${r.requestId}: ${r.status}`);
        if (notJoined.length > 10) lines.push(`  … and ${notJoined.length - 10} more`);
        return `${lines.join('\n')}\n`;
      });
    });
}

/** The outcomes of a file (see the header); the platform checks each. */
export async function readOutcomeFile(file: string): Promise<OutcomeLine[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw localFileError(`cannot read outcomes file ${file}: ${describeFsError(error)}`, error);
  }
  const trimmed = text.trim();
  if (trimmed.startsWith('[') || trimmed.startsWith('{')) return jsonOutcomes(file, trimmed);
  return csvOutcomes(file, trimmed);
}

function jsonOutcomes(file: string, text: string): OutcomeLine[] {
  try {
    if (text.startsWith('[')) return JSON.parse(text) as OutcomeLine[];
    let whole: unknown;
    try {
      whole = JSON.parse(text);
    } catch {
      whole = undefined; // one object per line: read below
    }
    const list = (whole as { outcomes?: unknown } | undefined)?.outcomes;
    if (Array.isArray(list)) return list as OutcomeLine[];
    if (whole !== undefined) return [whole as OutcomeLine];
    return text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as OutcomeLine);
  } catch (error) {
    throw localFileError(
      `outcomes file ${file} is not JSON (a list, {"outcomes": [...]}, or one object per line): ${(error as Error).message}`,
      error,
    );
  }
}

function csvOutcomes(file: string, text: string): OutcomeLine[] {
  const lines = text.split(/\r?\n/).filter((line) => line.trim() !== '');
  const header = (lines[0] ?? '').split(',').map((cell) => cell.trim().replace(/^"|"$/g, ''));
  const idColumn = header.findIndex((h) => h === 'requestId' || h === 'request_id');
  const valueColumn = header.findIndex((h) => h === 'value' || h === 'outcome');
  if (idColumn === -1 || valueColumn === -1) {
    throw localFileError(
      `outcomes file ${file}: the CSV header must name a requestId (or request_id) and a value (or outcome) column, got "${lines[0] ?? ''}"`,
    );
  }
  return lines.slice(1).map((line, i) => {
    const cells = line.split(',').map((cell) => cell.trim().replace(/^"|"$/g, ''));
    const raw = cells[valueColumn] ?? '';
    const value = raw === 'true' ? true : raw === 'false' ? false : raw === '' ? raw : Number(raw);
    if (typeof value === 'number' && Number.isNaN(value)) {
      throw localFileError(`outcomes file ${file}, line ${i + 2}: value "${raw}" is not a number`);
    }
    return { requestId: cells[idColumn] ?? '', value };
  });
}
