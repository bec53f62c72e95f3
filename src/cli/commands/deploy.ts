// `kiln deploy MODEL[:VERSION|@ALIAS] --endpoint NAME`: create or update an endpoint (one
// PUT; the control plane reconciles workers towards it), then, with --wait, poll it until
// every replica is ready or --timeout-s passes. Batching flags (--max-batch, --max-delay-us,
// --preferred-batch, --queue, --fixed-batching) turn batching on with those settings (the platform fills the
// rest); --no-batching turns it off; neither leaves the runtime's default. LLM flags
// (--kv-cache-bytes, --block-size, --max-seqs, --max-batched-tokens, --max-waiting,
// --[no-]prefix-caching, --max-n, …) set the hf-llm engine's settings (`config.llm`);
// --threads is per replica whatever the runtime: ONNX intra-op threads, or an hf-llm
// version's engine threads (`llm.threads`) — the command reads the version's format first.
//
// Updating an endpoint changes only what the command line gives: replicas, team and serving
// settings not given are the endpoint's current ones. (The API's PUT replaces the whole
// endpoint; swapping a version with `kiln deploy m:2 --endpoint e` must not also scale a
// 3-replica endpoint down to 1 or drop its batching settings.) Settings of the other kind
// of model are not carried over: an endpoint moved from an ONNX model to an LLM loses its
// batching and ONNX threads, which the platform would refuse for an LLM.
//
//   GET the version (its format) ─► GET the endpoint (404: a new one) ─► merge
//     ─► PUT /api/v1/endpoints/{name}
//     ─► print summary ─► [--wait: GET every 250 ms until ready]

import { setTimeout as sleep } from 'node:timers/promises';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { integerOption, parseVersionRef, type VersionRef } from '../arguments.ts';
import {
  graphOptimizationLevels,
  type AutoscaleSettings,
  type BatchingSettings,
  type DeployBody,
  type Endpoint,
  type EndpointConfig,
  type GraphOptimizationLevel,
  type Model,
  type ModelFormat,
  type ModelVersion,
} from '../api-types.ts';
import { withClient } from '../context.ts';
import { CliError, usageError } from '../errors.ts';
import { apiPath, type KilnClient } from '../http-client.ts';
import { addLlmOptions, llmSettings, type LlmFlags } from './deploy-llm-flags.ts';
import {
  addResourceOptions,
  resourceRequest,
  type ResourceFlags,
} from './deploy-resource-flags.ts';
import { parseDurationSeconds } from './tokens.ts';
import { printJson, writeOut } from '../output.ts';
import { deploySummary, notReadyReason, readinessText } from './endpoints-render.ts';
import {
  addRolloutOptions,
  canaryFlagsGiven,
  outcomeError,
  rolloutBody,
  startRollout,
  waitForRollout,
  type RolloutFlags,
} from './rollout.ts';
import { rolloutText } from './rollout-render.ts';
import { durationMsOption, positiveNumberOption } from './autoscale.ts';

export interface DeployOptions extends LlmFlags, RolloutFlags, ResourceFlags {
  readonly endpoint: string;
  /** replace (default): the endpoint's version is swapped whole; else a rollout. */
  readonly strategy?: 'replace' | 'canary' | 'blue-green';
  /** Absent: the endpoint's current count, or 1 for a new endpoint. */
  readonly replicas?: number;
  readonly team?: string;
  readonly threads?: number;
  readonly interOpThreads?: number;
  readonly graphOpt?: GraphOptimizationLevel;
  readonly maxBodyBytes?: number;
  readonly maxBatch?: number;
  readonly maxDelayUs?: number;
  readonly preferredBatch?: number[];
  /** --fixed-batching: batching.adaptive false. */
  readonly fixedBatching?: boolean;
  readonly queue?: number;
  /** false with --no-batching (commander's default for a --no- flag is true). */
  readonly batching?: boolean;
  readonly timeoutMs?: number;
  readonly maxConcurrency?: number;
  /**
   * Serve it on this worker pool (`kiln pools create`) instead of replicas of its own;
   * false (`--no-pool`): on replicas of its own again.
   */
  readonly pool?: string | false;
  /** Autoscaling (config.autoscale): merged into the endpoint's current policy. */
  readonly minReplicas?: number;
  readonly maxReplicas?: number;
  readonly scaleSignal?: string;
  readonly scaleTarget?: number;
  readonly scaleSlo?: number;
  /** ms the replaced version keeps running for an instant rollback (--warm-grace). */
  readonly warmGrace?: number;
  readonly wait?: boolean;
  readonly timeoutS: number;
  readonly json?: boolean;
}

