// `kiln pools ...`: shared worker pools (issue 14, docs/pools.md). A pool runs N workers that
// each hold the most recently used of the models deployed on it (`kiln deploy --pool NAME`)
// within a memory budget; `show` asks the workers what they hold now.

import { Option, type Command } from 'commander';
import type { PoolView } from '../../control/api/routes-pools.ts';
import type { PoolRecord } from '../../store/scaling-records.ts';
import { integerOption } from '../arguments.ts';
import { byteSize } from './deploy-llm-flags.ts';
import { withClient } from '../context.ts';
import { apiPath } from '../http-client.ts';
import { emit, humanSize, renderTable, shortTime, type JsonOption } from '../output.ts';

export function registerPoolsCommands(program: Command): void {
  const pools = program
    .command('pools')
    .description('shared worker pools: many rarely called models on a few workers');

  pools
    .command('create')
    .description('create a pool (or change its workers, budget or team)')
    .argument('<name>', 'pool name')
    .addOption(
      new Option('--workers <n>', 'pool workers to run (1-64)')
        .argParser(integerOption(1))
        .makeOptionMandatory(),
    )
    .addOption(
      new Option(
        '--memory-budget <size>',
        'model memory each worker holds before evicting the least recently used, e.g. 512MiB, 2GiB',
      )
        .argParser(byteSize)
        .makeOptionMandatory(),
    )
    .option('--team <team>', 'the team whose endpoints may use it (default: default)')
    .option('--json', 'print JSON')
    .action(
      async (
        name: string,
        options: JsonOption & { workers: number; memoryBudget: number; team?: string },
        command: Command,
      ) => {
        const body = {
          workers: options.workers,
          memoryBudgetBytes: options.memoryBudget,
          ...(options.team === undefined ? {} : { team: options.team }),
        };
        const pool = await withClient(command, (client) =>
          client.put<PoolView>(apiPath('pools', name), body),
        );
        emit(options, pool, () => `pool ${pool.name}: ${poolText(pool)}\n`);
      },
    );

  pools
    .command('list')
    .description('list pools')
    .option('--json', 'print JSON')
    .action(async (options: JsonOption, command: Command) => {
      const result = await withClient(command, (client) =>
        client.get<{ items: PoolView[] }>(apiPath('pools')),
      );
      emit(options, result, () =>
        result.items.length === 0
          ? 'no pools\n'
          : renderTable(
              ['pool', 'team', { header: 'workers', align: 'right' }, 'budget', 'endpoints'],
              result.items.map((p) => [
                p.name,
                p.team,
                `${p.workerStates.filter((w) => w.state === 'ready').length}/${p.workers}`,
                humanSize(p.memoryBudgetBytes),
                String(p.endpoints.length),
              ]),
            ),
      );
    });

  pools
    .command('show')
    .description('what each worker of a pool holds: models, bytes, last use, loads, evictions')
    .argument('<name>', 'pool name')
    .option('--json', 'print JSON')
    .action(async (name: string, options: JsonOption, command: Command) => {
      const pool = await withClient(command, (client) =>
        client.get<PoolView>(apiPath('pools', name)),
      );
      emit(options, pool, () => poolDetails(pool));
    });

  pools
    .command('delete')
    .description('delete a pool (refused while endpoints are deployed on it)')
    .argument('<name>', 'pool name')
    .option('--json', 'print JSON')
    .action(async (name: string, options: JsonOption, command: Command) => {
      const removed = await withClient(command, (client) =>
        client.delete<PoolRecord>(apiPath('pools', name)),
      );
      emit(options, removed, () => `pool ${removed.name} deleted\n`);
    });
}

function poolText(pool: PoolRecord): string {
  return `${pool.workers} worker${pool.workers === 1 ? '' : 's'}, ${humanSize(pool.memoryBudgetBytes)} of models each, team ${pool.team}`;
}

export function poolDetails(pool: PoolView): string {
  const lines = [
    `pool ${pool.name}: ${poolText(pool)}`,
    `endpoints: ${pool.endpoints.length === 0 ? 'none' : pool.endpoints.join(', ')}`,
    '',
  ];
  const workers = renderTable(
    [
      'worker',
      'state',
      { header: 'models', align: 'right' },
      'held',
      { header: 'loads', align: 'right' },
      { header: 'evictions', align: 'right' },
      { header: 'hits', align: 'right' },
      { header: 'misses', align: 'right' },
    ],
    pool.workerStates.map((w) => {
      const s = w.status;
      return [
        w.id,
        w.reason === null ? w.state : `${w.state} (${w.reason})`,
        s === null ? '-' : String(s.models.length),
        s === null ? '-' : `${humanSize(s.residentBytes)} / ${humanSize(s.memoryBudgetBytes)}`,
        s === null ? '-' : String(s.loads),
        s === null ? '-' : String(s.evictions),
        s === null ? '-' : String(s.hits),
        s === null ? '-' : String(s.misses),
      ];
    }),
  );
  lines.push(workers.trimEnd(), '');
  const held = pool.workerStates.flatMap((w) =>
    (w.status?.models ?? []).map((m) => [
      w.id,
      m.endpoint,
      humanSize(m.bytes),
      shortTime(m.lastUsedAt),
      String(m.requests),
    ]),
  );
  lines.push(
    held.length === 0
      ? 'no model loaded'
      : renderTable(
          ['worker', 'endpoint', 'bytes', 'last use', { header: 'requests', align: 'right' }],
          held,
        ).trimEnd(),
  );
  return `${lines.join('\n')}\n`;
}
