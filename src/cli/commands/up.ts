// `kiln up`: run the platform in this process until SIGINT/SIGTERM. Prints exactly one
// `Kiln API listening on <url>` line (scripts and tests parse it; with --port 0 it carries
// the real port), then, with --dev, a few example commands.

import type { Command } from 'commander';
import type { RunningPlatform } from '../../control/start-platform.ts';
import { isKilnError } from '../../core/errors.ts';
import { integerOption, parseNumber } from '../arguments.ts';
import { homeOf } from '../context.ts';
import { CliError, usageError } from '../errors.ts';
import { writeOut } from '../output.ts';

interface UpOptions {
  readonly port: number;
  readonly host: string;
  readonly dev?: boolean;
  readonly demo?: boolean;
  readonly maxUploadBytes?: number;
}

export function registerUpCommand(program: Command): void {
  program
    .command('up')
    .description('start the Kiln platform (control-plane API) in the foreground')
    .option('--port <port>', 'port to listen on (0 = any free port)', integerOption(0), 8080)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option(
      '--dev',
      'development mode: registers demo models into an empty registry, prints examples',
    )
    .option('--no-demo', 'with --dev, do not register the demo models')
    .option(
      '--max-upload-bytes <n>',
      'largest accepted blob upload (default: $KILN_MAX_UPLOAD_BYTES or the server default)',
      integerOption(1),
    )
    .action(async (options: UpOptions, command: Command) => {
      if (options.port > 65535) throw usageError(`invalid port ${options.port}: expected 0–65535`);
      const maxUploadBytes = options.maxUploadBytes ?? maxUploadBytesFromEnv();
      const home = homeOf(command);
      let platform: RunningPlatform;
      try {
        // Imported here, not at the top, so the other commands never load the server.
        const { startPlatform } = await import('../../control/start-platform.ts');
        platform = await startPlatform({
          home,
          host: options.host,
          port: options.port,
          dev: options.dev === true,
          demo: options.dev === true && options.demo !== false,
          ...(maxUploadBytes === undefined ? {} : { maxUploadBytes }),
        });
      } catch (error) {
        throw startError(error, options.host, options.port);
      }
      writeOut(`Kiln API listening on ${platform.url}\n`);
      if (options.dev === true) writeOut(devExamples(platform.url, home, platform.demoModels));
      await waitForSignal();
      await platform.close();
      // The platform's handles are closed; if a stray one lingers, do not hang on it.
      setTimeout(() => process.exit(0), 2000).unref();
    });
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

function startError(error: unknown, host: string, port: number): CliError {
  if (isKilnError(error))
    return new CliError(error.code, error.message, { hint: error.hint, cause: error });
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'EADDRINUSE') {
    return new CliError(
      'KILN_LISTEN_FAILED',
      `cannot listen on ${host}:${port}: address already in use`,
      {
        hint: 'stop the other process, or choose another port with --port',
        cause: error,
      },
    );
  }
  if (code === 'EADDRNOTAVAIL' || code === 'EACCES') {
    return new CliError(
      'KILN_LISTEN_FAILED',
      `cannot listen on ${host}:${port}: ${code === 'EACCES' ? 'permission denied' : 'address not available'}`,
      {
        hint: 'check --host and --port',
        cause: error,
      },
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new CliError('KILN_INTERNAL', `the platform failed to start: ${message}`, {
    cause: error,
  });
}

function devExamples(url: string, home: string, demoModels: readonly string[]): string {
  const env = url === 'http://127.0.0.1:8080' ? '' : `KILN_URL=${url} `;
  return [
    `home: ${home}`,
    demoModels.length > 0 ? `demo models registered: ${demoModels.join(', ')}` : '',
    'try, from another terminal:',
    `  curl -s ${url}/api/v1/models`,
    `  ${env}npx kiln models list`,
    `  ${env}npx kiln models show fraud-xgb@champion`,
    `  ${env}npx kiln models register fixtures/registry/mlp.onnx --name my-mlp --format onnx`,
    '',
  ]
    .filter((line, i) => i !== 1 || line !== '')
    .join('\n');
}
