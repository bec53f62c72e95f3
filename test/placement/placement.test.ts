import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRandom } from '../../src/core/random.ts';
import type { Inventory, InventoryNode } from '../../src/placement/inventory.ts';
import { parseInventory } from '../../src/placement/parse-inventory.ts';
import { ClusterState, packAll } from '../../src/placement/placement.ts';
import type { ResolvedRequest } from '../../src/placement/resource-request.ts';

function request(overrides: Partial<ResolvedRequest> = {}): ResolvedRequest {
  return { cpu: 1, memoryGiB: 1, accelerator: null, capacity: 'any', ...overrides };
}

function share(memoryGiB: number, type?: string): ResolvedRequest {
  return request({ accelerator: { memoryGiB, ...(type === undefined ? {} : { type }) } });
}

/** Every capacity an inventory declares, checked against what is placed on it. */
function assertWithinCapacity(state: ClusterState): void {
  const headroom = state.headroom;
  for (const node of state.inventory.nodes) {
    assert.ok(state.cpuFree(node) >= -1e-9, `${node.name}: CPUs over capacity`);
    assert.ok(state.memoryFree(node) >= -1e-9, `${node.name}: memory over capacity`);
    for (const device of node.accelerators) {
      const holders = state.holders(node, device.index);
      switch (device.sharing) {
        case 'exclusive':
          assert.ok(holders.length <= 1, `${node.name}/${device.index}: exclusive held twice`);
          break;
        case 'mps': {
          if (holders.some((h) => h.device.whole)) assert.equal(holders.length, 1);
          const used = holders.reduce((s, h) => s + (h.device.whole ? 0 : h.device.memoryGiB), 0);
          assert.ok(
            used <= device.memoryGiB * (1 - headroom) + 1e-9,
            `${node.name}/${device.index}: ${used} GiB over`,
          );
          break;
        }
        case 'mig': {
          const instances = holders.map((h) => h.device.mig?.instance);
          assert.equal(new Set(instances).size, instances.length, 'a MIG instance held twice');
          for (const h of holders)
            assert.equal(device.mig?.[h.device.mig!.instance], h.device.mig!.profile);
          break;
        }
      }
    }
  }
}

function mpsNodes(count: number, devicesEach: number, memoryGiB = 10): InventoryNode[] {
  return Array.from({ length: count }, (_, n) => ({
    name: `n${n}`,
    cpus: 64,
    memoryGiB: 512,
    capacity: 'on-demand' as const,
    accelerators: Array.from({ length: devicesEach }, (_, i) => ({
      index: i,
      type: 'L4',
      memoryGiB,
      sharing: 'mps' as const,
    })),
  }));
}

test('best-fit decreasing packs a given model set on fewer GPUs than first fit', () => {
  const inventory: Inventory = { nodes: mpsNodes(1, 4), headroom: 0 };
  // Arrival order: small ones first. First fit opens a device per 6 GiB model.
  const models = [4, 4, 6, 6].map((gib, i) => ({ group: `m${i}`, request: share(gib) }));
  const best = packAll(inventory, models, 'best-fit');
  const first = packAll(inventory, models, 'first-fit');
  assert.deepEqual([best.unplaced, first.unplaced], [[], []]);
  assert.equal(best.devicesUsed, 2);
  assert.equal(first.devicesUsed, 3);
  assertWithinCapacity(best.state);
  assertWithinCapacity(first.state);
  console.log(
    `packing 4+4+6+6 GiB on 10 GiB GPUs: best-fit decreasing ${best.devicesUsed} GPUs, first fit ${first.devicesUsed}`,
  );
});

test('a mixed model set (MIG, MPS, tensor parallel) packs tighter with best fit and within capacity', () => {
  const inventory = parseInventory(
    {
      headroom: 0.1,
      nodes: [
        {
          name: 'a',
          cpus: 96,
          memoryGiB: 1024,
          accelerators: [
            { index: 0, type: 'A100-80GB', memoryGiB: 80, sharing: 'mps' },
            { index: 1, type: 'A100-80GB', memoryGiB: 80, sharing: 'mps' },
            { index: 2, type: 'A100-80GB', memoryGiB: 80, sharing: 'mps' },
            {
              index: 3,
              type: 'A100-80GB',
              memoryGiB: 80,
              sharing: 'mig',
              mig: ['3g.40gb', '2g.20gb', '1g.10gb', '1g.10gb'],
            },
          ],
        },
        {
          name: 'b',
          cpus: 96,
          memoryGiB: 1024,
          accelerators: [0, 1, 2, 3].map((index) => ({
            index,
            type: 'A100-80GB',
            memoryGiB: 80,
            sharing: 'mps',
          })),
        },
      ],
    },
    'test',
  );
  const models = [
    ...[8, 8, 8, 8, 12, 12].map((g) => share(g)),
    request({ accelerator: { mig: '3g.40gb' } }),
    ...[30, 30, 40, 40].map((g) => share(g)),
    request({ accelerator: { count: 2 } }),
  ].map((r, i) => ({ group: `m${i}`, request: r }));
  const best = packAll(inventory, models, 'best-fit');
  const first = packAll(inventory, models, 'first-fit');
  assertWithinCapacity(best.state);
  assertWithinCapacity(first.state);
  assert.deepEqual(best.unplaced, []);
  assert.ok(
    first.unplaced.length > 0 || first.devicesUsed > best.devicesUsed,
    JSON.stringify(first),
  );
  console.log(
    `mixed set: best-fit decreasing ${best.devicesUsed} GPUs; first fit ${first.devicesUsed} GPUs, ${first.unplaced.length} left unplaced`,
  );
});

