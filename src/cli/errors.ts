// How the CLI reports failure. Every expected failure becomes a CliError: one readable line
// `error: <message> (<code>)`, an optional `hint: ...` line, and an exit code (1 = the
// operation failed, 2 = the command line was wrong). API errors keep the platform's code
// (src/core/errors.ts); failures that never reach the platform use the CLI-local codes
// below. Stack traces are printed only for unexpected errors, and only with KILN_DEBUG=1.

import { CommanderError } from 'commander';

/** Codes for failures the CLI detects itself, before or without the platform. */
export type CliErrorCode =
  | 'KILN_USAGE' // the command line is wrong (exit 2)
  | 'KILN_UNREACHABLE' // no platform answered at --url
  | 'KILN_LOCAL_FILE' // a local file could not be read, parsed or written
  | 'KILN_BAD_RESPONSE' // the platform answered something that is not the documented API
  | 'KILN_LISTEN_FAILED' // `kiln up` could not bind its address
  | 'KILN_STOP_FAILED' // `kiln down` could not stop the platform of a home
  | 'KILN_WAIT_TIMEOUT' // `kiln deploy --wait` gave up before the endpoint was ready
  | 'KILN_ROLLOUT_FAILED'; // a rollout waited for (`--wait`) was rolled back or aborted

export const exitFailure = 1;
export const exitUsage = 2;

export class CliError extends Error {
  readonly code: string;
  readonly hint: string | undefined;
  readonly exitCode: number;
  /** HTTP status when the error came from the API. */
  readonly status: number | undefined;

  constructor(
    code: string,
    message: string,
    options: {
      hint?: string | undefined;
      exitCode?: number;
      status?: number;
      cause?: unknown;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'CliError';
    this.code = code;
    this.hint = options.hint;
    this.exitCode = options.exitCode ?? exitFailure;
    this.status = options.status;
  }
}

export function usageError(message: string, hint?: string): CliError {
  return new CliError('KILN_USAGE', message, { hint, exitCode: exitUsage });
}

export function localFileError(message: string, cause?: unknown): CliError {
  return new CliError('KILN_LOCAL_FILE', message, { cause });
}

/** `ENOENT: no such file…` → `no such file or directory`, for messages about local files. */
export function describeFsError(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  switch (code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory';
    case 'ENOTDIR':
      return 'not a directory';
    case 'EEXIST':
      return 'file already exists';
    default:
      return error instanceof Error ? error.message : String(error);
  }
}

export interface RenderedError {
  readonly text: string;
  readonly exitCode: number;
}

/**
 * Turns anything thrown by a command into the lines for stderr and an exit code.
 * `commandPath` (e.g. `kiln models register`) makes usage hints point at the right --help.
 */
export function renderError(error: unknown, commandPath = 'kiln'): RenderedError {
  if (error instanceof CommanderError) return renderCommanderError(error, commandPath);
  if (error instanceof CliError) {
    const hint =
      error.hint ?? (error.exitCode === exitUsage ? `see \`${commandPath} --help\`` : undefined);
    return { text: formatLines(error.message, error.code, hint), exitCode: error.exitCode };
  }
  const message = error instanceof Error ? error.message : String(error);
  let text = formatLines(
    message,
    'KILN_INTERNAL',
    'this is a bug in the kiln CLI; rerun with KILN_DEBUG=1 for details',
  );
  if (process.env.KILN_DEBUG === '1' && error instanceof Error && error.stack !== undefined) {
    text += `${error.stack}\n`;
  }
  return { text, exitCode: exitFailure };
}

function renderCommanderError(error: CommanderError, commandPath: string): RenderedError {
  // --help, --version and `kiln help` end through here too, with exit code 0.
  if (error.exitCode === 0) return { text: '', exitCode: 0 };
  // A bare group (`kiln models`) already printed its help to stderr.
  if (error.code === 'commander.help') return { text: '', exitCode: exitUsage };
  const [first = '', ...rest] = error.message.split('\n').filter((line) => line.trim() !== '');
  const message = first.replace(/^error:\s*/, '');
  const suggestion = rest.join(' ').match(/^\(Did you mean (.*)\?\)$/);
  const hint =
    suggestion?.[1] !== undefined
      ? `did you mean ${suggestion[1]}? (see \`${commandPath} --help\`)`
      : `see \`${commandPath} --help\``;
  return { text: formatLines(message, 'KILN_USAGE', hint), exitCode: exitUsage };
}

function formatLines(message: string, code: string, hint: string | undefined): string {
  const oneLine = message.replace(/\s*\n\s*/g, ' ').trim();
  let text = `error: ${oneLine} (${code})\n`;
  if (hint !== undefined && hint !== '') text += `hint: ${hint.replace(/\s*\n\s*/g, ' ').trim()}\n`;
  return text;
}
