// Runs the gateway as its own OS process (the data plane must keep serving if the control
// plane dies) and restarts it if it exits unexpectedly.

import { fileURLToPath } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

const gatewayEntry = fileURLToPath(new URL('../gateway/main.ts', import.meta.url));

export interface GatewayProcessOptions {
  readonly controlUrl: string;
  /** Bearer token for the control plane (null in --dev); passed in the environment, not argv. */
  readonly controlToken: string | null;
  readonly host: string;
  readonly port: number;
  readonly stateDir: string;
}

export class GatewayProcess {
  private child: ChildProcess | null = null;
  private stopping = false;
  private restarts = 0;
  url = '';

  constructor(private readonly options: GatewayProcessOptions) {}

  /** Starts the gateway; resolves with its URL once it listens. */
  start(): Promise<string> {
    return new Promise((resolve, reject) => {
      const { controlUrl, host, port, stateDir } = this.options;
      // After a restart, reuse the port it had so clients keep their URL.
      const listenPort = this.url === '' ? port : Number(new URL(this.url).port);
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          gatewayEntry,
          '--control-url',
          controlUrl,
          '--host',
          host,
          '--port',
          String(listenPort),
          '--state-dir',
          stateDir,
          '--exit-with-parent',
        ],
        {
          stdio: ['pipe', 'pipe', 'inherit'],
          env: { ...process.env, KILN_CONTROL_TOKEN: this.options.controlToken ?? '' },
        },
      );
      this.child = child;
      // A spawn that fails (no node binary, no resources) is reported by 'error', not by a
      // throw; unhandled, it would take the control plane down. 'exit' may not follow.
      child.once('error', (error) => {
        if (this.child === child) this.child = null;
        reject(error);
      });
      child.stdin.on('error', () => undefined); // the gateway gone before we close it
      let listening = false;
      let failure: { code: string; message: string } | null = null;
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

  async stop(): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (child === null || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}
