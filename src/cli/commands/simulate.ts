// `kiln simulate`: replays a request-rate trace through scaling policies and a queueing model
// of replicas (src/simulator/) and prints them side by side; `--plot` writes an SVG. Runs on
// this machine; only `--endpoint E` talks to the platform (GET /api/v1/endpoints/E/scale for
// the endpoint's measured latencies and replica start-up time).
//
//   --model FILE       the replicas: concurrency, service times, instance types (start-up, price)
//   --endpoint E       service times measured at the gateways for E (and its measured start-up);
//                      with --model the file's other fields stay, else one instance type
//                      `measured` (--concurrency-per-replica, --usd-per-hour)

import { readFile, writeFile } from 'node:fs/promises';
import { InvalidArgumentError, type Command } from 'commander';
import { KilnError, type ErrorCode, type ErrorParams } from '../../core/errors.ts';
import { policyFromFile } from '../../simulator/policy-file.ts';
import { simulate, type SimulatedPolicy } from '../../simulator/simulate.ts';
import { parseSimulationModel, type SimulationModel } from '../../simulator/simulation-model.ts';
import { renderSimulationSvg } from '../../simulator/simulation-plot.ts';
import { formatSimulationTable } from '../../simulator/simulation-table.ts';
import { parseTrace, type Trace } from '../../simulator/trace.ts';
import type { HistogramSketchSnapshot } from '../../traffic/histogram-sketch.ts';
import { integerOption, parseNumber } from '../arguments.ts';
import { withClient } from '../context.ts';
import { CliError, describeFsError, localFileError, usageError } from '../errors.ts';
import { apiPath } from '../http-client.ts';
import { emit, type JsonOption } from '../output.ts';

interface SimulateOptions extends JsonOption {
  readonly trace: string;
  readonly policy: readonly string[];
  readonly model?: string;
  readonly endpoint?: string;
  readonly sloMs: number;
  readonly plot?: string;
  readonly seed: number;
  readonly concurrencyPerReplica?: number;
  readonly usdPerHour?: number;
}

/** What `kiln simulate --endpoint` reads of GET /api/v1/endpoints/{e}/scale. */
interface EndpointScaleView {
  readonly startup?: { readonly measuredP90Ms?: number | null; readonly usedMs?: number };
  readonly latencyMs?: { readonly count?: number; readonly sketch?: HistogramSketchSnapshot };
}

export function registerSimulateCommand(program: Command): void {
  program
    .command('simulate')
    .description(
      'replay a request-rate trace through scaling policies and a queueing model of replicas',
    )
    .requiredOption('--trace <file>', 'trace: CSV `t_seconds,rps` rows or JSON [{"t", "rps"}]')
    .requiredOption(
      '--policy <file>',
      'policy file {name, kind: kiln|hpa, policy, instanceType?} (repeat to compare)',
      (file: string, previous: string[] = []) => [...previous, file],
    )
    .option('--model <file>', 'model file: concurrencyPerReplica, serviceTimeMs, instanceTypes')
    .option('--endpoint <name>', "use this endpoint's measured service times and start-up time")
    .requiredOption('--slo-ms <ms>', 'latency objective, arrival → answer', positiveNumber)
    .option('--plot <file>', 'write an SVG plot of demand, capacity and replicas')
    .option('--seed <n>', 'random seed (the same seed repeats the run)', integerOption(0), 1)
    .option(
      '--concurrency-per-replica <n>',
      'with --endpoint and no --model: requests one replica serves at once',
      integerOption(1),
    )
    .option(
      '--usd-per-hour <usd>',
      'with --endpoint and no --model: price of a replica-hour',
      (text) => nonNegativeNumber(text),
    )
    .option('--json', 'print the report as JSON')
    .action(async (options: SimulateOptions, command: Command) => {
      if (options.model === undefined && options.endpoint === undefined) {
        throw usageError('give --model FILE or --endpoint E (or both)');
      }
      const trace = await readTrace(options.trace);
      let model = options.model === undefined ? undefined : await readModel(options.model);
      if (options.endpoint !== undefined) {
        const endpoint = options.endpoint;
        const view = await withClient(command, (client) =>
          client.get<EndpointScaleView>(apiPath('endpoints', endpoint, 'scale')),
        );
        model = measuredModel(endpoint, view, model, options);
      }
      if (model === undefined) throw usageError('give --model FILE or --endpoint E');
      const policies: SimulatedPolicy[] = [];
      for (const file of options.policy) policies.push(await readPolicy(file));
      const report = (() => {
        try {
          return simulate({ trace, model, policies, sloMs: options.sloMs, seed: options.seed });
        } catch (error) {
          if (error instanceof KilnError) throw fromKilnError(error);
          throw error;
        }
      })();
      let plotLine = '';
      if (options.plot !== undefined) {
        try {
          await writeFile(options.plot, renderSimulationSvg(report));
        } catch (error) {
          throw localFileError(
            `cannot write plot ${options.plot}: ${describeFsError(error)}`,
            error,
          );
        }
        plotLine = `plot written to ${options.plot}\n`;
      }
      emit(options, report, () => formatSimulationTable(report) + plotLine);
    });
}

