// `kiln pools create | list | show | delete` and `kiln deploy --pool`: the real CLI (one
// process per command) against an in-process platform running a real pool worker.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { PoolView } from '../../src/control/api/routes-pools.ts';
import { readArtifact, register, testPlatform } from '../helpers/platform.ts';
import { Cli } from './cli-harness.ts';

const fixtures = new URL('../../fixtures/pools/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${fixtures}expected.json`, 'utf8')) as {
  rows: number[][];
  predictions: Record<string, number[]>;
};

void test('pools create / list / show / delete and deploy --pool, end to end', async () => {
  const platform = await testPlatform();
  const cli = new Cli(platform.url, platform.home);
  assert.equal(await cli.ok(['pools', 'list']), 'no pools\n');
  assert.equal(
    await cli.ok(['pools', 'create', 'tiny', '--workers', '1', '--memory-budget', '4MiB']),
    'pool tiny: 1 worker, 4.00 MiB of models each, team default\n',
  );
  await cli.fails(['pools', 'create', 'tiny', '--workers', '0', '--memory-budget', '4MiB'], 2);
  await cli.fails(['pools', 'create', 'tiny', '--workers', '1', '--memory-budget', 'lots'], 2);

  const registered = await register(
    platform.url,
    'small',
    'xgboost',
    await readArtifact(`${fixtures}pool-2.json`, 'model.json'),
  );
  assert.equal(registered.status, 201);
  assert.match(
    await cli.fails(['deploy', 'small', '--endpoint', 'small', '--pool', 'nope'], 1),
    /KILN_POOL_NOT_FOUND/,
  );
  const deployed = await cli.json<{ config: { pool?: string } }>([
    'deploy',
    'small',
    '--endpoint',
    'small',
    '--pool',
    'tiny',
  ]);
  assert.equal(deployed.config.pool, 'tiny');

  // The worker takes its assignment; a request straight to it loads the model.
  let shown: PoolView | null = null;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    shown = await cli.json<PoolView>(['pools', 'show', 'tiny']);
    if (shown.workerStates[0]?.status?.assigned === 1) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const worker = shown?.workerStates[0];
  assert.equal(worker?.status?.assigned, 1, JSON.stringify(shown));
  const rows = expected.rows;
  const answer = await fetch(`${worker.url}/v2/models/small/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      inputs: [{ name: 'input', shape: [rows.length, 4], datatype: 'FP32', data: rows.flat() }],
    }),
  });
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.get('kiln-pool-resident'), 'small');
  const data = ((await answer.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data;
  expected.predictions['pool-2']!.forEach((p, i) =>
    assert.ok(Math.abs(data[i]! - p) <= 1e-6 * Math.max(1, Math.abs(p)), `row ${i}`),
  );

  const text = await cli.ok(['pools', 'show', 'tiny']);
  assert.match(text, /^pool tiny: 1 worker, 4\.00 MiB of models each, team default\n/);
  assert.match(text, /endpoints: small\n/);
  assert.match(text, /_pool-tiny-v0-r0-\d+ +ready +1 +\S+ KiB \/ 4\.00 MiB +1 +0 +0 +1\n/);
  assert.match(text, /_pool-tiny-v0-r0-\d+ +small +\S+ KiB +\S+ \S+ +1\n/);
  assert.match(
    await cli.ok(['pools', 'list']),
    /^POOL +TEAM +WORKERS +BUDGET +ENDPOINTS\ntiny +default +1\/1 +4\.00 MiB +1\n/,
  );

  assert.match(await cli.fails(['pools', 'delete', 'tiny'], 1), /KILN_POOL_IN_USE/);
  await cli.ok(['endpoints', 'delete', 'small']);
  assert.equal(await cli.ok(['pools', 'delete', 'tiny']), 'pool tiny deleted\n');
  assert.match(await cli.fails(['pools', 'show', 'tiny'], 1), /KILN_POOL_NOT_FOUND/);
});
