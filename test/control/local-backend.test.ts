// The local backend's replica folders: two platforms on one home never share one (replica
// ids are only unique within a platform); at start, folders whose worker is gone are
// removed, and running workers are offered for adoption — found by the pid and start mark
// each records, so a recycled pid is never taken (or killed) for a worker.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { identifyProcess, isRunning } from '../../src/core/process-identity.ts';
import { LocalBackend, replicaFolder } from '../../src/control/backends/local/local-backend.ts';
import type { ReplicaEvent } from '../../src/control/backends/backend.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { until } from '../helpers/until.ts';
import { mlpWorkerSpec } from '../worker/mlp-worker-spec.ts';

test('the same replica id started by two platforms gets two folders', () => {
  assert.notEqual(
    replicaFolder('/h/run', 'fraud-v1-r0-1', 100),
    replicaFolder('/h/run', 'fraud-v1-r0-1', 200),
  );
  assert.equal(replicaFolder('/h/run', 'fraud-v1-r0-1', 100), '/h/run/replicas/fraud-v1-r0-1.100');
});

const schema = {
  inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 2] }],
  outputs: [{ name: 'y', datatype: 'FP32', shape: [-1] }],
};

/**
 * A stand-in worker: answers the probes a platform sends an adopted worker (ready, then the
 * model's metadata), and prints its URL. Exits on SIGTERM like a drained worker.
 */
async function fakeWorker(): Promise<{ child: ChildProcess; url: string }> {
  const script = `
    const http = require('node:http');
    const metadata = ${JSON.stringify(JSON.stringify({ name: 'a', ...schema }))};
    const server = http.createServer((req, res) => {
      if (req.url === '/v2/health/ready') return res.end('{"ready":true}');
      if (req.url === '/v2/models/a') return res.end(metadata);
      res.statusCode = 404; res.end();
    });
    server.listen(0, '127.0.0.1', () => console.log('http://127.0.0.1:' + server.address().port));
    process.on('SIGTERM', () => process.exit(0));`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve) =>
    createInterface({ input: child.stdout }).once('line', resolve),
  );
  return { child, url };
}

async function writeReplica(
  folder: string,
  record: object | null,
  spec: object = {
    replicaId: 'a-v1-r0-7',
    endpoint: 'a',
    model: 'm',
    version: 1,
    revision: 'R',
    slot: 0,
  },
): Promise<void> {
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, 'spec.json'), JSON.stringify(spec));
  if (record !== null) await writeFile(join(folder, 'worker.json'), JSON.stringify(record));
}

test('init removes the folders of workers that are gone and offers running ones', async (t) => {
  const runDir = join(await tempDir(), 'run');
  const live = await fakeWorker();
  t.after(() => live.child.kill('SIGKILL'));
  const dead = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => dead.once('exit', resolve));
  // A live process that is not the worker the folder recorded: its pid was reused.
  const stranger = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
    stdio: 'ignore',
  });
  t.after(() => stranger.kill('SIGKILL'));
  const liveIdentity = identifyProcess(live.child.pid ?? 0);
  const strangerIdentity = identifyProcess(stranger.pid ?? 0);
  assert.ok(liveIdentity !== null && strangerIdentity !== null);
  const folders = {
    live: replicaFolder(runDir, 'a-v1-r0-7', 11),
    dead: replicaFolder(runDir, 'a-v1-r0-2', 11),
    recycled: replicaFolder(runDir, 'a-v1-r1-3', 11),
    noRecord: replicaFolder(runDir, 'a-v1-r1-4', 12),
    unnamed: join(runDir, 'replicas', 'from-an-older-kiln'),
  };
  await writeReplica(folders.live, { ...liveIdentity, url: live.url, socketPath: null });
  await writeReplica(folders.dead, { pid: dead.pid, startMark: 'x', url: 'http://127.0.0.1:1' });
  await writeReplica(folders.recycled, {
    pid: strangerIdentity.pid,
    startMark: `${strangerIdentity.startMark}-before`,
    url: 'http://127.0.0.1:1',
  });
  await writeReplica(folders.noRecord, null);
  await writeReplica(folders.unnamed, null);

  const backend = new LocalBackend({ runDir });
  await backend.init();
  assert.equal(existsSync(folders.dead), false);
  assert.equal(existsSync(folders.recycled), false);
  assert.equal(existsSync(folders.noRecord), false);
  assert.ok(isRunning(strangerIdentity), 'a recycled pid is never signalled');
  assert.ok(existsSync(folders.live));
  assert.ok(existsSync(folders.unnamed));

  const survivors = backend.survivors();
  assert.deepEqual(
    survivors.map((s) => [s.pid, s.launch.replicaId, s.launch.revision, s.launch.slot]),
    [[live.child.pid, 'a-v1-r0-7', 'R', 0]],
  );
  // Adopted, it reports like a started worker: listening at once, ready once probed (with
  // the schema it serves), exited once stopped.
  const events: ReplicaEvent[] = [];
  const handle = survivors[0]!.adopt((event) => events.push(event));
  await until(() => events.some((e) => e.kind === 'ready'), 'the adopted worker to be ready');
  assert.deepEqual(events, [
    { kind: 'listening', url: live.url, socketPath: null },
    { kind: 'ready', schema, memoryBytes: 0, featureNames: null },
  ]);
  await handle.stop(5_000);
  assert.equal(isRunning(liveIdentity), false);
  assert.equal(events.at(-1)?.kind, 'exited');
  assert.equal(existsSync(folders.live), false);
});