test('property: random model sets never exceed capacity, and best fit uses no more GPUs overall', () => {
  const random = createRandom(14);
  let bestTotal = 0;
  let firstTotal = 0;
  let bestPlaced = 0;
  let firstPlaced = 0;
  for (let round = 0; round < 150; round++) {
    const inventory: Inventory = {
      headroom: [0, 0.1, 0.2][random.int(3)]!,
      nodes: Array.from({ length: 1 + random.int(3) }, (_, n) => ({
        name: `n${n}`,
        cpus: 4 + random.int(28),
        memoryGiB: 8 + random.int(120),
        capacity: random.next() < 0.5 ? ('spot' as const) : ('on-demand' as const),
        accelerators: Array.from({ length: random.int(5) }, (_, i) => {
          const kind = random.int(3);
          if (kind === 2)
            return {
              index: i,
              type: 'A100-80GB',
              memoryGiB: 80,
              sharing: 'mig' as const,
              mig: ['3g.40gb', '2g.20gb', '1g.10gb', '1g.10gb'],
            };
          return {
            index: i,
            type: random.next() < 0.5 ? 'L4' : 'A100-80GB',
            memoryGiB: [24, 40, 80][random.int(3)]!,
            sharing: kind === 0 ? ('mps' as const) : ('exclusive' as const),
          };
        }),
      })),
    };
    const models = Array.from({ length: 1 + random.int(16) }, (_, i) => {
      const pick = random.int(10);
      const accelerator =
        pick < 6
          ? { memoryGiB: 1 + random.int(30) }
          : pick === 6
            ? { count: 1 + random.int(2) }
            : pick === 7
              ? { mig: ['1g.10gb', '2g.20gb', '3g.40gb'][random.int(3)]! }
              : null;
      return {
        group: `m${i}`,
        request: request({
          cpu: 0.5 + random.int(4),
          memoryGiB: 0.25 + random.int(8),
          accelerator,
          capacity: (['any', 'spot', 'on-demand'] as const)[random.int(3)]!,
        }),
      };
    });
    const best = packAll(inventory, models, 'best-fit');
    const first = packAll(inventory, models, 'first-fit');
    assertWithinCapacity(best.state);
    assertWithinCapacity(first.state);
    // Replayed on a fresh state, each placement still fits: nothing was double-booked.
    const replay = new ClusterState(inventory);
    for (const r of best.state.replicas()) replay.add(r);
    assertWithinCapacity(replay);
    for (const { reason } of [...best.unplaced, ...first.unplaced])
      assert.match(reason, /^needs .+, largest free .+/);
    if (best.unplaced.length === 0 && first.unplaced.length === 0) {
      bestTotal += best.devicesUsed;
      firstTotal += first.devicesUsed;
    }
    bestPlaced += models.length - best.unplaced.length;
    firstPlaced += models.length - first.unplaced.length;
  }
  console.log(
    `150 random sets: best-fit decreasing placed ${bestPlaced} replicas, first fit ${firstPlaced}; on the sets both placed whole, best fit used ${bestTotal} GPUs, first fit ${firstTotal}`,
  );
  assert.ok(bestTotal <= firstTotal, `best fit used ${bestTotal} GPUs > first fit ${firstTotal}`);
  assert.ok(bestPlaced >= firstPlaced, `best fit placed ${bestPlaced} < first fit ${firstPlaced}`);
});

test('replicas of one endpoint spread across nodes; spot preferred for any, on-demand for a replacement', () => {
  const inventory: Inventory = {
    nodes: [
      { name: 'od', cpus: 8, memoryGiB: 32, capacity: 'on-demand', accelerators: [] },
      { name: 'spot-1', cpus: 8, memoryGiB: 32, capacity: 'spot', accelerators: [] },
      { name: 'spot-2', cpus: 8, memoryGiB: 32, capacity: 'spot', accelerators: [] },
    ],
  };
  const state = new ClusterState(inventory);
  const nodes = [0, 1, 2].map((i) => {
    const result = state.assign(`e-${i}`, 'e', request());
    assert.ok(result.ok);
    return result.placement.node;
  });
  // Spot first (one per spot node: spread), and the third still on spot over on-demand.
  assert.deepEqual(nodes.slice(0, 2).sort(), ['spot-1', 'spot-2']);
  assert.ok(nodes[2] === 'spot-1' || nodes[2] === 'spot-2');
  const replacement = state.place(request(), {
    group: 'e',
    excludeNodes: new Set(['spot-1']),
    preferOnDemand: true,
  });
  assert.ok(replacement.ok);
  assert.equal(replacement.placement.node, 'od');
  const onlySpot = state.place(request({ capacity: 'spot' }), {
    excludeNodes: new Set(['spot-1', 'spot-2']),
  });
  assert.deepEqual(onlySpot, {
    ok: false,
    reason: 'needs a spot node, largest free none (reclaimed: spot-1, spot-2)',
  });
});

