// Placement on a declared inventory, through real processes: replicas go to the spot node
// first; an endpoint that fits no node is refused at deploy ("needs X, largest free Y"); one
// that cannot fit now waits with that reason in `kiln endpoints show`; and a spot reclaim
// moves the replicas to on-demand nodes under a steady load through the gateway with no
// failed request (the replacements are ready before the evicted replicas stop), every
// answer checked against XGBoost's own probabilities.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  call,
  errorCode,
  registerFixture,
  registryFixtures,
  testPlatform,
} from '../helpers/platform.ts';
import { SteadyLoad } from '../helpers/steady-load.ts';

const expected = JSON.parse(readFileSync(`${registryFixtures}expected.json`, 'utf8')) as {
  xgboost: { inputs: (number | null)[][]; probabilities: number[] };
};

const inventoryFile = join(await mkdtemp(join(tmpdir(), 'kiln-inventory-')), 'inventory.json');
await writeFile(
  inventoryFile,
  JSON.stringify({
    nodes: [
      { name: 'spot-a', cpus: 3, memoryGiB: 8, capacity: 'spot', costPerHour: 0.1 },
      { name: 'od-1', cpus: 2, memoryGiB: 8, capacity: 'on-demand', costPerHour: 0.3 },
      { name: 'od-2', cpus: 2, memoryGiB: 8, capacity: 'on-demand', costPerHour: 0.3 },
    ],
  }),
);
const platform = await testPlatform({ gateway: true, inventory: inventoryFile });
await registerFixture(platform.url, 'fraud', 'xgboost', 'xgb-binary.json');

interface Replica {
  id: string;
  state: string;
  node?: string | null;
  evicted?: boolean;
  reason: string | null;
}
interface EndpointBody {
  status: { ready: boolean; readyReplicas: number; reason: string | null; replicas: Replica[] };
}

async function endpoint(name: string): Promise<EndpointBody> {
  return (await call(platform.url, 'GET', `/api/v1/endpoints/${name}`)).body as EndpointBody;
}

async function waitUntil(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

const resources = { cpu: 1, memoryGiB: 0.5 };

test('a replica that fits no node is refused at deploy, naming what it needs and the largest free', async () => {
  const refused = await call(platform.url, 'PUT', '/api/v1/endpoints/huge', {
    model: 'fraud',
    config: { resources: { cpu: 16 } },
  });
  assert.equal(refused.status, 409);
  assert.equal(errorCode(refused), 'KILN_UNSCHEDULABLE');
  assert.match(
    JSON.stringify(refused.body),
    /endpoint huge is unschedulable: needs 16 CPUs, largest free 3 CPUs/,
  );
  const gpu = await call(platform.url, 'PUT', '/api/v1/endpoints/gpu', {
    model: 'fraud',
    config: { resources: { accelerator: { memoryGiB: 10 } } },
  });
  assert.equal(errorCode(gpu), 'KILN_UNSCHEDULABLE');
  assert.match(JSON.stringify(gpu.body), /needs 10 GiB of accelerator memory, largest free 0 GiB/);
  const bad = await call(platform.url, 'PUT', '/api/v1/endpoints/bad', {
    model: 'fraud',
    config: { resources: { cpu: -1 } },
  });
  assert.equal(bad.status, 400);
  assert.match(JSON.stringify(bad.body), /resources\.cpu must be a number > 0/);
});

test('a spot reclaim moves replicas to on-demand nodes with no failed request', async () => {
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/fraud', {
    model: 'fraud',
    replicas: 2,
    config: { resources },
  });
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  await waitUntil('both replicas ready on the spot node', async () => {
    const e = await endpoint('fraud');
    return e.status.readyReplicas === 2 && e.status.replicas.every((r) => r.node === 'spot-a');
  });

  // Fits an empty node, not the cluster now (spot-a has 1 CPU left): it waits, with why.
  const waiting = await call(platform.url, 'PUT', '/api/v1/endpoints/waits', {
    model: 'fraud',
    config: { resources: { cpu: 2, capacity: 'spot' } },
  });
  assert.equal(waiting.status, 201, JSON.stringify(waiting.body));
  await waitUntil('the waiting replica to say why', async () => {
    const reason = (await endpoint('waits')).status.reason ?? '';
    return /pending: unschedulable: needs 2 CPUs, largest free 1 CPU$/.test(reason);
  });
  const shown = (await call(platform.url, 'GET', '/api/v1/placement')).body as {
    nodes: { name: string; cpuFree: number; replicas: { endpoint: string }[] }[];
    pending: { endpoint: string; reason: string }[];
  };
  assert.deepEqual(
    shown.nodes.map((n) => [n.name, n.cpuFree, n.replicas.map((r) => r.endpoint)]),
    [
      ['spot-a', 1, ['fraud', 'fraud']],
      ['od-1', 2, []],
      ['od-2', 2, []],
    ],
  );
  assert.deepEqual(
    shown.pending.map((p) => p.endpoint),
    ['waits'],
  );
  assert.equal((await call(platform.url, 'DELETE', '/api/v1/endpoints/waits')).status, 200);

  const rows = expected.xgboost.inputs;
  const load = new SteadyLoad({
    url: `${platform.gatewayUrl}/v2/models/fraud/infer`,
    clients: 6,
    maxRatePerSecond: 300,
    next: (i) => {
      const row = i % rows.length;
      return {
        tag: row,
        body: JSON.stringify({
          inputs: [{ name: 'input', shape: [1, 5], datatype: 'FP32', data: rows[row] }],
        }),
      };
    },
    check: (answer) => {
      const body = answer.body as { outputs?: { data: number[] }[] };
      const got = body.outputs?.[0]?.data?.[0];
      const want = expected.xgboost.probabilities[answer.tag]!;
      return got !== undefined && Math.abs(got - want) <= 1e-5
        ? null
        : `row ${answer.tag}: ${got} vs ${want}`;
    },
  }).start();
  try {
    await load.waitForAnswers(1, 50);
    const before = (await endpoint('fraud')).status.replicas.map((r) => r.id).sort();
    const reclaimed = await call(platform.url, 'POST', '/api/v1/placement/nodes/spot-a/reclaim');
    assert.equal(reclaimed.status, 200);
    assert.deepEqual((reclaimed.body as { replicas: string[] }).replicas.sort(), before);
    await waitUntil('the replicas replaced on the on-demand nodes', async () => {
      const e = await endpoint('fraud');
      return (
        e.status.readyReplicas === 2 &&
        e.status.replicas.length === 2 &&
        e.status.replicas.every((r) => r.node?.startsWith('od-') === true && r.evicted !== true)
      );
    });
    await load.waitForAnswers(1, 50);
    const after = (await endpoint('fraud')).status.replicas;
    // Spread across the two on-demand nodes, none of the evicted ones left.
    assert.deepEqual(after.map((r) => r.node).sort(), ['od-1', 'od-2']);
    assert.ok(after.every((r) => !before.includes(r.id)));
  } finally {
    const summary = await load.stop();
    assert.deepEqual(summary.failures, [], `${summary.failures.length} of ${summary.sent} failed`);
    console.log(
      `spot reclaim under load: ${summary.answered} answers, ${summary.failures.length} failed`,
    );
  }
  // Nothing new is placed on a reclaimed node; an unknown node is a 404.
  const unknown = await call(platform.url, 'POST', '/api/v1/placement/nodes/nope/reclaim');
  assert.equal(errorCode(unknown), 'KILN_NODE_NOT_FOUND');
});
