// `kiln placement show`: the inventory's nodes, their accelerators, what each holds and what
// is free, and the replicas waiting for room. `kiln placement reclaim NODE`: takes a node away
// as a spot reclaim would (drills): its replicas are replaced elsewhere before they stop.

import type { Command } from 'commander';
import type { PlacementView } from '../../control/placement/placer.ts';
import { withClient } from '../context.ts';
import { apiPath } from '../http-client.ts';
import { emit, renderTable, type JsonOption } from '../output.ts';

export type PlacementAnswer = PlacementView & {
  readonly pending: ReadonlyArray<{ id: string; endpoint: string; reason: string | null }>;
};

export function registerPlacementCommands(program: Command): void {
  const placement = program
    .command('placement')
    .description('nodes, accelerators and what runs where');

  placement
    .command('show')
    .description('list the nodes, their devices, what each holds and what is free')
    .option('--json', 'print JSON')
    .action(async (options: JsonOption, command: Command) => {
      const view = await withClient(command, (client) =>
        client.get<PlacementAnswer>(apiPath('placement')),
      );
      emit(options, view, () => placementText(view));
    });

  placement
    .command('reclaim')
    .description(
      'take a node away (a spot reclaim drill): its replicas are replaced on other nodes, then stop',
    )
    .argument('<node>', 'node name, as `kiln placement show` lists it')
    .option('--json', 'print JSON')
    .action(async (node: string, options: JsonOption, command: Command) => {
      const result = await withClient(command, (client) =>
        client.post<{ node: string; replicas: string[] }>(
          apiPath('placement', 'nodes', node, 'reclaim'),
        ),
      );
      emit(
        options,
        result,
        () =>
          `node ${result.node} reclaimed: ${
            result.replicas.length === 0
              ? 'no replica ran there'
              : `replacing ${result.replicas.join(', ')} on other nodes`
          }\n`,
      );
    });
}

export function placementText(view: PlacementAnswer): string {
  let text = `inventory: ${view.source ?? 'this machine (none declared)'}\n\n`;
  text += renderTable(
    [
      'node',
      'capacity',
      'state',
      { header: 'cpus free', align: 'right' },
      { header: 'memory free', align: 'right' },
      'replicas',
    ],
    view.nodes.map((n) => [
      n.name,
      n.capacity,
      n.reclaimed ? 'reclaimed' : 'ready',
      `${amount(n.cpuFree)}/${amount(n.cpus)}`,
      `${amount(n.memoryFreeGiB)}/${amount(n.memoryGiB)} GiB`,
      n.replicas.map((r) => r.id).join(', ') || '-',
    ]),
  );
  const devices = view.nodes.flatMap((n) => n.accelerators.map((d) => ({ node: n.name, d })));
  if (devices.length > 0) {
    text +=
      '\nAccelerators\n' +
      renderTable(
        [
          'node',
          { header: 'device', align: 'right' },
          'type',
          'sharing',
          { header: 'free', align: 'right' },
          'holds',
        ],
        devices.map(({ node, d }) => [
          node,
          d.index,
          d.type,
          d.sharing === 'mig' ? `mig ${(d.mig ?? []).map((m) => m.profile).join('+')}` : d.sharing,
          `${amount(d.freeGiB)}/${amount(d.memoryGiB)} GiB`,
          d.holders
            .map(
              (h) =>
                `${h.replica} (${h.mig ?? (h.whole ? 'whole' : `${amount(h.memoryGiB)} GiB`)})`,
            )
            .join(', ') || '-',
        ]),
      );
  }
  if (view.pending.length > 0) {
    text +=
      '\nWaiting for room\n' +
      renderTable(
        ['replica', 'endpoint', 'reason'],
        view.pending.map((p) => [p.id, p.endpoint, p.reason]),
      );
  }
  return text;
}

/**
 * A size or count for the table: at most two decimals, no trailing zeros (a machine's memory is
 * 23.540584564208984 GiB as the OS reports it; free and total must read alike).
 */
function amount(value: number): string {
  return String(Math.round(value * 100) / 100);
}
