// Runs the real `kiln` CLI as OS processes: `kiln up --port 0 --gateway-port 0` as a child
// process (its `Kiln API listening on` and `Kiln gateway listening on` lines parsed for the
// URLs), and one process per command, with KILN_URL / KILN_HOME pointing at it. Used by
// cli.test.ts, cli-serving.test.ts and predict.test.ts.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export const root = new URL('../..', import.meta.url).pathname;
export const bin = join(root, 'bin', 'kiln.js');
export const fixtures = join(root, 'fixtures', 'registry');

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Version {
  model: string;
  version: number;
  format: string;
  files: Array<{ path: string; size: number; sha256: string }>;
  sizeBytes: number;
  manifestDigest: string;
  schema: { inputs: unknown[]; outputs: unknown[] } | null;
  metadata: Record<string, unknown> | null;
  lineage: Record<string, string> | null;
  tags: Record<string, string> | null;
  external: Record<string, string> | null;
  signature: { keyId: string; signature: string } | null;
  aliases: string[];
  deletedAt: string | null;
}

export interface Page<T> {
  items: T[];
  nextPageToken: string | null;
}

export interface PlatformProcess {
  readonly url: string;
  /** The gateway's URL; undefined unless started with `gateway: true`. */
  readonly gatewayUrl: string | undefined;
  /** Everything `kiln up` has written to stdout so far. */
  stdout(): string;
  /** Everything `kiln up` has written to stderr so far. */
  stderr(): string;
  /** The `kiln up` process's pid. */
  readonly pid: number;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
  /** Sends `signal` (e.g. SIGKILL, SIGINT); resolves with the exit code or signal once it exited. */
  kill(signal: NodeJS.Signals): Promise<number | string | null>;
  /** Resolves with the exit code (or the signal) once the process exited. */
  readonly ended: Promise<number | string | null>;
}

export interface PlatformProcessOptions {
  /** Wait for the `Kiln gateway listening on` line too (and fail without it). */
  readonly gateway?: boolean;
  /** More `kiln up` arguments, e.g. ['--dev']. */
  readonly args?: readonly string[];
  /** The environment, in place of this process's (KILN_URL is emptied either way). */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * `kiln up --port 0 --gateway-port 0 --home HOME` as a child process; resolves once it is
 * listening. Both ports are free ones, so test files can run side by side.
 */
export async function startPlatformProcess(
  home: string,
  options: PlatformProcessOptions = {},
): Promise<PlatformProcess> {
  const args = [
    'up',
    '--port',
    '0',
    '--gateway-port',
    '0',
    '--home',
    home,
    ...(options.args ?? []),
  ];
  const child: ChildProcess = spawn(process.execPath, [bin, ...args], {
    cwd: root,
    env: { ...(options.env ?? process.env), KILN_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const ended = new Promise<number | string | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal)),
  );
  let stderr = '';
  let stdout = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const urls = await new Promise<{ url: string; gatewayUrl: string | undefined }>(
    (resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`kiln up did not start in 30 s:\n${stdout}${stderr}`)),
        30_000,
      );
      if (child.stdout === null) throw new Error('no stdout pipe');
      let url: string | undefined;
      createInterface({ input: child.stdout }).on('line', (line) => {
        stdout += `${line}\n`;
        const api = /^Kiln API listening on (http:\/\/\S+)$/.exec(line)?.[1];
        const gateway = /^Kiln gateway listening on (http:\/\/\S+)$/.exec(line)?.[1];
        if (api !== undefined) url = api;
        if (url === undefined) return;
        if (options.gateway !== true || gateway !== undefined) {
          clearTimeout(timer);
          resolve({ url, gatewayUrl: gateway });
        }
      });
      child.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`kiln up exited with ${code}:\n${stdout}${stderr}`));
      });
    },
  );
  return {
    ...urls,
    stdout: () => stdout,
    stderr: () => stderr,
    pid: child.pid ?? 0,
    ended,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return ended;
    },
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/** One CLI invocation per call, against `url`, with `home` as KILN_HOME. */
export class Cli {
  constructor(
    private readonly url: string,
    private readonly home: string,
  ) {}

  run(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [bin, ...args], {
        cwd: root,
        env: { ...process.env, KILN_URL: this.url, KILN_HOME: this.home, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  /** A command that must succeed, with nothing on stderr; returns stdout. */
  async ok(args: readonly string[]): Promise<string> {
    const run = await this.run(args);
    assert.equal(run.code, 0, `kiln ${args.join(' ')} failed:\n${run.stderr}`);
    assert.equal(run.stderr, '', `kiln ${args.join(' ')} wrote to stderr`);
    return run.stdout;
  }

  /** A `--json` command that must succeed; stdout must be exactly one JSON document. */
  async json<T>(args: readonly string[]): Promise<T> {
    return JSON.parse(await this.ok([...args, '--json'])) as T;
  }

  /** A command that must fail with `exitCode`, nothing on stdout, and on stderr one
   *  `error: … (KILN_…)` line and at most one `hint:` line; returns stderr. */
  async fails(
    args: readonly string[],
    exitCode: number,
    env: Record<string, string> = {},
  ): Promise<string> {
    const run = await this.run(args, env);
    assert.equal(
      run.code,
      exitCode,
      `kiln ${args.join(' ')}: expected exit ${exitCode}, got ${run.code}\n${run.stderr}`,
    );
    assert.equal(run.stdout, '');
    const lines = run.stderr.trimEnd().split('\n');
    assert.match(lines[0] ?? '', /^error: .+ \(KILN_[A-Z_]+\)$/, run.stderr);
    assert.ok(
      lines.length <= 2 && (lines[1] === undefined || lines[1].startsWith('hint: ')),
      run.stderr,
    );
    return run.stderr;
  }
}

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** A port nothing listens on: bind one, note it, release it. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address !== null ? address.port : 1;
}