/** How often --wait asks for the endpoint's status. */
export const waitIntervalMs = 250;

export function registerDeployCommand(program: Command): void {
  const deploy = program
    .command('deploy')
    .description('serve a model version on an endpoint (created, or updated in place)')
    .argument('<ref>', 'MODEL (latest version), MODEL:VERSION or MODEL@ALIAS')
    .requiredOption('--endpoint <name>', 'endpoint name (its URL never changes)')
    .option(
      '--replicas <n>',
      'number of worker processes (default: unchanged; 1 for a new endpoint)',
      integerOption(0),
    )
    .option(
      '--team <team>',
      "team that owns the endpoint (default: unchanged; the model's team for a new one)",
    )
    .option(
      '--threads <n>',
      'threads per replica: onnx intra-op threads (0 = default); hf-llm engine threads',
      integerOption(0),
    )
    .option('--inter-op-threads <n>', 'onnx: inter-op threads per replica', integerOption(0))
    .addOption(
      new Option('--graph-opt <level>', 'onnx: graph optimization level').choices(
        graphOptimizationLevels,
      ),
    )
    .option('--max-body-bytes <n>', 'largest accepted request body', integerOption(1))
    .option(
      '--max-batch <rows>',
      'batching: run a batch once it holds this many rows',
      integerOption(1),
    )
    .option(
      '--max-delay-us <micros>',
      'batching: longest a request waits for a batch',
      integerOption(0),
    )
    .option('--preferred-batch <sizes>', 'batching: preferred batch sizes, e.g. 8,16', integerList)
    .option('--queue <n>', 'batching: requests that may wait; beyond it, 429', integerOption(1))
    .option(
      '--fixed-batching',
      'batching: always wait and join by --max-delay-us/--max-batch (default: only where measured costs say it pays)',
    )
    .option('--no-batching', 'run each request by itself (default: per runtime)')
    .option(
      '--timeout-ms <ms>',
      'default request deadline (kiln-timeout-ms overrides)',
      integerOption(1),
    )
    .option(
      '--max-concurrency <n>',
      'requests in flight per gateway; beyond it, 429',
      integerOption(1),
    )
    .option('--min-replicas <n>', 'autoscale: fewest replicas (0: scale to zero)', integerOption(0))
    .option('--max-replicas <n>', 'autoscale: most replicas', integerOption(1))
    .option(
      '--scale-signal <signal>',
      'autoscale on: concurrency, qps, queue-depth, cpu, accelerator, custom, slo',
    )
    .option(
      '--scale-target <x>',
      'autoscale: target of the signal per replica',
      positiveNumberOption,
    )
    .option(
      '--scale-slo <duration>',
      'autoscale with --scale-signal slo: the latency objective, e.g. 200ms (99.9 % within it)',
      durationMsOption,
    );
  deploy.addOption(
    new Option(
      '--strategy <strategy>',
      'replace: swap the version whole; canary: in steps, each judged; blue-green: alongside, golden set, then all at once',
    )
      .choices(['replace', 'canary', 'blue-green'])
      .default('replace'),
  );
  addResourceOptions(addRolloutOptions(addLlmOptions(deploy)))
    .option(
      '--warm-grace <duration>',
      "keep the replaced version running this long for an instant rollback, e.g. 30m, or 0 (default: the platform's, 10m)",
      warmGraceOption,
    )
    .option(
      '--pool <name>',
      'serve it on this worker pool (loaded on demand beside other models) instead of replicas of its own',
    )
    .option('--no-pool', 'move it off its worker pool onto replicas of its own')
    .option('--wait', 'wait until every replica is ready (a rollout: until it has finished)')
    .option('--timeout-s <seconds>', 'with --wait: give up after this long', integerOption(1), 120)
    .option('--json', 'print the endpoint as JSON')
    .action(async (text: string, options: DeployOptions, command: Command) => {
      const ref = parseVersionRef(text);
      const flags = deployBody(ref, options); // usage errors before any call
      const canaryOnly = canaryFlagsGiven(options);
      // A replace deploy would ignore them: a user who forgot --strategy canary would get
      // the version swapped whole, the opposite of what the flags ask for.
      if ((options.strategy ?? 'replace') === 'replace' && canaryOnly.length > 0)
        throw usageError(
          `${canaryOnly.join(', ')} ${canaryOnly.length === 1 ? 'is' : 'are'} for --strategy canary; a replace deploy swaps the version whole`,
          'add --strategy canary, or drop the canary flags',
        );
      if (options.strategy !== undefined && options.strategy !== 'replace') {
        await deployByRollout(command, text, options.strategy, flags, options);
        return;
      }
      await withClient(command, async (client) => {
        const format = await versionFormat(client, ref);
        const given = deployBody(ref, options, format);
        const path = apiPath('endpoints', options.endpoint);
        const current = await client.get<Endpoint>(path).catch((error: unknown) => {
          if (error instanceof CliError && error.code === 'KILN_ENDPOINT_NOT_FOUND') return null;
          throw error;
        });
        const body =
          current === null
            ? given
            : keepCurrent(given, current, format, { pool: options.pool === false });
        checkAutoscaleFlags(body);
        let endpoint = await client.put<Endpoint>(path, body);
        if (options.json !== true) writeOut(deploySummary(endpoint));
        if (options.wait === true) {
          const outcome = await waitUntilReady(endpoint, () => client.get<Endpoint>(path), {
            timeoutMs: options.timeoutS * 1000,
          });
          endpoint = outcome.endpoint;
          if (!outcome.ready) throw notReadyError(endpoint, options.timeoutS);
        }
        if (options.json === true) printJson(endpoint);
        else writeOut(readinessText(endpoint));
      });
    });
}