test('a running worker that never said where it listens is stopped, not adopted', async (t) => {
  const runDir = join(await tempDir(), 'run');
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
    stdio: 'ignore',
  });
  t.after(() => child.kill('SIGKILL'));
  const identity = identifyProcess(child.pid ?? 0);
  assert.ok(identity !== null);
  const folder = replicaFolder(runDir, 'a-v1-r0-1', 11);
  await writeReplica(folder, identity);
  const backend = new LocalBackend({ runDir });
  await backend.init();
  assert.deepEqual(backend.survivors(), []);
  assert.equal(isRunning(identity), false);
  assert.equal(existsSync(folder), false);
});

test('a worker whose folder was removed while it started stops itself', async (t) => {
  // A platform killed just after spawning a worker (a restart, a rollout) leaves a folder
  // whose record the next start (or `kiln down`) may read before the worker writes it: it
  // removes the folder as a worker gone, just as the worker records itself there. The
  // worker, detached, must not go on loading and serving where nobody can find it.
  const { spec, home } = await mlpWorkerSpec();
  const runDir = join(home, 'run');
  const backend = new LocalBackend({ runDir, detached: true });
  await backend.init();
  const { replicaId, endpoint, model, version, format, files, schema: declared } = spec;
  const events: ReplicaEvent[] = [];
  const handle = backend.start(
    {
      ...{ replicaId, endpoint, model, version, format, files, schema: declared },
      revision: 'R',
      slot: 0,
      artifacts: spec.artifacts,
      maxBodyBytes: spec.maxBodyBytes,
      config: spec.config,
      batching: spec.batching,
      defaultTimeoutMs: spec.defaultTimeoutMs,
    },
    (event) => events.push(event),
  );
  t.after(() => handle.stop(5_000));
  const folder = replicaFolder(runDir, replicaId, process.pid);
  // The race's outcome: the scan saw no record, the worker wrote one, the scan removed all.
  await until(() => existsSync(join(folder, 'worker.json')), 'the worker to record itself', 1);
  // The worker may be writing into it meanwhile (ENOTEMPTY): retried, as the platform does.
  await rm(folder, { recursive: true, force: true, maxRetries: 20, retryDelay: 5 });
  const deadline = Date.now() + 120_000;
  while (!events.some((e) => e.kind === 'exited' || e.kind === 'ready')) {
    assert.ok(Date.now() < deadline, 'timed out waiting for the worker to stop or be ready');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.equal(
    events.find((e) => e.kind === 'exited' || e.kind === 'ready')?.kind,
    'exited',
    'it stops: nobody could find it',
  );
  assert.equal(existsSync(folder), false, 'and leaves no folder behind');
});
