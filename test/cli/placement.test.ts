// `kiln deploy --cpus/--gpu-memory-gib/… ` and `kiln placement show | reclaim`: the real CLI
// (one process per command) against an in-process platform on a declared inventory.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deployBody } from '../../src/cli/commands/deploy.ts';
import { registerFixture, testPlatform } from '../helpers/platform.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { until } from '../helpers/until.ts';
import { Cli } from './cli-harness.ts';

test('deploy flags make the endpoint config resources; none send nothing', () => {
  const ref = { kind: 'latest' as const, model: 'm' };
  assert.deepEqual(
    deployBody(ref, {
      endpoint: 'e',
      cpus: 0.5,
      memoryGib: 2,
      gpuMemoryGib: 10,
      gpuType: 'A100-80GB',
      capacity: 'spot',
    }).config,
    {
      resources: {
        cpu: 0.5,
        memoryGiB: 2,
        accelerator: { type: 'A100-80GB', memoryGiB: 10 },
        capacity: 'spot',
      },
    },
  );
  assert.deepEqual(deployBody(ref, { endpoint: 'e', gpus: 2 }).config, {
    resources: { accelerator: { count: 2 } },
  });
  assert.deepEqual(deployBody(ref, { endpoint: 'e' }).config, {});
});

test('placement show lists nodes, devices and holders; reclaim and unschedulable deploys', async () => {
  const file = join(await tempDir(), 'inventory.json');
  await writeFile(
    file,
    JSON.stringify({
      headroom: 0,
      nodes: [
        {
          name: 'gpu-1',
          cpus: 8,
          memoryGiB: 32,
          capacity: 'on-demand',
          accelerators: [
            { index: 0, type: 'A100-80GB', memoryGiB: 80, sharing: 'mps' },
            {
              index: 1,
              type: 'A100-80GB',
              memoryGiB: 80,
              sharing: 'mig',
              mig: ['3g.40gb', '2g.20gb', '1g.10gb', '1g.10gb'],
            },
          ],
        },
        { name: 'cpu-1', cpus: 4, memoryGiB: 16, capacity: 'spot' },
      ],
    }),
  );
  const platform = await testPlatform({ inventory: file });
  await registerFixture(platform.url, 'fraud', 'xgboost', 'xgb-binary.json');
  const cli = new Cli(platform.url, platform.home);
  await cli.ok(['deploy', 'fraud', '--endpoint', 'small', '--gpu-memory-gib', '8', '--cpus', '1']);
  await cli.ok(['deploy', 'fraud', '--endpoint', 'sliced', '--mig', '3g.40gb']);
  await until(
    async () =>
      (await cli.json<{ nodes: { replicas: unknown[] }[] }>(['placement', 'show'])).nodes[0]!
        .replicas.length === 2,
    'both placed',
  );
  const shown = await cli.ok(['placement', 'show']);
  assert.match(shown, new RegExp(`^inventory: ${file.replace(/[.]/g, '\\.')}\n`));
  assert.match(
    shown,
    /gpu-1 +on-demand +ready +6\/8 +31\.5\/32 GiB +sliced-v1-r0-\d+, small-v1-r0-\d+\n/,
  );
  assert.match(shown, /cpu-1 +spot +ready +4\/4 /);
  // 8 GiB goes to a 1g.10gb instance (tightest fit), 3g.40gb to its own instance.
  assert.match(
    shown,
    /gpu-1 +1 +A100-80GB +mig 3g\.40gb\+2g\.20gb\+1g\.10gb\+1g\.10gb +20\/80 GiB +small-v1-r0-\d+ \(1g\.10gb\), sliced-v1-r0-\d+ \(3g\.40gb\)\n/,
  );
  assert.match(shown, /gpu-1 +0 +A100-80GB +mps +80\/80 GiB +-/);
  // The endpoint shows its replica's node.
  assert.match(
    await cli.ok(['endpoints', 'show', 'small']),
    /NODE[\s\S]*small-v1-r0-\d+ +1 +\w+ +gpu-1/,
  );

  const refused = await cli.fails(['deploy', 'fraud', '--endpoint', 'big', '--gpus', '3'], 1);
  assert.match(
    refused,
    /endpoint big is unschedulable: needs 3 whole devices on one node, largest free 1 \(KILN_UNSCHEDULABLE\)/,
  );
  assert.match(
    await cli.fails(['placement', 'reclaim', 'nope'], 1),
    /node nope is not in the inventory \(KILN_NODE_NOT_FOUND\)/,
  );
  assert.equal(
    await cli.ok(['placement', 'reclaim', 'cpu-1']),
    'node cpu-1 reclaimed: no replica ran there\n',
  );
  assert.match(await cli.ok(['placement', 'show']), /cpu-1 +spot +reclaimed /);
});
