// Standby workers (src/worker/standby.ts, src/control/backends/local/standby-workers.ts): a
// replica start takes a worker process already booted and warmed, hands it the replica's
// spec, and that process then serves exactly like one started for the replica; the pool
// refills once the replica is ready. A standby never outlives its supervisor's pipe.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ArtifactStore } from '../../src/registry/artifact-store.ts';
import { LocalBackend, replicaFolder } from '../../src/control/backends/local/local-backend.ts';
import { WorkerProcess } from '../../src/control/backends/local/worker-process.ts';
import type { ReplicaEvent, ReplicaLaunch } from '../../src/control/backends/backend.ts';
import { parseHandoff } from '../../src/worker/standby.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const fixture = fileURLToPath(
  new URL('../../fixtures/trees/xgb-binary-logistic.ubj', import.meta.url),
);
const expected = JSON.parse(
  readFileSync(
    new URL('../../fixtures/trees/xgb-binary-logistic.expected.json', import.meta.url),
    'utf8',
  ),
) as { rows: (number | null)[][]; predictions: number[] };

/** Polls `check` until it holds; fails naming `what` after `ms` (a warm-up on a busy machine). */
async function waitFor(check: () => boolean, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function treeLaunch(home: string): Promise<ReplicaLaunch> {
  const store = new ArtifactStore(join(home, 'artifacts'));
  await store.init();
  const blob = await store.ingest(createReadStream(fixture), null, { maxBytes: 1 << 30 });
  return {
    replicaId: 'churn-v1-r0-1',
    revision: 'R1',
    slot: 0,
    endpoint: 'churn',
    model: 'churn',
    version: 1,
    format: 'xgboost',
    files: [{ path: 'model.ubj', size: blob.size, sha256: blob.sha256 }],
    schema: null,
    artifacts: store.locator,
    maxBodyBytes: 1_000_000,
    config: {},
    batching: null,
    defaultTimeoutMs: null,
  };
}

function isAlive(pid: number | null): boolean {
  if (pid === null) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('a replica start takes the warm standby, which serves what XGBoost predicts; the pool refills once it is ready', async () => {
  const home = await tempDir('kiln-standby-');
  const launch = await treeLaunch(home);
  const backend = new LocalBackend({ runDir: join(home, 'run'), prestartStandby: true });
  await backend.init();
  try {
    await waitFor(() => backend.standbyWorkers()[0]?.warm === true, 'a warm standby');
    const standbyPid = backend.standbyWorkers()[0]!.pid;
    const events: ReplicaEvent[] = [];
    const handle = backend.start(launch, (event) => events.push(event));
    assert.equal(handle.pid, standbyPid, 'the standby process serves the replica');
    assert.deepEqual(backend.standbyWorkers(), [], 'taken: none waits until the replica is ready');
    await waitFor(() => events.some((e) => e.kind === 'ready' || e.kind === 'exited'), 'ready');
    const listening = events.find((e) => e.kind === 'listening');
    assert.ok(listening?.kind === 'listening');
    assert.equal(events.at(-1)?.kind, 'ready');

    const rows = expected.rows.slice(0, 10);
    const response = await fetch(`${listening.url}/v2/models/churn/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        inputs: [{ name: 'input', datatype: 'FP32', shape: [rows.length, 8], data: rows.flat() }],
      }),
    });
    const body = (await response.json()) as { outputs: { data: number[] }[] };
    assert.equal(response.status, 200, JSON.stringify(body));
    const got = body.outputs[0]!.data;
    expected.predictions.slice(0, 10).forEach((p, i) => {
      assert.ok(Math.abs(got[i]! - p) < 1e-6, `row ${i}: ${got[i]} vs ${p}`);
    });

    await waitFor(() => backend.standbyWorkers().length === 1, 'the pool to refill');
    const next = backend.standbyWorkers()[0]!.pid;
    assert.notEqual(next, standbyPid);
    await handle.stop(10_000);
    assert.equal(events.at(-1)?.kind, 'exited');
    await backend.close();
    assert.equal(isAlive(next), false, 'close() stops the waiting standby');
  } finally {
    await backend.close();
  }
});

test("a detached standby's log becomes worker.log in the replica's folder", async () => {
  const home = await tempDir('kiln-standby-');
  const launch = await treeLaunch(home);
  const runDir = join(home, 'run');
  const backend = new LocalBackend({
    runDir,
    detached: true,
    prestartStandby: true,
    pid: 4242,
  });
  await backend.init();
  try {
    await waitFor(() => backend.standbyWorkers()[0]?.warm === true, 'a warm standby');
    assert.deepEqual(await readdir(join(runDir, 'standby')), ['1.4242.log']);
    const events: ReplicaEvent[] = [];
    const handle = backend.start(launch, (event) => events.push(event));
    await waitFor(() => events.some((e) => e.kind === 'ready' || e.kind === 'exited'), 'ready');
    assert.equal(events.at(-1)?.kind, 'ready');
    const folder = replicaFolder(runDir, launch.replicaId, 4242);
    assert.ok(existsSync(join(folder, 'worker.log')));
    assert.ok(!(await readdir(join(runDir, 'standby'))).includes('1.4242.log'));
    await handle.stop(10_000);
    assert.equal(isAlive(handle.pid), false);
  } finally {
    await backend.close();
  }
});

test('a standby ends when its supervisor goes away before a handoff, and refuses a bad handoff', async () => {
  const home = await tempDir('kiln-standby-');
  const start = (): WorkerProcess =>
    new WorkerProcess({
      args: ['--standby'],
      detached: false,
      logPath: join(home, 'unused.log'),
      stdinPipe: true,
      env: { ...process.env },
    });
  const orphan = start();
  orphan.child.stdin?.end();
  assert.deepEqual(await orphan.exited, { code: 0, signal: null });

  const confused = start();
  confused.send('{"spec": 42}');
  assert.deepEqual(await confused.exited, { code: 2, signal: null });
  assert.match(confused.stderr, /not a standby handoff/);
});

test('parseHandoff reads only a whole handoff', () => {
  assert.deepEqual(
    parseHandoff('{"spec":"/a/spec.json","replicaId":"e-v1-r0-1","supervised":true}'),
    {
      spec: '/a/spec.json',
      replicaId: 'e-v1-r0-1',
      supervised: true,
    },
  );
  // The replica's placement travels with it (KILN_NODE): the standby sets it before the spec.
  assert.deepEqual(
    parseHandoff('{"spec":"/a","replicaId":"x","supervised":false,"env":{"KILN_NODE":"cpu-1"}}'),
    { spec: '/a', replicaId: 'x', supervised: false, env: { KILN_NODE: 'cpu-1' } },
  );
  for (const bad of [
    '',
    'null',
    '[]',
    '{"spec":"/a"}',
    '{"spec":"/a","replicaId":"x","supervised":"yes"}',
    '{"spec":"/a","replicaId":"x","supervised":true,"env":{"KILN_NODE":1}}',
    '{"spec":"/a","replicaId":"x","supervised":true,"env":"KILN_NODE=a"}',
  ])
    assert.equal(parseHandoff(bad), null, bad);
});