/**
 * `--strategy canary|blue-green`: the endpoint keeps its serving settings (they change with
 * `--strategy replace` only); the new version is rolled out beside the current one.
 */
async function deployByRollout(
  command: Command,
  text: string,
  strategy: 'canary' | 'blue-green',
  given: DeployBody,
  options: DeployOptions,
): Promise<void> {
  if (
    Object.keys(given.config).length > 0 ||
    given.replicas !== undefined ||
    given.team !== undefined ||
    given.warmGraceMs !== undefined
  )
    throw usageError(
      `serving settings (replicas, team, batching, threads, warm grace …) do not combine with --strategy ${strategy}`,
      'change them with a plain `kiln deploy` (--strategy replace) first',
    );
  rolloutBody('m', 1, strategy, options); // usage errors before any call
  await withClient(command, async (client) => {
    let view = await startRollout(client, options.endpoint, text, strategy, options);
    if (options.json !== true) writeOut(rolloutText(view));
    if (options.wait === true) {
      // A rollout runs for its steps' intervals: 120 s (a replica's start) is too short a
      // default for it; the rollout command's hour unless --timeout-s was given.
      const timeoutS =
        command.getOptionValueSource('timeoutS') === 'default' ? 3600 : options.timeoutS;
      const outcome = await waitForRollout(client, view, timeoutS * 1000);
      view = outcome.view;
      if (!outcome.finished)
        throw new CliError(
          'KILN_WAIT_TIMEOUT',
          `rollout ${view.rollout.id} is still ${view.rollout.state} after ${timeoutS} s`,
          { hint: `follow it with \`kiln rollout status ${options.endpoint}\`` },
        );
      if (options.json !== true) writeOut(rolloutText(view));
    }
    if (options.json === true) printJson(view);
    const failed = outcomeError(view);
    if (failed !== null) throw failed;
  });
}

