// `kiln up`: run the platform in this process until SIGINT/SIGTERM. Prints exactly two
// lines scripts and tests parse, `Kiln API listening on <url>` then `Kiln gateway listening
// on <url>` (with --port 0 / --gateway-port 0 they carry the real ports), then, without
// --dev, where the admin token is, and with --dev, a few example commands. One serving
// platform per home: a second `kiln up` on a home that a live platform serves exits with
// KILN_HOME_IN_USE, unless --api-only (the registry API alone, beside it: one line,
// `Kiln API listening on <url>`, and the admin token's). The gateway and workers outlive
// this process if it is killed outright (the next `kiln up` adopts them, `kiln down` stops
// them); SIGINT/SIGTERM stop them with it. With `--store postgres://…` (or KILN_STORE_URL)
// several `kiln up` share one database and one of them leads the controllers
// (docs/scale-out.md); one that loses the lead is started afresh here as a follower.

import { availableParallelism } from 'node:os';
import { InvalidArgumentError, type Command } from 'commander';
import type { RunningPlatform } from '../../control/start-platform.ts';
import { HomeInUseError } from '../../control/home-lock.ts';
import { adminTokenPath } from '../../core/admin-token-file.ts';
import { isKilnError } from '../../core/errors.ts';
import { integerOption, parseNumber } from '../arguments.ts';
import { homeOf } from '../context.ts';
import { CliError, usageError } from '../errors.ts';
import { writeOut } from '../output.ts';
import { otlpUrlProblem } from '../../observability/tracing/otlp-url.ts';
import type { ArtifactLocator } from '../../registry/artifact-storage.ts';
import { parseArtifactsUrl } from '../../registry/open-artifact-storage.ts';

interface UpOptions {
  readonly port: number;
  readonly gatewayPort: number;
  readonly host: string;
  readonly dev?: boolean;
  readonly demo?: boolean;
  readonly apiOnly?: boolean;
  readonly maxUploadBytes?: number;
  readonly inventory?: string;
  readonly prices?: string;
  readonly otlp?: string;
  readonly gatewayProcesses: number;
  readonly artifacts?: string;
  readonly artifactsEndpoint?: string;
  readonly backend: string;
  readonly kubeNamespace?: string;
  readonly workerImage?: string;
  readonly store?: string;
}

