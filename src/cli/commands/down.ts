// `kiln down`: stop the serving platform of a home (--home) and everything it runs. A live
// `kiln up` is asked to shut down as Ctrl-C would; if it died, the gateway and workers it
// left serving are stopped. Prints one line; running it twice is fine (nothing to stop).

import type { Command } from 'commander';
import { integerOption } from '../arguments.ts';
import { homeOf } from '../context.ts';
import { CliError } from '../errors.ts';
import { writeOut } from '../output.ts';

export function registerDownCommand(program: Command): void {
  program
    .command('down')
    .description('stop the platform serving a home (--home), its gateway and its workers')
    .option(
      '--timeout-s <n>',
      'how long a running platform may take to stop before it is killed',
      integerOption(1),
      60,
    )
    .action(async (options: { timeoutS: number }, command: Command) => {
      const home = homeOf(command);
      // Imported here, not at the top, so the other commands never load the platform.
      const { stopHome, StopHomeError } = await import('../../control/stop-home.ts');
      let stopped;
      try {
        stopped = await stopHome(home, { timeoutMs: options.timeoutS * 1000 });
      } catch (error) {
        if (error instanceof StopHomeError) {
          throw new CliError(error.code, error.message, {
            hint: 'stop it yourself (its pid is in <home>/run/platform.pid), then run kiln down again',
            cause: error,
          });
        }
        throw error;
      }
      switch (stopped.kind) {
        case 'platform':
          writeOut(`stopped the platform serving ${home} (pid ${stopped.pid})\n`);
          return;
        case 'leftovers': {
          const { gateway, workers } = stopped.leftovers;
          const parts = [
            ...(gateway ? ['the gateway'] : []),
            ...(workers > 0 ? [`${workers} worker${workers === 1 ? '' : 's'}`] : []),
          ];
          writeOut(
            `stopped what a platform that died left serving ${home}: ${parts.join(' and ')}\n`,
          );
          return;
        }
        case 'nothing':
          writeOut(`no platform serves ${home}\n`);
          return;
      }
    });
}