/**
 * The format of the version a reference names, or null when it cannot be read (the PUT then
 * says why: no such model, version or alias).
 */
export async function versionFormat(
  client: KilnClient,
  ref: VersionRef,
): Promise<ModelFormat | null> {
  try {
    let segment: number | string;
    if (ref.kind === 'latest') {
      const model = await client.get<Model>(apiPath('models', ref.model));
      if (model.latestVersion === null) return null;
      segment = model.latestVersion;
    } else segment = ref.kind === 'version' ? ref.version : ref.alias;
    const version = await client.get<ModelVersion>(
      apiPath('models', ref.model, 'versions', segment),
    );
    return version.format;
  } catch (error) {
    if (error instanceof CliError) return null;
    throw error;
  }
}

/** Settings of the ONNX runtime and the dynamic batcher: not for hf-llm versions. */
const notForLlm = [
  'intraOpThreads',
  'interOpThreads',
  'graphOptimizationLevel',
  'batching',
] as const;

/**
 * The PUT body for an endpoint that exists: what the command line gave, and for the rest the
 * endpoint's current replicas, team and config. Batching settings given merge into the
 * current batching object (`--queue 512` keeps the current batch size), LLM settings into
 * the current `llm` object (`--max-seqs 8` keeps the current KV budget). Current settings
 * that do not apply to the new version's `format` are dropped, given ones never (the
 * platform refuses them, naming the field).
 */
export function keepCurrent(
  given: DeployBody,
  current: Endpoint,
  format: ModelFormat | null = null,
  /** Current settings to drop: the pool (`--no-pool`; a deploy otherwise keeps it). */
  drop: { readonly pool?: boolean } = {},
): DeployBody {
  const config: EndpointConfig = { ...(current.config as EndpointConfig), ...given.config };
  if (drop.pool === true) delete config.pool;
  if (given.config.llm !== undefined && current.config.llm !== undefined)
    config.llm = { ...current.config.llm, ...given.config.llm };
  if (format === 'hf-llm') {
    for (const field of notForLlm) if (given.config[field] === undefined) delete config[field];
  } else if (format !== null && given.config.llm === undefined) delete config.llm;
  const now = current.config.batching;
  if (given.config.batching !== undefined && given.config.batching !== null && now != null) {
    const merged: BatchingSettings = {
      maxBatchSize: now.maxBatchSize,
      maxDelayMicros: now.maxDelayMicros,
      maxQueue: now.maxQueue,
    };
    if (now.preferredBatchSizes !== undefined)
      merged.preferredBatchSizes = [...now.preferredBatchSizes];
    if (now.adaptive !== undefined) merged.adaptive = now.adaptive;
    Object.assign(merged, given.config.batching);
    // A new maximum without new preferred sizes keeps only the current ones that still fit.
    const max = given.config.batching.maxBatchSize;
    if (max !== undefined && given.config.batching.preferredBatchSizes === undefined) {
      const fitting = (merged.preferredBatchSizes ?? []).filter((size) => size <= max);
      if (fitting.length > 0) merged.preferredBatchSizes = fitting;
      else delete merged.preferredBatchSizes;
    }
    config.batching = merged;
  }
  if (given.config.autoscale !== undefined)
    config.autoscale = mergeAutoscale(current.config.autoscale, given.config.autoscale);
  const merged: DeployBody = { ...given, team: given.team ?? current.team, config };
  // Autoscaled: the platform keeps the count running (within the policy) unless asked. On a
  // pool the pool's workers are the capacity: the current replica count is not kept either.
  if (given.replicas !== undefined || (config.autoscale === undefined && config.pool === undefined))
    merged.replicas = given.replicas ?? current.replicas;
  return merged;
}