function positiveNumber(text: string): number {
  const value = parseNumber(text);
  if (value === undefined || !(value > 0)) throw new InvalidArgumentError('expected a number > 0');
  return value;
}

function nonNegativeNumber(text: string): number {
  const value = parseNumber(text);
  if (value === undefined || !(value >= 0))
    throw new InvalidArgumentError('expected a number >= 0');
  return value;
}

async function readText(file: string, what: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw localFileError(`cannot read ${what} ${file}: ${describeFsError(error)}`, error);
  }
}

async function readJson(file: string, what: string): Promise<unknown> {
  const text = await readText(file, what);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw localFileError(`${what} ${file} is not valid JSON: ${(error as Error).message}`, error);
  }
}

async function readTrace(file: string): Promise<Trace> {
  const check = parseTrace(await readText(file, 'trace'));
  if (!check.ok) throw registryError('KILN_TRACE_INVALID', { source: file, reason: check.reason });
  return check.trace;
}

async function readModel(file: string): Promise<SimulationModel> {
  const check = parseSimulationModel(await readJson(file, 'model file'));
  if (!check.ok) {
    throw registryError('KILN_SIMULATION_INVALID', {
      reason: `model file ${file}: ${check.reason}`,
    });
  }
  return check.model;
}

async function readPolicy(file: string): Promise<SimulatedPolicy> {
  const check = policyFromFile(await readJson(file, 'policy file'));
  if (!check.ok) {
    throw registryError('KILN_SIMULATION_INVALID', {
      reason: `policy file ${file}: ${check.reason}`,
    });
  }
  return check.policy;
}

/** The endpoint's measured service times (and start-up time) in place of the model's. */
function measuredModel(
  endpoint: string,
  view: EndpointScaleView,
  fromFile: SimulationModel | undefined,
  options: SimulateOptions,
): SimulationModel {
  const sketch = view.latencyMs?.sketch;
  if (sketch === undefined || (view.latencyMs?.count ?? 0) === 0) {
    throw registryError('KILN_SIMULATION_INVALID', {
      reason: `endpoint ${endpoint} has no measured latencies yet (no answered requests in its demand history)`,
    });
  }
  const serviceTime = { kind: 'sketch', sketch } as const;
  if (fromFile !== undefined) return { ...fromFile, serviceTime };
  return {
    concurrencyPerReplica: options.concurrencyPerReplica ?? 1,
    serviceTime,
    instanceTypes: {
      measured: {
        startupMs: view.startup?.measuredP90Ms ?? view.startup?.usedMs ?? 30_000,
        usdPerHour: options.usdPerHour ?? 0,
      },
    },
    defaultInstanceType: 'measured',
  };
}

/** A registry error as the CLI reports it (exit 1, the registry's code, message and hint). */
function registryError(code: ErrorCode, params: ErrorParams): CliError {
  return fromKilnError(new KilnError(code, params));
}

function fromKilnError(error: KilnError): CliError {
  return new CliError(error.code, error.message, { hint: error.hint, status: error.status });
}