export function registerUpCommand(program: Command): void {
  program
    .command('up')
    .description('start the Kiln platform (control-plane API and gateway) in the foreground')
    .option('--port <port>', 'API port to listen on (0 = any free port)', integerOption(0), 8080)
    .option(
      '--gateway-port <port>',
      'gateway (data plane) port to listen on (0 = any free port)',
      integerOption(0),
      8000,
    )
    .option(
      '--gateway-processes <n>',
      'gateway processes serving the gateway port, 1–64 (default: one per core)',
      gatewayProcessCount,
      availableParallelism(),
    )
    .option('--host <host>', 'address the API and the gateway listen on', '127.0.0.1')
    .option(
      '--dev',
      'development mode: no API keys on the gateway; registers and serves demo models in an empty registry; prints examples',
    )
    .option('--no-demo', 'with --dev, do not register the demo models')
    .option(
      '--api-only',
      'serve the registry API only (no endpoints, workers or gateway), e.g. beside the platform that serves this home',
    )
    .option(
      '--max-upload-bytes <n>',
      'largest accepted blob upload (default: $KILN_MAX_UPLOAD_BYTES or the server default)',
      integerOption(1),
    )
    .option(
      '--inventory <file>',
      'the nodes replicas are placed on (JSON; default: <home>/inventory.json, else this machine)',
    )
    .option(
      '--prices <file>',
      'the cost price table (JSON; default: <home>/prices.json, else the defaults in docs/cost.md)',
    )
    .option(
      '--otlp <url>',
      'export OpenTelemetry traces of the gateway and workers to this OTLP/HTTP collector, e.g. http://127.0.0.1:4318 (docs/tracing.md)',
    )
    .option(
      '--artifacts <url>',
      'where artifacts are stored: s3://BUCKET[/PREFIX] or a folder (default: $KILN_ARTIFACTS_URL, else <home>/artifacts; docs/scale-out.md)',
    )
    .option(
      '--artifacts-endpoint <url>',
      'an S3-compatible endpoint for s3:// artifacts, e.g. http://minio:9000 (default: $AWS_ENDPOINT_URL; path-style requests)',
    )
    .option(
      '--backend <kind>',
      'where replicas run: local (worker processes) or kubernetes',
      'local',
    )
    .option(
      '--kube-namespace <ns>',
      'with --backend kubernetes: the namespace (default: $KILN_KUBERNETES_NAMESPACE, else the kubeconfig context)',
    )
    .option(
      '--worker-image <image>',
      'with --backend kubernetes: the worker image (default: $KILN_WORKER_IMAGE)',
    )
    .option(
      '--store <url>',
      'a PostgreSQL URL (postgres://…) shared by several control planes, one leading (default: $KILN_STORE_URL, else SQLite in the home; docs/scale-out.md)',
    )
    .action(async (options: UpOptions, command: Command) => {
      if (options.backend !== 'local' && options.backend !== 'kubernetes')
        throw usageError(`invalid --backend ${options.backend}: expected local or kubernetes`);
      const backend: 'local' | 'kubernetes' = options.backend;
      const workerImage = options.workerImage ?? process.env.KILN_WORKER_IMAGE ?? '';
      if (options.backend === 'kubernetes' && workerImage === '')
        throw usageError('--backend kubernetes needs --worker-image IMAGE (or $KILN_WORKER_IMAGE)');
      for (const port of [options.port, options.gatewayPort]) {
        if (port > 65535) throw usageError(`invalid port ${port}: expected 0–65535`);
      }
      if (options.otlp !== undefined) {
        const problem = otlpUrlProblem(options.otlp);
        if (problem !== null) throw usageError(`invalid --otlp ${options.otlp}: ${problem}`);
      }
      const maxUploadBytes = options.maxUploadBytes ?? maxUploadBytesFromEnv();
      const artifacts = artifactsOption(options);
      const store = storeUrlOf(options.store);
      const lease = leaseFromEnv();
      const home = homeOf(command);
      let platform: RunningPlatform;
      let start: (ports: { port: number; gatewayPort: number }) => Promise<RunningPlatform>;
      // Listening from the start: a Ctrl-C while the platform starts (the gateway and workers
      // it starts or adopts outlive an abrupt exit) stops it once started, like any other.
      const signalled = waitForSignal();
      try {
        // Imported here, not at the top, so the other commands never load the server.
        const { startPlatform } = await import('../../control/start-platform.ts');
        start = (ports) =>
          startPlatform({
            home,
            host: options.host,
            port: ports.port,
            gatewayHost: options.host,
            gatewayPort: ports.gatewayPort,
            gatewayProcesses: Math.min(64, options.gatewayProcesses),
            dev: options.dev === true,
            demo: options.dev === true && options.demo !== false,
            apiOnly: options.apiOnly === true,
            // The data plane outlives this process: killed outright, it leaves the gateway and
            // workers serving, and the next `kiln up` on the home adopts them (`kiln down`
            // stops them). Ctrl-C / SIGTERM still stop everything.
            detached: true,
            ...(maxUploadBytes === undefined ? {} : { maxUploadBytes }),
            ...(options.inventory === undefined ? {} : { inventory: options.inventory }),
            ...(options.prices === undefined ? {} : { prices: options.prices }),
            ...(options.otlp === undefined ? {} : { otlpUrl: options.otlp }),
            ...(store === undefined ? {} : { store }),
            ...(lease === undefined ? {} : { lease }),
            ...(artifacts === undefined ? {} : { artifacts }),
            backend,
            kubernetes: {
              ...(options.kubeNamespace === undefined ? {} : { namespace: options.kubeNamespace }),
              ...(options.workerImage === undefined ? {} : { workerImage: options.workerImage }),
              log: (message) => process.stderr.write(`kiln: ${message}\n`),
            },
          });
        platform = await start({ port: options.port, gatewayPort: options.gatewayPort });
      } catch (error) {
        throw startError(error, options.host, options.port);
      }
      writeOut(`Kiln API listening on ${platform.url}\n`);
      if (platform.gatewayUrl !== '')
        writeOut(`Kiln gateway listening on ${platform.gatewayUrl}\n`);
      if (options.dev !== true)
        writeOut(`admin token for the CLI on this machine: ${adminTokenPath(home)}\n`);
      if (options.dev === true && options.apiOnly !== true) writeOut(devExamples(platform, home));
      // PostgreSQL: a control plane that lost the controllers' lease (paused past its lease,
      // cut off from the database) is started afresh on the same ports, as a follower that
      // contends again; its controllers stopped the moment the lease was lost.
      for (;;) {
        const lost = platform.leader.lost.then(() => 'lost' as const);
        if ((await Promise.race([signalled.then(() => 'signal' as const), lost])) === 'signal')
          break;
        process.stderr.write(
          'kiln: this control plane lost the controllers lease; restarting it as a follower\n',
        );
        await platform.close();
        try {
          platform = await start({
            port: Number(new URL(platform.url).port),
            gatewayPort:
              platform.gatewayUrl === ''
                ? options.gatewayPort
                : Number(new URL(platform.gatewayUrl).port),
          });
        } catch (error) {
          throw startError(error, options.host, options.port);
        }
        process.stderr.write(`kiln: restarted as a follower; API on ${platform.url}\n`);
      }
      await platform.close();
      // The platform's handles are closed; if a stray one lingers, do not hang on it.
      setTimeout(() => process.exit(0), 2000).unref();
    });
}

