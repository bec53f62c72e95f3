// A pool worker outlives its control plane like any worker (issue 14): `kiln up --dev` with a
// one-worker pool serving a model, the platform killed with SIGKILL and started again on the
// same home. The restarted platform adopts the same worker process (same pid), reaches it with
// the token from its spec, and it keeps serving what it held — the model still loaded (no
// second load) — with XGBoost's answers; `kiln down` then stops it.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PoolView } from '../../src/control/api/routes-pools.ts';
import { isRunning, identifyProcess } from '../../src/core/process-identity.ts';
import { readArtifact, register } from '../helpers/platform.ts';
import { Cli, startPlatformProcess, type PlatformProcess } from '../cli/cli-harness.ts';

const fixtures = new URL('../../fixtures/pools/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${fixtures}expected.json`, 'utf8')) as {
  rows: number[][];
  predictions: Record<string, number[]>;
};

const home = await mkdtemp(join(tmpdir(), 'kiln-pools-outlive-'));
const platforms: PlatformProcess[] = [];
after(async () => {
  for (const platform of platforms) await platform.kill('SIGTERM');
  await new Cli('', home).run(['down', '--home', home]);
  await rm(home, { recursive: true, force: true });
});

async function up(): Promise<{ platform: PlatformProcess; cli: Cli }> {
  const platform = await startPlatformProcess(home, {
    gateway: true,
    args: ['--dev', '--no-demo'],
  });
  platforms.push(platform);
  return { platform, cli: new Cli(platform.url, home) };
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function predictRight(gatewayUrl: string): Promise<boolean> {
  const rows = expected.rows;
  const response = await fetch(`${gatewayUrl}/v2/models/small/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      inputs: [{ name: 'input', shape: [rows.length, 4], datatype: 'FP32', data: rows.flat() }],
    }),
  });
  if (response.status !== 200) {
    await response.arrayBuffer();
    return false;
  }
  const data = ((await response.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data;
  expected.predictions['pool-1']!.forEach((p, i) =>
    assert.ok(Math.abs(data[i]! - p) <= 1e-6 * Math.max(1, Math.abs(p)), `row ${i}`),
  );
  return true;
}

test('kill -9 of kiln up: the restarted platform adopts the pool worker, which keeps its models', async () => {
  const first = await up();
  await first.cli.ok(['pools', 'create', 'tiny', '--workers', '1', '--memory-budget', '4MiB']);
  const files = await readArtifact(`${fixtures}pool-1.json`, 'model.json');
  assert.equal((await register(first.platform.url, 'small', 'xgboost', files)).status, 201);
  await first.cli.ok(['deploy', 'small', '--endpoint', 'small', '--pool', 'tiny']);
  await until(() => predictRight(first.platform.gatewayUrl!), 'a right answer from the pool');
  const before = (await first.cli.json<PoolView>(['pools', 'show', 'tiny'])).workerStates[0]!;
  assert.equal(before.status?.loads, 1);
  const pid = before.pid!;
  const identity = identifyProcess(pid);
  assert.ok(identity !== null);

  assert.equal(await first.platform.kill('SIGKILL'), 'SIGKILL');
  assert.ok(isRunning(identity), 'the pool worker outlives kill -9 of kiln up');

  const second = await up();
  await until(async () => {
    const shown = await second.cli.json<PoolView>(['pools', 'show', 'tiny']);
    const worker = shown.workerStates[0];
    return shown.workerStates.length === 1 && worker?.pid === pid && worker.status !== null;
  }, 'the same worker adopted and answering its status');
  await until(() => predictRight(second.platform.gatewayUrl!), 'a right answer after the restart');
  const after = (await second.cli.json<PoolView>(['pools', 'show', 'tiny'])).workerStates[0]!;
  assert.equal(after.pid, pid);
  assert.equal(after.status?.loads, 1, 'still holding the model: not loaded again');
  assert.ok((after.status?.hits ?? 0) >= 1);

  await second.cli.run(['down', '--home', home]);
  await until(() => !isRunning(identity), 'kiln down stopping the pool worker');
});
