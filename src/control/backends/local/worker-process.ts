// One worker OS process as its supervisor sees it: the JSON event lines it prints on stdout,
// the tail of what it wrote on stderr, and its exit. Started either for a replica (`--spec`)
// or as a standby (`--standby`, handed its spec later: standby-workers.ts).

import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { WorkerEvent } from '../../../worker/worker-spec.ts';
import { moduleEntry } from '../../../core/module-entry.ts';

// Compiled when this module is (dist/), else the source through tsx (module-entry.ts).
const workerEntry = moduleEntry(import.meta.url, '../../../worker/main');

export interface WorkerProcessOptions {
  /** Arguments after the entry: `['--spec', FILE]` or `['--standby']`. */
  readonly args: readonly string[];
  /** Own session, stderr appended to logPath (the worker may outlive this process). */
  readonly detached: boolean;
  /** Where a detached worker's stderr goes. */
  readonly logPath: string;
  /**
   * A pipe on stdin: the worker stops when it closes (a supervised worker), and a standby
   * reads its handoff from it. Without: stdin is /dev/null.
   */
  readonly stdinPipe: boolean;
  readonly env: NodeJS.ProcessEnv;
}

export type WorkerExit = { readonly code: number | null; readonly signal: string | null };

export class WorkerProcess {
  readonly child: ChildProcess;
  /** Where a detached worker's stderr goes (the file it was started with). */
  readonly logPath: string;
  /** Resolves when the process has exited. */
  readonly exited: Promise<WorkerExit>;
  private onEventLine: (event: WorkerEvent) => void = () => undefined;
  private stderrTail = '';

  constructor(options: WorkerProcessOptions) {
    this.logPath = options.logPath;
    const logFd = options.detached ? openSync(options.logPath, 'a') : null;
    try {
      const argv = [...workerEntry.execArgv, workerEntry.path, ...options.args];
      this.child = spawn(process.execPath, argv, {
        detached: options.detached,
        stdio: [options.stdinPipe ? 'pipe' : 'ignore', 'pipe', logFd ?? 'pipe'],
        env: options.env,
      });
    } finally {
      if (logFd !== null) closeSync(logFd);
    }
    this.child.stdin?.on('error', () => undefined); // a worker gone before reading its handoff
    this.child.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-2000);
    });
    if (this.child.stdout === null) throw new Error('no stdout pipe to the worker');
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      let event: WorkerEvent;
      try {
        event = JSON.parse(line) as WorkerEvent;
      } catch {
        return; // not an event line
      }
      this.onEventLine(event);
    });
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => resolve({ code, signal }));
    });
  }

  get pid(): number | null {
    return this.child.pid ?? null;
  }

  /** Whether the process has exited (or was signalled). */
  get gone(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** Who hears its events from now on (the last one set). */
  listen(onEvent: (event: WorkerEvent) => void): void {
    this.onEventLine = onEvent;
  }

  /** The last ~2 KB it wrote on a piped stderr ('' when its stderr is a log file). */
  get stderr(): string {
    return this.stderrTail;
  }

  /**
   * Whether this process keeps its supervisor's event loop alive (a replica does, like any
   * child; a standby does not: it has no work, and ends when its supervisor does).
   */
  hold(held: boolean): void {
    const handles = [this.child, this.child.stdin, this.child.stdout, this.child.stderr];
    for (const handle of handles) {
      const refable = handle as { ref?: () => void; unref?: () => void } | null;
      if (held) refable?.ref?.();
      else refable?.unref?.();
    }
  }

  /** Writes one line to its stdin (a standby's handoff). */
  send(line: string): void {
    this.child.stdin?.write(`${line}\n`);
  }
}
