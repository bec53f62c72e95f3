// Runs the gateway as its own OS process (the data plane must keep serving if the control
// plane dies) and restarts it if it exits unexpectedly.

import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

const gatewayEntry = new URL('../gateway/main.ts', import.meta.url).pathname;

export interface GatewayProcessOptions {
  readonly controlUrl: string;
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
        ],
        { stdio: ['pipe', 'pipe', 'inherit'] },
      );
      this.child = child;
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
        if (this.stopping) return;
        this.restarts += 1;
        const delayMs = Math.min(30_000, 250 * 2 ** Math.min(this.restarts, 7));
        process.stderr.write(`gateway exited (${code ?? signal}); restarting in ${delayMs} ms\n`);
        setTimeout(() => {
          if (!this.stopping)
            this.start().catch((error: unknown) =>
              process.stderr.write(`gateway restart failed: ${String(error)}\n`),
            );
        }, delayMs).unref();
      });
    });
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
