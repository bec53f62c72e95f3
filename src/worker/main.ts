// Entry point of a worker process: `node dist/worker/main.js --spec FILE` (from the sources:
// `node --import tsx src/worker/main.ts …`), or `… --standby` for a standby worker that reads
// which spec to serve from stdin (standby.ts), or `… --spec-env NAME` for a pod of the
// Kubernetes backend, whose spec is in its environment (spec-from-env.ts).
// Speaks to its supervisor through JSON lines on stdout (see WorkerEvent) and exits 3 when
// the model cannot be loaded, 0 after a drain on SIGTERM/SIGINT. It also records itself in
// its folder (worker.json: pid, start mark, once listening its URL and socket, once ready
// the model's feature names), so a
// platform started after its own died can find it, check it is still this worker, and adopt
// or stop it.

import { existsSync, fstatSync, renameSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { identifyProcess } from '../core/process-identity.ts';
import { readWorkerSpec, workerRecordFile, type WorkerEvent } from './worker-spec.ts';
import { startWorker } from './start-worker.ts';
import { startPoolWorker } from './pool/start-pool-worker.ts';
import { tracingFromEnv } from '../observability/tracing/start-tracing.ts';
import { startProcessDiagnostics } from '../observability/process-diagnostics.ts';
import { applyV8FlagsFromEnv } from '../observability/v8-flags-from-env.ts';

// The supervisor gone (even by kill -9, when the worker outlives it), writes to our pipes
// fail with EPIPE: never a crash of a worker that is serving, draining or cleaning up.
process.stdout.on('error', () => undefined);
process.stderr.on('error', () => undefined);

const { specPath, supervised } = await whatToServe();
const spec = await readWorkerSpec(specPath);
const me = identifyProcess(process.pid);
// What the record says besides the identity: the address once listening, and once ready the
// model's feature names (what a platform adopting this worker cannot read from its stdout).
let recorded: Record<string, unknown> = {};
let hasRecord = false;
const startedFromFolder = resolve(dirname(specPath)) === resolve(spec.workDir);
const record = (more: Record<string, unknown>): void => {
  recorded = { ...recorded, ...more };
  if (me === null) return;
  const path = join(spec.workDir, workerRecordFile);
  // The record gone (or no folder for the first): a platform that read the folder before
  // this worker recorded itself took it for gone and removed it (the socket's mkdir may
  // have made the folder again since). Nobody will find, adopt or stop this worker — detached,
  // it outlives every platform — so stop, rather than load and serve for nobody.
  if (hasRecord && !existsSync(path)) return stop();
  try {
    // Whole or not at all: a platform may read it at any moment.
    writeFileSync(`${path}.tmp`, JSON.stringify({ ...me, ...recorded }));
    renameSync(`${path}.tmp`, path);
    hasRecord = true;
  } catch (error) {
    // No folder: gone only if it was there, i.e. this worker was started from a spec in it
    // (as a platform starts its workers); a worker given a folder to make gets it later.
    if ((error as { code?: unknown }).code === 'ENOENT' && (hasRecord || startedFromFolder)) stop();
  }
};
const emit = (event: WorkerEvent): void => {
  if (event.event === 'listening') record({ url: event.url, socketPath: event.socketPath ?? null });
  if (event.event === 'ready') record({ featureNames: event.featureNames ?? null });
  // Found gone while recording it (above): it stops, so it must not be announced as ready.
  if (stopping && event.event === 'ready') return;
  process.stdout.write(`${JSON.stringify(event)}\n`);
};

let worker: Awaited<ReturnType<typeof startWorker>> | null = null;
let loaded = false;
let stopping = false;
/**
 * Removes the replica's folder. A load still copying the model into it may recreate part of
 * it (its staging folder) or make the removal fail (ENOTEMPTY) while it runs; the copy fails
 * once its folder is gone, so removing again until nothing is left ends in a few rounds.
 */
const removeWorkDir = async (): Promise<void> => {
  for (let round = 0; round < 100 && existsSync(spec.workDir); round++)
    await rm(spec.workDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 5 }).catch(
      () => undefined,
    );
};
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  if (worker === null || !loaded) {
    // Still loading: nothing was accepted (requests are refused until ready), so there is
    // nothing to drain; leave no copy of the model behind.
    void removeWorkDir().then(() => process.exit(0));
    return;
  }
  worker
    .close()
    // Spans still queued go out before the worker leaves (bounded by the export timeout).
    .then(() => tracing?.shutdown())
    .then(() => process.exit(0))
    .catch(() => process.exit(1));
};
// From the start, not once loaded: a supervisor may stop a worker that hangs while loading.
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// The supervisor going away (its end of our stdin pipe closes) means this worker is
// orphaned. Only when stdin is a pipe: under a service manager or a container it is
// /dev/null, which would read as "gone" at once; and a platform whose workers outlive it
// (`kiln up`: a restarted platform adopts them) gives none — or, to a standby, says so.
if (supervised) {
  process.stdin.on('end', stop);
  process.stdin.resume();
}
// Recorded once it can be stopped (above): from here on a platform scanning the folders finds it.
record({});