/**
 * An endpoint without a policy yet needs both bounds to start autoscaling: said in the flags'
 * words (the platform would name the policy's fields, minReplicas and maxReplicas).
 */
export function checkAutoscaleFlags(body: DeployBody): void {
  const policy = body.config.autoscale;
  if (policy === undefined) return;
  const missing = [
    policy.minReplicas === undefined ? '--min-replicas' : null,
    policy.maxReplicas === undefined ? '--max-replicas' : null,
  ].filter((flag) => flag !== null);
  if (missing.length > 0)
    throw usageError(
      `${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} needed to start autoscaling this endpoint (it has no policy yet)`,
      'give both bounds, e.g. --min-replicas 1 --max-replicas 5',
    );
}

/**
 * The PUT body: version or alias from the reference (neither = latest); absent flags omitted.
 * `format` (the version's, when known) says where --threads goes.
 */
export function deployBody(
  ref: VersionRef,
  options: Omit<DeployOptions, 'timeoutS'>,
  format: ModelFormat | null = null,
): DeployBody {
  const body: DeployBody = { model: ref.model, config: {} };
  if (options.replicas !== undefined) body.replicas = options.replicas;
  switch (ref.kind) {
    case 'latest':
      break;
    case 'version':
      body.version = ref.version;
      break;
    case 'alias':
      body.alias = ref.alias;
      break;
  }
  if (options.team !== undefined) body.team = options.team;
  if (options.warmGrace !== undefined) body.warmGraceMs = options.warmGrace;
  const config: EndpointConfig = body.config;
  const llm = llmSettings(options);
  if (options.threads !== undefined) {
    if (format === 'hf-llm') llm.threads = options.threads;
    else config.intraOpThreads = options.threads;
  }
  if (options.interOpThreads !== undefined) config.interOpThreads = options.interOpThreads;
  if (options.graphOpt !== undefined) config.graphOptimizationLevel = options.graphOpt;
  if (options.maxBodyBytes !== undefined) config.maxBodyBytes = options.maxBodyBytes;
  const batching: BatchingSettings = {};
  if (options.maxBatch !== undefined) batching.maxBatchSize = options.maxBatch;
  if (options.maxDelayUs !== undefined) batching.maxDelayMicros = options.maxDelayUs;
  if (options.preferredBatch !== undefined) batching.preferredBatchSizes = options.preferredBatch;
  if (options.queue !== undefined) batching.maxQueue = options.queue;
  if (options.fixedBatching === true) batching.adaptive = false;
  if (options.batching === false) {
    if (Object.keys(batching).length > 0)
      throw usageError('--no-batching cannot be combined with batching settings');
    config.batching = null;
  } else if (Object.keys(batching).length > 0) config.batching = batching;
  if (options.timeoutMs !== undefined) config.timeoutMs = options.timeoutMs;
  if (options.maxConcurrency !== undefined) config.maxConcurrency = options.maxConcurrency;
  if (typeof options.pool === 'string') config.pool = options.pool;
  if (Object.keys(llm).length > 0) config.llm = llm;
  const autoscale: AutoscaleSettings = {};
  if (options.minReplicas !== undefined) autoscale.minReplicas = options.minReplicas;
  if (options.maxReplicas !== undefined) autoscale.maxReplicas = options.maxReplicas;
  if (options.scaleSignal !== undefined) autoscale.signal = options.scaleSignal;
  if (options.scaleTarget !== undefined) autoscale.target = options.scaleTarget;
  if (options.scaleSlo !== undefined) autoscale.slo = { latencyMs: options.scaleSlo };
  if (Object.keys(autoscale).length > 0) config.autoscale = autoscale;
  const resources = resourceRequest(options);
  if (resources !== null) config.resources = resources;
  return body;
}

