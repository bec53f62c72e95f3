// Runs the gateway as its own OS process (the data plane must keep serving if the control
// plane dies) and restarts it if it exits unexpectedly.
//
// Detached (what `kiln up` asks for), the gateway runs in its own session with its stderr in
// <stateDir>/gateway.log, and reads the control plane's URL from a file in the home before
// each poll: a platform killed outright leaves it serving its last snapshot, and the next
// platform on the home adopts it (adopt(): the process its record names, still running,
// healthy and where this platform wants it) instead of starting another.

import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { systemClock, type Clock } from '../core/clock.ts';
import { isRunning, stopProcess, type ProcessIdentity } from '../core/process-identity.ts';
import { readGatewayRecord } from '../gateway/gateway-record.ts';
import { backoffResetAfterMs } from './replica-plan.ts';
import { otlpUrlEnv } from '../observability/tracing/otlp-url.ts';
import { moduleEntry } from '../core/module-entry.ts';

// Compiled when this module is (dist/), else the source through tsx (module-entry.ts).
const gatewayEntry = moduleEntry(import.meta.url, '../gateway/main');

export interface GatewayProcessOptions {
  readonly controlUrl: string;
  /** Bearer token for the control plane (null in --dev); passed in the environment, not argv. */
  readonly controlToken: string | null;
  readonly host: string;
  readonly port: number;
  readonly stateDir: string;
  /**
   * The gateway outlives this process (own session, log file, no stdin pipe) and finds the
   * control plane through this file (`<home>/run/platform.url`). Without it, the gateway
   * stops when this process's end of its stdin closes.
   */
  readonly controlUrlFile?: string;
  /** For the restart backoff's reset (default: the system clock). */
  readonly clock?: Clock;
  /** The gateway exports traces to this OTLP/HTTP collector (`kiln up --otlp`). */
  readonly otlpUrl?: string;
  /**
   * Gateway processes on the one port (`kiln up --gateway-processes N`, issue 16; default 1).
   * Over 1, the process spawned here supervises them (gateway-supervisor.ts): its pid, line
   * and record stand for all of them.
   */
  readonly processes?: number;
}

export class GatewayProcess {
  private child: ChildProcess | null = null;
  /** A gateway an earlier platform started, taken over by adopt(). */
  private adopted: ProcessIdentity | null = null;
  private adoptedWatch: NodeJS.Timeout | null = null;
  private stopping = false;
  private restarts = 0;
  /** When the running gateway started listening (or was adopted); null while none runs. */
  private upSinceMs: number | null = null;
  url = '';

  constructor(private readonly options: GatewayProcessOptions) {}

  /** Restarts in a row so far: what the next restart's backoff doubles from. */
  get restartsInARow(): number {
    return this.restarts;
  }

  /** Whether a gateway runs and this object has seen it listening (or adopted it). */
  get serving(): boolean {
    return this.upSinceMs !== null;
  }

  private now(): number {
    return (this.options.clock ?? systemClock).now();
  }

  /** The pid of the gateway process, if one runs. */
  get pid(): number | null {
    return this.adopted?.pid ?? this.child?.pid ?? null;
  }

  /**
   * Takes over the gateway an earlier platform on this home left running, if it still runs,
   * answers, and listens where this platform would have it (same host; the port asked, or
   * any for 0) with as many processes as asked; resolves with its URL. Otherwise stops it (if it runs) and resolves null:
   * start() one.
   */
  async adopt(): Promise<string | null> {
    const record = readGatewayRecord(this.options.stateDir);
    if (record === null || !isRunning(record.process)) return null;
    const placed =
      record.host === this.options.host &&
      record.processes === (this.options.processes ?? 1) &&
      (this.options.port === 0 || Number(new URL(record.url).port) === this.options.port);
    if (placed && (await answers(record.url))) {
      this.adopted = record.process;
      this.url = record.url;
      this.upSinceMs = this.now();
      const identity = record.process;
      // Not our child: no 'exit' event comes, so look for the pid going away.
      this.adoptedWatch = setInterval(() => {
        if (this.adopted !== identity || isRunning(identity)) return;
        this.dropAdopted();
        this.restartLater('gateway exited');
      }, 500);
      this.adoptedWatch.unref();
      return record.url;
    }
    await stopProcess(record.process, 10_000);
    return null;
  }

