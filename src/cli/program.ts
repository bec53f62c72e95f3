// The `kiln` command tree and its runner. Usage errors (unknown command or option, missing
// argument, bad choice) are commander's; they are rendered like every other error, as one
// `error: … (KILN_USAGE)` line plus a hint, and exit 2.
//
// Global options (--url, --home, --token) go before the command or anywhere after it: the program
// reads only those before the command name (positional options), and every subcommand also
// takes them (hidden). So a subcommand can have an option named like a program one:
// `kiln predict fraud --version 3` is predict's --version, not the program's.

import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { registerAutoscaleCommands } from './commands/autoscale.ts';
import { registerCostCommands } from './commands/cost.ts';
import { registerDeployCommand } from './commands/deploy.ts';
import { registerDownCommand } from './commands/down.ts';
import { registerDriftCommands } from './commands/drift.ts';
import { registerEndpointsCommands } from './commands/endpoints.ts';
import { registerExperimentsCommands } from './commands/experiments.ts';
import { registerGcCommand } from './commands/gc.ts';
import { registerHealthCommand } from './commands/health.ts';
import { registerK8sCommands } from './commands/k8s.ts';
import { registerKeysCommands } from './commands/keys.ts';
import { registerLlmCommands } from './commands/llm.ts';
import { registerModelsCommands } from './commands/models.ts';
import { registerOutcomesCommands } from './commands/outcomes.ts';
import { registerQualityCommands } from './commands/quality.ts';
import { registerObserveCommands } from './commands/observe.ts';
import { registerPlacementCommands } from './commands/placement.ts';
import { registerPolicyCommands } from './commands/policy.ts';
import { registerPoolsCommands } from './commands/pools.ts';
import { registerPredictCommand } from './commands/predict.ts';
import { registerRolloutCommands } from './commands/rollout.ts';
import { registerSimulateCommand } from './commands/simulate.ts';
import { registerSloCommands } from './commands/slo.ts';
import { registerTeamsCommands } from './commands/teams.ts';
import { registerTrafficCommands } from './commands/traffic.ts';
import { registerUpCommand } from './commands/up.ts';
import { registerAuditCommand, registerTokensCommands } from './commands/tokens.ts';
import { renderError } from './errors.ts';

function packageVersion(): string {
  const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

const urlOption = [
  '--url <url>',
  'platform URL (default: $KILN_URL or http://127.0.0.1:8080)',
] as const;
const homeOption = [
  '--home <dir>',
  'Kiln home folder for `up`, `down` and keys (default: $KILN_HOME or ./.kiln)',
] as const;
const tokenOption = [
  '--token <token>',
  'control-plane token (default: $KILN_TOKEN, or for a platform on this machine <home>/admin.token)',
] as const;
const globalOptions = [urlOption, homeOption, tokenOption] as const;

export function buildProgram(): Command {
  const program = new Command('kiln')
    .description('Kiln: register, sign and serve models')
    .version(packageVersion(), '-V, --version')
    .option(...urlOption)
    .option(...homeOption)
    .option(...tokenOption)
    .enablePositionalOptions()
    .showSuggestionAfterError(true)
    .configureHelp({ showGlobalOptions: true })
    // Errors are rendered by runCli from the thrown CommanderError, so print none here.
    .configureOutput({ outputError: () => undefined })
    .exitOverride();
  // Subcommands copy these settings when created, so configure before registering.
  registerUpCommand(program);
  registerDownCommand(program);
  registerModelsCommands(program);
  registerDeployCommand(program);
  registerRolloutCommands(program);
  registerEndpointsCommands(program);
  registerPoolsCommands(program);
  registerTrafficCommands(program);
  registerAutoscaleCommands(program);
  registerSloCommands(program);
  registerObserveCommands(program);
  registerExperimentsCommands(program);
  registerPredictCommand(program);
  registerKeysCommands(program);
  registerPolicyCommands(program);
  registerTeamsCommands(program);
  registerGcCommand(program);
  registerTokensCommands(program);
  registerAuditCommand(program);
  registerHealthCommand(program);
  registerLlmCommands(program);
  registerPlacementCommands(program);
  registerSimulateCommand(program);
  registerCostCommands(program);
  registerOutcomesCommands(program);
  registerQualityCommands(program);
  registerDriftCommands(program);
  registerK8sCommands(program);
  acceptGlobalOptionsEverywhere(program);
  return program;
}

/** Adds hidden --url / --home / --token to every subcommand, so `kiln models list --url X` works. */
function acceptGlobalOptionsEverywhere(command: Command): void {
  for (const sub of command.commands) {
    for (const [flags, description] of globalOptions) {
      const long = flags.split(' ')[0];
      if (sub.options.some((o) => o.long === long)) continue;
      sub.addOption(new Option(flags, description).hideHelp());
    }
    acceptGlobalOptionsEverywhere(sub);
  }
}

/** Runs one command line (without `node kiln`); returns the exit code. */
export async function runCli(args: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync([...args], { from: 'user' });
    return 0;
  } catch (error) {
    const rendered = renderError(error, commandPath(program, args));
    process.stderr.write(rendered.text);
    return rendered.exitCode;
  }
}

/** `kiln models register` for `models register x --name y`: the deepest command named. */
export function commandPath(program: Command, args: readonly string[]): string {
  const names = [program.name()];
  let current = program;
  for (const arg of args) {
    if (arg.startsWith('-')) continue;
    // Option values (`--url x`) and operands match no command; skip them.
    const next = current.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (next === undefined) continue;
    names.push(next.name());
    current = next;
  }
  return names.join(' ');
}