/**
 * The endpoint's policy with the flags given over it. Fields that would contradict the new
 * ones go: scale-to-zero settings when the minimum is no longer 0, the target (and custom
 * metric, latency objective) of a signal no longer scaled on — the platform's defaults fill
 * them again.
 */
export function mergeAutoscale(
  current: AutoscaleSettings | undefined,
  given: AutoscaleSettings,
): AutoscaleSettings {
  const merged: AutoscaleSettings = { ...(current ?? {}), ...given };
  // A new latency keeps the objective set before (and the other way round).
  if (current?.slo !== undefined && given.slo !== undefined)
    merged.slo = { ...current.slo, ...given.slo };
  if ((merged.minReplicas ?? 0) > 0) delete merged.scaleToZero;
  if (current !== undefined && given.signal !== undefined && given.signal !== current.signal) {
    if (given.target === undefined) delete merged.target;
    delete merged.customMetric;
    if (given.slo === undefined) delete merged.slo;
  }
  return merged;
}

/** `8,16` → [8, 16]: whole numbers of at least 1. */
export function integerList(text: string): number[] {
  const parts = text.split(',').map((part) => part.trim());
  if (parts.some((part) => !/^\d+$/.test(part) || Number(part) < 1)) {
    throw new InvalidArgumentError('expected whole numbers of at least 1, separated by commas');
  }
  return parts.map(Number);
}

export interface WaitOptions {
  readonly timeoutMs: number;
  readonly intervalMs?: number;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<unknown>;
}

export type WaitOutcome =
  | { readonly ready: true; readonly endpoint: Endpoint }
  | { readonly ready: false; readonly endpoint: Endpoint };

/**
 * Polls `fetch` every `intervalMs` until every desired replica is ready, or until `timeoutMs`
 * has passed (then the last status seen, not ready). Never sleeps past the deadline.
 */
export async function waitUntilReady(
  first: Endpoint,
  fetch: () => Promise<Endpoint>,
  options: WaitOptions,
): Promise<WaitOutcome> {
  const now = options.now ?? Date.now;
  const pause = options.sleep ?? sleep;
  const intervalMs = options.intervalMs ?? waitIntervalMs;
  const deadline = now() + options.timeoutMs;
  let endpoint = first;
  while (!allReplicasReady(endpoint)) {
    const left = deadline - now();
    if (left <= 0) return { ready: false, endpoint };
    await pause(Math.min(intervalMs, left));
    endpoint = await fetch();
  }
  return { ready: true, endpoint };
}

/**
 * What --wait waits for. `status.ready` alone means the endpoint can serve (the platform sets
 * it once any replica is ready); a deploy has finished when all desired replicas are.
 */
export function allReplicasReady(endpoint: Endpoint): boolean {
  if (endpoint.replicas === 0) return true; // nothing to start
  return endpoint.status.ready && endpoint.status.readyReplicas >= endpoint.replicas;
}

function notReadyError(endpoint: Endpoint, timeoutS: number): CliError {
  const counts = `${endpoint.status.readyReplicas}/${endpoint.replicas} replicas ready`;
  const reason = notReadyReason(endpoint.status);
  return new CliError(
    'KILN_WAIT_TIMEOUT',
    `endpoint ${endpoint.name} is not ready after ${timeoutS} s (${counts})${reason === undefined ? '' : `: ${reason}`}`,
    {
      hint: `see its replicas with \`kiln endpoints show ${endpoint.name}\`, or wait longer with --timeout-s`,
    },
  );
}

/** `--warm-grace`: `0` (none) or a duration like 90s, 30m, 2h → milliseconds. */
export function warmGraceOption(text: string): number {
  return text.trim() === '0' ? 0 : parseDurationSeconds(text) * 1000;
}