  /** Starts the gateway; resolves with its URL once it listens. */
  start(): Promise<string> {
    return new Promise((resolve, reject) => {
      const { controlUrl, controlUrlFile, host, port, stateDir } = this.options;
      const detached = controlUrlFile !== undefined;
      // After a restart, reuse the port it had so clients keep their URL.
      const listenPort = this.url === '' ? port : Number(new URL(this.url).port);
      let logFd: number | null = null;
      if (detached) {
        mkdirSync(stateDir, { recursive: true });
        logFd = openSync(join(stateDir, 'gateway.log'), 'a');
      }
      let child: ChildProcess;
      try {
        child = spawn(
          process.execPath,
          [
            ...gatewayEntry.execArgv,
            gatewayEntry.path,
            '--control-url',
            controlUrl,
            '--host',
            host,
            '--port',
            String(listenPort),
            '--state-dir',
            stateDir,
            '--processes',
            String(this.options.processes ?? 1),
            ...(detached ? ['--control-url-file', controlUrlFile] : ['--exit-with-parent']),
          ],
          {
            detached,
            stdio: [detached ? 'ignore' : 'pipe', 'pipe', logFd ?? 'inherit'],
            env: {
              ...process.env,
              ...(this.options.otlpUrl === undefined ? {} : { [otlpUrlEnv]: this.options.otlpUrl }),
              KILN_CONTROL_TOKEN: this.options.controlToken ?? '',
            },
          },
        );
      } finally {
        if (logFd !== null) closeSync(logFd);
      }
      this.child = child;
      // A spawn that fails (no node binary, no resources) is reported by 'error', not by a
      // throw; unhandled, it would take the control plane down. 'exit' may not follow.
      child.once('error', (error) => {
        if (this.child === child) this.child = null;
        reject(error);
      });
      child.stdin?.on('error', () => undefined); // the gateway gone before we close it
      let listening = false;
      let failure: { code: string; message: string } | null = null;
      if (child.stdout === null) throw new Error('no stdout pipe');
      createInterface({ input: child.stdout }).on('line', (line) => {
        try {
          const event = JSON.parse(line) as {
            event?: string;
            url?: string;
            code?: string;
            message?: string;
          };
          if (event.event === 'failed')
            failure = { code: event.code ?? 'UNKNOWN', message: event.message ?? '' };
          if (event.event === 'listening' && typeof event.url === 'string') {
            listening = true;
            this.url = event.url;
            this.upSinceMs = this.now();
            resolve(event.url);
          }
        } catch {
          // not an event line
        }
      });
      child.once('exit', (code, signal) => {
        this.child = null;
        if (!listening) {
          const error = new Error(
            failure === null
              ? `the gateway exited before listening (${code ?? signal})`
              : `the gateway could not listen on ${host}:${listenPort}: ${failure.message}`,
          ) as Error & { code?: string; address?: string; port?: number };
          if (failure !== null) error.code = failure.code;
          error.address = host;
          error.port = listenPort;
          reject(error);
          return;
        }
        this.restartLater(`gateway exited (${code ?? signal})`);
      });
    });
  }

  /** Starts the gateway again after a backoff; a failed restart schedules the next one. */
  private restartLater(why: string): void {
    if (this.stopping) return;
    // A gateway that served a good while before it died starts its backoff over, as a
    // replica does (replica-plan.ts): a crash a week must not wait as long as a crash loop.
    if (this.upSinceMs !== null && this.now() - this.upSinceMs >= backoffResetAfterMs)
      this.restarts = 0;
    this.upSinceMs = null;
    this.restarts += 1;
    const delayMs = Math.min(30_000, 250 * 2 ** Math.min(this.restarts, 7));
    process.stderr.write(`${why}; restarting in ${delayMs} ms\n`);
    setTimeout(() => {
      if (this.stopping) return;
      this.start().catch((error: unknown) =>
        this.restartLater(`gateway restart failed: ${String(error)}`),
      );
    }, delayMs).unref();
  }

  private dropAdopted(): void {
    this.adopted = null;
    if (this.adoptedWatch !== null) clearInterval(this.adoptedWatch);
    this.adoptedWatch = null;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const adopted = this.adopted;
    if (adopted !== null) {
      this.dropAdopted();
      await stopProcess(adopted, 10_000);
      return;
    }
    const child = this.child;
    if (child === null || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

/** Whether a gateway answers its liveness probe at `url`. */
async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/v2/health/live`, { signal: AbortSignal.timeout(2_000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/** What `--gateway-processes` accepts: an integer 1..64. */
export function isGatewayProcessCount(value: number): boolean {
  return Number.isInteger(value) && value >= 1 && value <= 64;
}