// A pool worker (issue 14) serves the models the control plane assigns it, loaded on demand.
const pool = spec.pool ?? null;
// KILN_DIAGNOSTICS_DIR set (bench tail): event-loop delay, GC pauses and CPU, once a second.
startProcessDiagnostics('worker');
applyV8FlagsFromEnv();
// Tracing is on when `kiln up --otlp URL` named a collector (KILN_OTLP_URL).
const tracing = await tracingFromEnv('kiln-worker', {
  'service.instance.id': spec.replicaId,
  ...(pool === null ? { 'kiln.endpoint': spec.endpoint } : { 'kiln.pool': pool.name }),
});
worker =
  pool === null
    ? await startWorker(spec, emit, { tracing })
    : await startPoolWorker({ ...spec, pool }, emit, undefined, tracing);
await worker.loaded;
loaded = true;
if (worker.state.phase === 'failed') {
  // Let the event reach the supervisor, then leave: a failed worker never serves.
  await removeWorkDir();
  process.stdout.write('', () => process.exit(3));
}

/** The spec file from `--spec FILE`, or from the handoff a standby worker waits for. */
async function whatToServe(): Promise<{ specPath: string; supervised: boolean }> {
  if (process.argv.includes('--standby')) {
    const { standBy } = await import('./standby.ts');
    const handoff = await standBy((event) => process.stdout.write(`${JSON.stringify(event)}\n`));
    return { specPath: handoff.spec, supervised: handoff.supervised };
  }
  const envIndex = process.argv.indexOf('--spec-env');
  if (envIndex >= 0) {
    // A pod of the Kubernetes backend: its spec is in the environment (spec-from-env.ts);
    // no supervisor reads its stdout or holds its stdin (the kubelet stops it by SIGTERM).
    const { specFromEnv, writeSpecFromEnv } = await import('./spec-from-env.ts');
    const made = specFromEnv(process.argv[envIndex + 1] ?? 'KILN_WORKER_SPEC', process.env);
    if (!made.ok) {
      process.stderr.write(`worker: ${made.reason}\n`);
      process.exit(2);
    }
    return { specPath: await writeSpecFromEnv(made.spec), supervised: false };
  }
  const specIndex = process.argv.indexOf('--spec');
  const path = specIndex >= 0 ? process.argv[specIndex + 1] : undefined;
  if (path === undefined) {
    process.stderr.write('usage: worker --spec FILE | --spec-env NAME | --standby\n');
    process.exit(2);
  }
  return { specPath: path, supervised: stdinIsPipe() };
}

function stdinIsPipe(): boolean {
  try {
    return fstatSync(0).isFIFO();
  } catch {
    return false;
  }
}
