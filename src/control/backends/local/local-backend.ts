// The local backend: one worker OS process per replica, on loopback, so a crashing or leaking
// model cannot take down the control plane, the gateway or other endpoints.
//
// Each worker gets a private folder <home>/run/replicas/<replica-id>.<pid>/ holding its spec,
// the verified copy of its model files and its channel socket, and reports its progress as
// JSON lines on stdout. The platform's pid in the name keeps two platforms on one home apart
// (replica ids are only unique within one platform), and tells a folder left by a platform
// that died (removed at the next start) from one in use.

import { fileURLToPath } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import {
  maxSocketPathBytes,
  type WorkerEvent,
  type WorkerSpec,
} from '../../../worker/worker-spec.ts';
import type { Backend, ReplicaEvent, ReplicaHandle, ReplicaLaunch } from '../backend.ts';

const workerEntry = fileURLToPath(new URL('../../../worker/main.ts', import.meta.url));

/**
 * The replica's Unix socket: in its private folder, or none where that path is too long for a
 * socket (a deep home): the gateway then reaches the worker over loopback TCP.
 */
export function channelSocketPath(workDir: string): string | null {
  const path = join(workDir, 'channel.sock');
  return Buffer.byteLength(path) <= maxSocketPathBytes ? path : null;
}

/** A replica's private folder: its id and the pid of the platform that started it. */
export function replicaFolder(runDir: string, replicaId: string, pid: number): string {
  return join(runDir, 'replicas', `${replicaId}.${pid}`);
}

export interface LocalBackendOptions {
  /** <home>/run: replica folders go under replicas/. */
  readonly runDir: string;
  readonly host?: string;
  /** This platform's pid, in its replica folders' names (tests give others). */
  readonly pid?: number;
}

export class LocalBackend implements Backend {
  readonly kind = 'local' as const;
  private readonly children = new Set<ChildProcess>();

  constructor(private readonly options: LocalBackendOptions) {}

  start(launch: ReplicaLaunch, onEvent: (event: ReplicaEvent) => void): ReplicaHandle {
    const workDir = replicaFolder(
      this.options.runDir,
      launch.replicaId,
      this.options.pid ?? process.pid,
    );
    const spec: WorkerSpec = {
      ...launch,
      host: this.options.host ?? '127.0.0.1',
      port: 0,
      workDir,
      channelSocket: channelSocketPath(workDir),
    };
    mkdirSync(workDir, { recursive: true });
    const specPath = join(workDir, 'spec.json');
    writeFileSync(specPath, JSON.stringify(spec));
    const child = spawn(process.execPath, ['--import', 'tsx', workerEntry, '--spec', specPath], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, KILN_REPLICA_ID: launch.replicaId },
    });
    this.children.add(child);
    let stderrTail = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString()).slice(-2000);
    });
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      let event: WorkerEvent;
      try {
        event = JSON.parse(line) as WorkerEvent;
      } catch {
        return; // not an event line
      }
      switch (event.event) {
        case 'listening':
          onEvent({ kind: 'listening', url: event.url, socketPath: event.socketPath ?? null });
          break;
        case 'ready':
          onEvent({
            kind: 'ready',
            schema: { inputs: event.inputs, outputs: event.outputs },
            memoryBytes: event.memoryBytes,
            featureNames: Array.isArray(event.featureNames) ? event.featureNames : null,
          });
          break;
        case 'failed':
          onEvent({ kind: 'failed', reason: event.message, code: event.code });
          break;
      }
    });
    const exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        this.children.delete(child);
        if (code !== 0 && code !== 3 && signal !== 'SIGTERM' && stderrTail.trim() !== '') {
          process.stderr.write(
            `replica ${launch.replicaId} exited (${code ?? signal}): ${stderrTail.trim().split('\n').slice(-3).join(' | ')}\n`,
          );
        }
        onEvent({ kind: 'exited', code, signal });
        resolve();
      });
    });
    child.on('error', (error) =>
      onEvent({ kind: 'failed', reason: `could not start the worker: ${error.message}` }),
    );
    return {
      id: launch.replicaId,
      pid: child.pid ?? null,
      async stop(graceMs: number): Promise<void> {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      },
    };
  }

  async close(): Promise<void> {
    const all = [...this.children];
    for (const child of all) child.kill('SIGTERM');
    await Promise.all(
      all.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
          }),
      ),
    );
  }

  /**
   * Ensures the run folder exists and removes replica folders left by platforms that are no
   * longer running, or by an earlier platform with this one's pid (called once at platform
   * start, before any replica).
   */
  async init(): Promise<void> {
    const replicas = join(this.options.runDir, 'replicas');
    await mkdir(replicas, { recursive: true });
    const me = this.options.pid ?? process.pid;
    for (const name of await readdir(replicas)) {
      const owner = Number(/\.(\d+)$/.exec(name)?.[1] ?? Number.NaN);
      // Ours from an earlier life (a container's platform always has the same pid: nothing
      // of this one has started yet), or a platform's that is gone.
      if (!Number.isNaN(owner) && (owner === me || !processAlive(owner)))
        await rm(join(replicas, name), { recursive: true, force: true });
    }
    await writeFile(
      join(this.options.runDir, 'README'),
      'Kiln worker replicas: spec and verified model copy per replica.\n',
    );
  }
}

/** Whether a process with this pid exists (EPERM: it does, and is someone else's). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: unknown }).code === 'EPERM';
  }
}
