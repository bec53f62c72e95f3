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
//
// A replica start takes a standby worker when one waits (standby-workers.ts): a process
// already booted, handed the replica's spec file on its stdin, then the same as a worker
// started for it. A detached standby's stderr goes to run/standby/<n>.log until the handoff,
// when that file becomes worker.log in the replica's folder.

import { mkdir, rm, writeFile } from 'node:fs/promises';
import {
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { maxSocketPathBytes, type WorkerSpec } from '../../../worker/worker-spec.ts';
import type { StandbyHandoff } from '../../../worker/standby.ts';
import type {
  Backend,
  ReplicaEvent,
  ReplicaHandle,
  ReplicaLaunch,
  SurvivingReplica,
} from '../backend.ts';
import { findSurvivors, type LocalSurvivor } from './surviving-replica.ts';
import { placementEnv } from '../../placement/placement-env.ts';
import { otlpUrlEnv } from '../../../observability/tracing/otlp-url.ts';
import { StandbyWorkers } from './standby-workers.ts';
import { WorkerProcess } from './worker-process.ts';

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
  /**
   * Standby workers kept ready for replica starts (default 1; 0: every start spawns). The
   * first is started once a replica is ready (a platform that never starts one pays nothing),
   * or at init with `prestartStandby`.
   */
  readonly standbyWorkers?: number;
  /** Start the standby workers at init, before any replica (what `kiln up` asks for). */
  readonly prestartStandby?: boolean;
  /** Workers export traces to this OTLP/HTTP collector (`kiln up --otlp`; docs/tracing.md). */
  readonly otlpUrl?: string;
}

export class LocalBackend implements Backend {
  readonly kind = 'local' as const;
  private readonly children = new Set<WorkerProcess>();
  private readonly standby: StandbyWorkers;
  /** Numbers standby log files. */
  private standbyCount = 0;
  private found: readonly LocalSurvivor[] = [];
  /** Adopted workers not yet stopped: close() stops them like children. */
  private readonly adopted = new Set<ReplicaHandle>();

  constructor(private readonly options: LocalBackendOptions) {
    this.standby = new StandbyWorkers({
      size: options.standbyWorkers ?? 1,
      spawn: () => {
        if (this.detached) mkdirSync(this.standbyDir, { recursive: true });
        return {
          args: ['--standby'],
          detached: this.detached,
          logPath: join(this.standbyDir, `${++this.standbyCount}.${this.pid}.log`),
          stdinPipe: true,
          env: { ...process.env, ...this.tracingEnv },
        };
      },
    });
  }

  /** What tells a worker to export traces (none: it inherits this process's setting). */
  private get tracingEnv(): Record<string, string> {
    const url = this.options.otlpUrl;
    return url === undefined ? {} : { [otlpUrlEnv]: url };
  }

  private get detached(): boolean {
    return this.options.detached === true;
  }

  private get pid(): number {
    return this.options.pid ?? process.pid;
  }

  /** Where detached standbys log until handed a replica. */
  private get standbyDir(): string {
    return join(this.options.runDir, 'standby');
  }

  /** The standby workers waiting (pid, and whether warm yet). */
  standbyWorkers(): readonly { readonly pid: number | null; readonly warm: boolean }[] {
    return this.standby.list();
  }

  start(launch: ReplicaLaunch, onEvent: (event: ReplicaEvent) => void): ReplicaHandle {
    const workDir = replicaFolder(this.options.runDir, launch.replicaId, this.pid);
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
    const detached = this.detached;
    const logPath = join(workDir, 'worker.log');
    const child =
      this.handOff(specPath, launch, logPath) ??
      new WorkerProcess({
        args: ['--spec', specPath],
        detached,
        logPath,
        stdinPipe: !detached,
        env: {
          ...process.env,
          ...this.tracingEnv,
          KILN_REPLICA_ID: launch.replicaId,
          ...placementEnv(launch.placement),
        },
      });
    this.children.add(child);
    // Once this start has settled, the next one may find a standby waiting.
    let settled = false;
    const settle = (): void => {
      if (settled) return;
      settled = true;
      this.standby.fill();
    };
    child.listen((event) => {
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
          settle();
          break;
        case 'failed':
          onEvent({ kind: 'failed', reason: event.message, code: event.code });
          settle();
          break;
        case 'standby':
          break;
      }
    });
    void child.exited.then(({ code, signal }) => {
      this.children.delete(child);
      const stderrTail = detached ? fileTail(logPath, 2000) : child.stderr;
      if (code !== 0 && code !== 3 && signal !== 'SIGTERM' && stderrTail.trim() !== '') {
        process.stderr.write(
          `replica ${launch.replicaId} exited (${code ?? signal}): ${stderrTail.trim().split('\n').slice(-3).join(' | ')}\n`,
        );
      }
      onEvent({ kind: 'exited', code, signal });
      settle();
    });
    child.child.on('error', (error) =>
      onEvent({ kind: 'failed', reason: `could not start the worker: ${error.message}` }),
    );
    return {
      id: launch.replicaId,
      pid: child.pid,
      async stop(graceMs: number): Promise<void> {
        if (child.gone) return;
        child.child.kill('SIGTERM');
        const timer = setTimeout(() => child.child.kill('SIGKILL'), graceMs);
        await child.exited;
        clearTimeout(timer);
      },
    };
  }

  /**
   * Hands the replica's spec to a waiting standby, if there is one: its log (detached) moves
   * into the replica's folder as worker.log, after what an earlier launch of this replica
   * logged there.
   */
  private handOff(specPath: string, launch: ReplicaLaunch, logPath: string): WorkerProcess | null {
    // A replica given accelerator devices starts fresh: a runtime may read CUDA_VISIBLE_DEVICES
    // as it loads, and the standby has loaded its runtimes already.
    if ((launch.placement?.devices.length ?? 0) > 0) return null;
    const replicaId = launch.replicaId;
    const standby = this.standby.take();
    if (standby === null) return null;
    if (this.detached) {
      const standbyLog = standby.logPath;
      try {
        if (existsSync(logPath)) {
          const earlier = readFileSync(logPath);
          const own = readFileSync(standbyLog);
          writeFileSync(standbyLog, Buffer.concat([earlier, own]));
        }
        renameSync(standbyLog, logPath);
      } catch {
        // The log stays where it is: the worker serves all the same.
      }
    }
    const handoff: StandbyHandoff = {
      spec: specPath,
      replicaId,
      supervised: !this.detached,
      env: placementEnv(launch.placement),
    };
    standby.send(JSON.stringify(handoff));
    // A worker that outlives this process must not hold a pipe to it.
    if (this.detached) standby.child.stdin?.end();
    return standby;
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
    await this.standby.close();
    await Promise.all([...this.adopted].map((handle) => handle.stop(10_000)));
    this.adopted.clear();
    const all = [...this.children];
    for (const child of all) child.child.kill('SIGTERM');
    await Promise.all(
      all.map(async (child) => {
        if (child.gone) return;
        const timer = setTimeout(() => child.child.kill('SIGKILL'), 10_000);
        await child.exited;
        clearTimeout(timer);
      }),
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
    // Standbys of an earlier platform ended with it (their stdin closed); their logs go.
    await rm(this.standbyDir, { recursive: true, force: true });
    await mkdir(this.standbyDir, { recursive: true });
    if (this.options.prestartStandby === true) this.standby.fill();
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
