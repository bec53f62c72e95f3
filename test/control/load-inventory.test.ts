import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadInventory } from '../../src/control/placement/load-inventory.ts';
import { startPlatform } from '../../src/control/start-platform.ts';
import { tempDir } from '../helpers/temp-dir.ts';

test('the inventory: the file given, else <home>/inventory.json, else this machine', async () => {
  const home = await tempDir();
  const none = await loadInventory(home);
  assert.equal(none.source, null);
  assert.equal(none.inventory.nodes.length, 1);
  assert.equal(none.inventory.nodes[0]!.capacity, 'on-demand');
  assert.deepEqual(none.inventory.nodes[0]!.accelerators, []);

  await writeFile(
    join(home, 'inventory.json'),
    JSON.stringify({ nodes: [{ name: 'in-home', cpus: 2, memoryGiB: 4 }] }),
  );
  const inHome = await loadInventory(home);
  assert.equal(inHome.source, join(home, 'inventory.json'));
  assert.equal(inHome.inventory.nodes[0]!.name, 'in-home');

  const given = join(home, 'other.json');
  await writeFile(given, JSON.stringify({ nodes: [{ name: 'given', cpus: 2, memoryGiB: 4 }] }));
  assert.equal((await loadInventory(home, given)).inventory.nodes[0]!.name, 'given');

  await assert.rejects(loadInventory(home, join(home, 'missing.json')), {
    code: 'KILN_INVENTORY_INVALID',
    message: `invalid node inventory ${join(home, 'missing.json')}: no such file`,
  });
  await writeFile(given, '{"nodes": [');
  await assert.rejects(
    loadInventory(home, given),
    /invalid node inventory .*other\.json: not JSON/,
  );
});

test('a platform refuses to start on an inventory it cannot use, naming the problem', async () => {
  const home = await tempDir();
  const file = join(home, 'bad.json');
  await writeFile(
    file,
    JSON.stringify({
      nodes: [
        {
          name: 'g',
          cpus: 8,
          memoryGiB: 64,
          accelerators: [
            { index: 0, type: 'A100-40GB', memoryGiB: 40, sharing: 'mig', mig: ['7g.80gb'] },
          ],
        },
      ],
    }),
  );
  await assert.rejects(
    startPlatform({ home, host: '127.0.0.1', port: 0, dev: true, gateway: false, inventory: file }),
    {
      code: 'KILN_INVENTORY_INVALID',
      message: /node g: accelerators\[0\]: MIG profile 7g\.80gb is not valid for A100-40GB/,
    },
  );
});