/** `--gateway-processes`: an integer 1..64 (anything else: a usage error, exit 2). */
function gatewayProcessCount(text: string): number {
  const value = Number(text.trim());
  if (!/^\d+$/.test(text.trim()) || value < 1 || value > 64)
    throw new InvalidArgumentError(`expected a whole number from 1 to 64, got "${text}"`);
  return value;
}

/** `--artifacts` (else KILN_ARTIFACTS_URL) as a locator; undefined = the home's folder. */
function artifactsOption(options: UpOptions): ArtifactLocator | undefined {
  const fromEnv = process.env.KILN_ARTIFACTS_URL;
  const url = options.artifacts ?? (fromEnv === '' ? undefined : fromEnv);
  if (url === undefined) {
    if (options.artifactsEndpoint !== undefined)
      throw usageError(
        '--artifacts-endpoint needs s3:// artifacts (--artifacts or KILN_ARTIFACTS_URL)',
      );
    return undefined;
  }
  const parsed = parseArtifactsUrl(url, { endpoint: options.artifactsEndpoint });
  const name = options.artifacts === undefined ? 'KILN_ARTIFACTS_URL' : '--artifacts';
  if (typeof parsed === 'string') throw usageError(`invalid ${name} ${url}: ${parsed}`);
  return parsed;
}

/**
 * The store: `--store`, else KILN_STORE_URL, else undefined (SQLite in the home). Only
 * PostgreSQL URLs are accepted; anything else is a usage error (exit 2).
 */
function storeUrlOf(option: string | undefined): string | undefined {
  const raw = option ?? process.env.KILN_STORE_URL;
  if (raw === undefined || (option === undefined && raw.trim() === '')) return undefined;
  const from = option === undefined ? 'KILN_STORE_URL' : '--store';
  let protocol: string;
  try {
    protocol = new URL(raw).protocol;
  } catch {
    throw usageError(
      `invalid ${from} "${raw}": expected a postgres://user:password@host:port/database URL`,
    );
  }
  if (protocol !== 'postgres:' && protocol !== 'postgresql:')
    throw usageError(
      `invalid ${from} "${raw}": only PostgreSQL (postgres://…) is supported; leave it unset for SQLite in the home`,
    );
  return raw;
}

/** KILN_LEADER_LEASE_MS / KILN_LEADER_RENEW_MS: the controllers' lease (docs/scale-out.md). */
function leaseFromEnv(): { leaseMs?: number; renewMs?: number } | undefined {
  const read = (name: string): number | undefined => {
    const raw = process.env[name];
    if (raw === undefined || raw.trim() === '') return undefined;
    const value = parseNumber(raw);
    if (value === undefined || !Number.isSafeInteger(value) || value < 1)
      throw usageError(`invalid ${name} "${raw}": expected a whole number of milliseconds`);
    return value;
  };
  const leaseMs = read('KILN_LEADER_LEASE_MS');
  const renewMs = read('KILN_LEADER_RENEW_MS');
  if (leaseMs === undefined && renewMs === undefined) return undefined;
  const lease = leaseMs ?? 10_000;
  const renew = renewMs ?? Math.floor(lease / 4);
  if (renew * 2 > lease)
    throw usageError(
      `invalid lease: KILN_LEADER_RENEW_MS ${renew} must be at most half of ${lease}`,
    );
  return { leaseMs: lease, renewMs: renew };
}

