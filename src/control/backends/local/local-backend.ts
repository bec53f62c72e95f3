// The local backend: one worker OS process per replica, on loopback, so a crashing or leaking
// model cannot take down the control plane, the gateway or other endpoints.
//
// Each worker gets a private folder <home>/run/replicas/<replica-id>.<pid>/ holding its spec,
// its record (worker.json: pid, start mark, address), the verified copy of its model files
// and its channel socket, and reports its progress as JSON lines on stdout. The platform's
// pid in the name keeps the folders of successive platforms on one home apart (replica ids
// are only unique within one platform).
//
// Detached (what `kiln up` asks for), workers run in their own session with stdin closed and
// stderr in worker.log in their folder: a terminal's Ctrl-C reaches only the platform (which
// then stops them), and a platform killed outright leaves them serving; at the next start
// the backend finds them (surviving-replica.ts) for the reconciler to adopt or stop.

import { fileURLToPath } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { closeSync, fstatSync, mkdirSync, openSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import {
  maxSocketPathBytes,
  type WorkerEvent,
  type WorkerSpec,
} from '../../../worker/worker-spec.ts';
import type {
  Backend,
  ReplicaEvent,
  ReplicaHandle,
  ReplicaLaunch,
  SurvivingReplica,
} from '../backend.ts';
import { findSurvivors, type LocalSurvivor } from './surviving-replica.ts';
import { placementEnv } from '../../placement/placement-env.ts';

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
  /**
   * Workers outlive this process: own session, no stdin pipe, stderr to worker.log (default
   * false: they stop when this process's end of their stdin closes).
   */
  readonly detached?: boolean;
}

export class LocalBackend implements Backend {
  readonly kind = 'local' as const;
  private readonly children = new Set<ChildProcess>();
  private found: readonly LocalSurvivor[] = [];
  /** Adopted workers not yet stopped: close() stops them like children. */
  private readonly adopted = new Set<ReplicaHandle>();

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
    const detached = this.options.detached === true;
    const logPath = join(workDir, 'worker.log');
    const logFd = detached ? openSync(logPath, 'a') : null;
    let child: ChildProcess;
    try {
      child = spawn(process.execPath, ['--import', 'tsx', workerEntry, '--spec', specPath], {
        detached,
        stdio: [detached ? 'ignore' : 'pipe', 'pipe', logFd ?? 'pipe'],
        env: {
          ...process.env,
          KILN_REPLICA_ID: launch.replicaId,
          ...placementEnv(launch.placement),
        },
      });
    } finally {
      if (logFd !== null) closeSync(logFd);
    }
    this.children.add(child);
    let stderrTail = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString()).slice(-2000);
    });
    if (child.stdout === null) throw new Error('no stdout pipe to the worker');
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
        if (detached) stderrTail = fileTail(logPath, 2000);
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

  survivors(): readonly SurvivingReplica[] {
    return this.found.map((survivor) => ({
      launch: survivor.launch,
      pid: survivor.pid,
      adopt: (onEvent: (event: ReplicaEvent) => void): ReplicaHandle => {
        const handle = survivor.adopt(onEvent);
        this.adopted.add(handle);
        return {
          id: handle.id,
          pid: handle.pid,
          stop: async (graceMs: number) => {
            await handle.stop(graceMs);
            this.adopted.delete(handle);
          },
        };
      },
      stop: (graceMs: number) => survivor.stop(graceMs),
    }));
  }

  async close(): Promise<void> {
    await Promise.all([...this.adopted].map((handle) => handle.stop(10_000)));
    this.adopted.clear();
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
   * Ensures the run folder exists and looks through the replica folders left by earlier
   * platforms on this home (called once at platform start, holding the home, before any
   * replica): those whose worker is gone are removed, running workers become survivors().
   */
  async init(): Promise<void> {
    const replicas = join(this.options.runDir, 'replicas');
    await mkdir(replicas, { recursive: true });
    this.found = await findSurvivors(replicas);
    await writeFile(
      join(this.options.runDir, 'README'),
      'Kiln worker replicas: spec, record, log and verified model per replica.\n',
    );
  }
}

/** The last `bytes` of a file ('' if it cannot be read). */
function fileTail(path: string, bytes: number): string {
  try {
    const fd = openSync(path, 'r');
    try {
      const size = fstatSync(fd).size;
      const buffer = Buffer.alloc(Math.min(size, bytes));
      const read = readSync(fd, buffer, 0, buffer.length, size - buffer.length);
      return buffer.subarray(0, read).toString();
    } finally {
      closeSync(fd);
    }
  } catch {
    return '';
  }
}