test('unschedulable reasons say what is needed and the largest free', () => {
  const inventory = parseInventory(
    {
      headroom: 0,
      nodes: [
        {
          name: 'g',
          cpus: 4,
          memoryGiB: 16,
          accelerators: [
            { index: 0, type: 'A100-80GB', memoryGiB: 80, sharing: 'mps' },
            {
              index: 1,
              type: 'A100-80GB',
              memoryGiB: 80,
              sharing: 'mig',
              mig: ['4g.40gb', '2g.20gb', '1g.10gb'],
            },
          ],
        },
        { name: 'c', cpus: 2, memoryGiB: 64 },
      ],
    },
    't',
  );
  const state = new ClusterState(inventory);
  assert.ok(state.assign('x', 'x', share(60)).ok);
  const cases: Array<[ResolvedRequest, string]> = [
    [share(50), 'needs 50 GiB of accelerator memory, largest free 40 GiB'],
    [share(10, 'H100-80GB'), 'needs 10 GiB of H100-80GB accelerator memory, largest free 0 GiB'],
    [request({ accelerator: { count: 2 } }), 'needs 2 whole devices on one node, largest free 0'],
    [
      request({ accelerator: { mig: '3g.40gb' } }),
      'needs a free MIG instance 3g.40gb, largest free 4g.40gb',
    ],
    [request({ cpu: 6 }), 'needs 6 CPUs, largest free 3 CPUs'],
    [request({ memoryGiB: 100 }), 'needs 100 GiB of memory, largest free 64 GiB'],
  ];
  for (const [req, reason] of cases) assert.deepEqual(state.place(req), { ok: false, reason });
  // 30 GiB fits the 4g.40gb instance (the MPS device has 20 GiB left).
  const thirty = state.place(share(30));
  assert.ok(thirty.ok);
  assert.deepEqual(thirty.placement.devices, [
    { index: 1, mig: { profile: '4g.40gb', instance: 0 }, memoryGiB: 40, whole: false },
  ]);
  // A share goes to the tightest fit: 5 GiB on the 1g.10gb instance, not the MPS device.
  const small = state.place(share(5));
  assert.ok(small.ok);
  assert.deepEqual(small.placement.devices, [
    { index: 1, mig: { profile: '1g.10gb', instance: 2 }, memoryGiB: 10, whole: false },
  ]);
  // 15 GiB: the MPS device's 20 GiB left is tighter than the 2g.20gb instance? Equal waste:
  // both leave 5 GiB; the first candidate (device order) wins.
  const fifteen = state.place(share(15));
  assert.ok(fifteen.ok);
  assert.equal(fifteen.placement.devices[0]!.index, 0);
  // CPU needs beside an accelerator: only the GPU node counts.
  const gpuCpu = state.place(request({ cpu: 4, accelerator: { memoryGiB: 5 } }));
  assert.deepEqual(gpuCpu, {
    ok: false,
    reason: 'needs 4 CPUs, largest free 3 CPUs on the nodes with a free accelerator that fits',
  });
});

test('tensor-parallel replicas take whole devices on one node; MIG instances by exact profile', () => {
  const inventory: Inventory = {
    nodes: [
      {
        name: 'two',
        cpus: 16,
        memoryGiB: 64,
        capacity: 'on-demand',
        accelerators: [0, 1].map((index) => ({
          index,
          type: 'H100-80GB',
          memoryGiB: 80,
          sharing: 'exclusive' as const,
        })),
      },
      {
        name: 'eight',
        cpus: 64,
        memoryGiB: 512,
        capacity: 'on-demand',
        accelerators: Array.from({ length: 8 }, (_, index) => ({
          index,
          type: 'H100-80GB',
          memoryGiB: 80,
          sharing: 'exclusive' as const,
        })),
      },
    ],
  };
  const state = new ClusterState(inventory);
  const tp2 = state.assign('a', 'a', request({ accelerator: { count: 2 } }));
  assert.ok(tp2.ok);
  // Best fit: the node the request fills, keeping the eight-GPU node whole.
  assert.equal(tp2.placement.node, 'two');
  assert.deepEqual(
    tp2.placement.devices.map((d) => d.index),
    [0, 1],
  );
  const tp8 = state.assign('b', 'b', request({ accelerator: { count: 8 } }));
  assert.ok(tp8.ok);
  assert.equal(tp8.placement.node, 'eight');
  assert.deepEqual(state.place(request({ accelerator: { count: 1 } })), {
    ok: false,
    reason: 'needs 1 whole device on one node, largest free 0',
  });
  state.remove('b');
  assert.ok(state.place(request({ accelerator: { count: 1 } })).ok);
});