function maxUploadBytesFromEnv(): number | undefined {
  const raw = process.env.KILN_MAX_UPLOAD_BYTES;
  if (raw === undefined || raw.trim() === '') return undefined;
  const value = parseNumber(raw);
  if (value === undefined || !Number.isSafeInteger(value) || value < 1) {
    throw usageError(`invalid KILN_MAX_UPLOAD_BYTES "${raw}": expected a whole number of bytes`);
  }
  return value;
}

function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      // A second Ctrl-C while closing means "now".
      process.once('SIGINT', () => process.exit(130));
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

function startError(error: unknown, host: string, apiPort: number): CliError {
  if (isKilnError(error))
    return new CliError(error.code, error.message, { hint: error.hint, cause: error });
  if (error instanceof HomeInUseError) {
    return new CliError(error.code, error.message, {
      hint: `stop it${error.pid === null ? '' : ` (kill ${error.pid})`}, use another --home, or add --api-only to serve the registry API beside it`,
      cause: error,
    });
  }
  const code = (error as { code?: unknown } | null)?.code;
  // Listen errors carry the port that failed: the API's or the gateway's.
  const failedPort = (error as { port?: unknown } | null)?.port;
  const port = typeof failedPort === 'number' ? failedPort : apiPort;
  if (code === 'EADDRINUSE') {
    return new CliError(
      'KILN_LISTEN_FAILED',
      `cannot listen on ${host}:${port}: address already in use`,
      {
        hint: 'stop the other process, or choose other ports with --port / --gateway-port',
        cause: error,
      },
    );
  }
  if (code === 'EADDRNOTAVAIL' || code === 'EACCES') {
    return new CliError(
      'KILN_LISTEN_FAILED',
      `cannot listen on ${host}:${port}: ${code === 'EACCES' ? 'permission denied' : 'address not available'}`,
      {
        hint: 'check --host, --port and --gateway-port',
        cause: error,
      },
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new CliError('KILN_INTERNAL', `the platform failed to start: ${message}`, {
    cause: error,
  });
}

function devExamples(platform: RunningPlatform, home: string): string {
  const { url, gatewayUrl, demoModels } = platform;
  const env = url === 'http://127.0.0.1:8080' ? '' : `KILN_URL=${url} `;
  const lines = [
    `home: ${home}`,
    ...(demoModels.length > 0 ? [`demo models registered: ${demoModels.join(', ')}`] : []),
    'try, from another terminal:',
    `  curl -s ${gatewayUrl}/v2/models/fraud-xgb/infer -d @fixtures/requests/fraud-xgb.json`,
    `  curl -s ${gatewayUrl}/v2/models/digits-cnn/infer -d @fixtures/requests/digits-cnn.json`,
    ...(demoModels.includes('tiny-llm') ? [`  ${llmChatCurl(gatewayUrl)}`] : []),
    `  ${env}npx kiln endpoints list`,
    `  ${env}npx kiln predict fraud-xgb --data fixtures/requests/fraud-xgb.json`,
    `  ${env}npx kiln models register fixtures/onnx/mlp.onnx --name my-mlp --format onnx`,
    `  ${env}npx kiln deploy my-mlp --endpoint my-mlp --replicas 2 --wait`,
    '',
  ];
  return lines.join('\n');
}

/** A streamed chat completion from the demo LLM, as the README shows it. */
export function llmChatCurl(gatewayUrl: string): string {
  const body = JSON.stringify({
    model: 'tiny-llm',
    messages: [{ role: 'user', content: 'What does the GPL protect?' }],
    max_tokens: 32,
    temperature: 0,
    stream: true,
  });
  return `curl -N ${gatewayUrl}/v1/chat/completions -H 'content-type: application/json' -d '${body}'`;
}
