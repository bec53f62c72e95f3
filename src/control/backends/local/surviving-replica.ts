// Workers an earlier platform on this home left running. `kiln up` detaches its workers, so
// a platform killed without a chance to stop them (kill -9, OOM) leaves them serving the
// gateway; the next platform on the home finds them here, by the folder each worker keeps:
//
//   run/replicas/<replica-id>.<platform-pid>/
//     spec.json     what it serves (the launch, with its revision and slot)
//     worker.json   {pid, startMark, url, socketPath}: written by the worker itself
//
// A folder whose worker no longer runs (its pid gone, or now another process's) is removed;
// a running worker is offered for adoption, or stopped if it cannot be (no address yet, a
// spec without its place). An adopted worker is watched by its pid and start mark, probed for
// readiness and its schema over HTTP, and stopped by signal: it has no pipe to this platform.

import { readFileSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelSchema } from '../../../core/tensor.ts';
import {
  isRunning,
  parseProcessIdentity,
  stopProcess,
  type ProcessIdentity,
} from '../../../core/process-identity.ts';
import { workerRecordFile } from '../../../worker/worker-spec.ts';
import type { ReplicaEvent, ReplicaHandle, ReplicaLaunch, SurvivingReplica } from '../backend.ts';

/** How often an adopted worker's pid is checked, and a not-yet-ready one probed, in ms. */
const watchEveryMs = 250;
const probeTimeoutMs = 2_000;

export class LocalSurvivor implements SurvivingReplica {
  readonly pid: number;

  constructor(
    readonly launch: ReplicaLaunch,
    private readonly identity: ProcessIdentity,
    private readonly folder: string,
    private readonly url: string,
    private readonly socketPath: string | null,
  ) {
    this.pid = identity.pid;
  }

  adopt(onEvent: (event: ReplicaEvent) => void): ReplicaHandle {
    let gone = false;
    let resolveExited!: () => void;
    const exited = new Promise<void>((resolve) => (resolveExited = resolve));
    const finish = (): void => {
      if (gone) return;
      gone = true;
      clearInterval(watch);
      onEvent({ kind: 'exited', code: null, signal: null });
      resolveExited();
    };
    // Not our child: no 'exit' event comes, so look for the pid going away.
    const watch = setInterval(() => {
      if (isRunning(this.identity)) return;
      finish();
      // Died by itself (a crash): it could not remove its folder. The restart gets another.
      void rm(this.folder, { recursive: true, force: true });
    }, watchEveryMs);
    watch.unref();
    onEvent({ kind: 'listening', url: this.url, socketPath: this.socketPath });
    void probeReady(this.url, this.launch.endpoint, () => gone).then((schema) => {
      if (schema === null || gone) return;
      // Written by the worker before it answers ready (worker/main.ts).
      const featureNames = readFolder(this.folder)?.featureNames ?? null;
      onEvent({ kind: 'ready', schema, memoryBytes: 0, featureNames });
    });
    return {
      id: this.launch.replicaId,
      pid: this.pid,
      stop: async (graceMs: number): Promise<void> => {
        await stopProcess(this.identity, graceMs);
        await rm(this.folder, { recursive: true, force: true }); // a killed worker leaves it
        finish();
        await exited;
      },
    };
  }

  async stop(graceMs: number): Promise<void> {
    await stopProcess(this.identity, graceMs);
    await rm(this.folder, { recursive: true, force: true });
  }
}

/**
 * Looks through the replica folders (at platform start, holding the home: no other platform
 * runs them): removes those whose worker is gone, stops workers that cannot be adopted, and
 * returns the others.
 */
export async function findSurvivors(replicasDir: string): Promise<LocalSurvivor[]> {
  const survivors: LocalSurvivor[] = [];
  for (const name of await readdir(replicasDir)) {
    if (!/\.\d+$/.test(name)) continue; // not a replica folder
    const folder = join(replicasDir, name);
    const found = readFolder(folder);
    if (found === null || !isRunning(found.identity)) {
      // A worker that has not recorded itself yet may be writing into it (ENOTEMPTY): retried.
      await rm(folder, { recursive: true, force: true, maxRetries: 20, retryDelay: 5 });
      continue;
    }
    const { identity, launch, url, socketPath } = found;
    if (launch === null || url === null) {
      await stopProcess(identity, 10_000);
      await rm(folder, { recursive: true, force: true });
      continue;
    }
    survivors.push(new LocalSurvivor(launch, identity, folder, url, socketPath));
  }
  return survivors;
}

interface FolderContents {
  readonly identity: ProcessIdentity;
  /** Null when the spec lacks the replica's place (an older platform wrote it). */
  readonly launch: ReplicaLaunch | null;
  /** Null until the worker listens. */
  readonly url: string | null;
  readonly socketPath: string | null;
  /** The model's feature names, once the worker is ready (null: none, or not yet). */
  readonly featureNames: readonly string[] | null;
}

function readFolder(folder: string): FolderContents | null {
  const record = readJson(join(folder, workerRecordFile)) as {
    url?: unknown;
    socketPath?: unknown;
    featureNames?: unknown;
  } | null;
  const identity = parseProcessIdentity(record);
  if (record === null || identity === null) return null;
  const spec = readJson(join(folder, 'spec.json')) as Partial<ReplicaLaunch> | null;
  const placed =
    spec !== null &&
    typeof spec.replicaId === 'string' &&
    typeof spec.endpoint === 'string' &&
    typeof spec.revision === 'string' &&
    typeof spec.slot === 'number';
  return {
    identity,
    launch: placed ? (spec as ReplicaLaunch) : null,
    url: typeof record.url === 'string' ? record.url : null,
    socketPath: typeof record.socketPath === 'string' ? record.socketPath : null,
    featureNames:
      Array.isArray(record.featureNames) &&
      record.featureNames.every((name) => typeof name === 'string')
        ? record.featureNames
        : null,
  };
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as unknown;
  } catch {
    return null;
  }
}

/**
 * Polls the worker until it reports ready, then asks for the schema it serves (the 'ready'
 * event a started worker prints); null if it went away first.
 */
async function probeReady(
  url: string,
  endpoint: string,
  gone: () => boolean,
): Promise<ModelSchema | null> {
  while (!gone()) {
    try {
      const ready = await fetch(`${url}/v2/health/ready`, {
        signal: AbortSignal.timeout(probeTimeoutMs),
      });
      await ready.arrayBuffer();
      if (ready.status === 200) {
        const metadata = await fetch(`${url}/v2/models/${encodeURIComponent(endpoint)}`, {
          signal: AbortSignal.timeout(probeTimeoutMs),
        });
        if (metadata.status === 200) {
          const body = (await metadata.json()) as ModelSchema;
          return { inputs: body.inputs, outputs: body.outputs };
        }
        await metadata.arrayBuffer();
      }
    } catch {
      // not answering yet (or any more): the pid watch tells which
    }
    await new Promise((resolve) => setTimeout(resolve, watchEveryMs));
  }
  return null;
}
