import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KilnError } from '../../src/core/errors.ts';
import { localInventory, parseInventory } from '../../src/placement/parse-inventory.ts';
import { migLayoutProblem } from '../../src/placement/mig-profiles.ts';
import { resourceRequestProblem, resolveRequest } from '../../src/placement/resource-request.ts';

function refused(value: unknown): string {
  try {
    parseInventory(value, 'test.json');
  } catch (error) {
    assert.ok(error instanceof KilnError);
    assert.equal(error.code, 'KILN_INVENTORY_INVALID');
    return error.message;
  }
  assert.fail('accepted');
}

const gpuNode = {
  name: 'gpu-a',
  cpus: 32,
  memoryGiB: 256,
  capacity: 'spot',
  instanceType: 'p4d.24xlarge',
  costPerHour: 12.5,
  accelerators: [
    {
      index: 0,
      type: 'A100-80GB',
      memoryGiB: 80,
      sharing: 'mig',
      mig: ['3g.40gb', '2g.20gb', '1g.10gb', '1g.10gb'],
    },
    { index: 1, type: 'A100-80GB', memoryGiB: 80, sharing: 'mps' },
    { index: 2, type: 'H100-80GB', memoryGiB: 80 },
  ],
};

test('a declared inventory is read with its defaults', () => {
  const inventory = parseInventory(
    { nodes: [gpuNode, { name: 'cpu-b', cpus: 4, memoryGiB: 16 }] },
    'x',
  );
  assert.equal(inventory.nodes.length, 2);
  assert.equal(inventory.nodes[0]!.capacity, 'spot');
  assert.deepEqual(inventory.nodes[0]!.accelerators[0]!.mig, [
    '3g.40gb',
    '2g.20gb',
    '1g.10gb',
    '1g.10gb',
  ]);
  assert.equal(inventory.nodes[0]!.accelerators[2]!.sharing, 'exclusive');
  assert.equal(inventory.nodes[1]!.capacity, 'on-demand');
  assert.deepEqual(inventory.nodes[1]!.accelerators, []);
});

test('real MIG layouts are accepted and impossible ones refused', () => {
  assert.equal(migLayoutProblem('A100-80GB', ['7g.80gb']), null);
  assert.equal(migLayoutProblem('A100-80GB', ['4g.40gb', '3g.40gb']), null);
  assert.equal(migLayoutProblem('A100-40GB', Array(7).fill('1g.5gb')), null);
  assert.equal(migLayoutProblem('H100-80GB', ['3g.40gb', '3g.40gb']), null);
  assert.match(migLayoutProblem('A100-80GB', ['4g.40gb', '4g.40gb'])!, /at most 1/);
  assert.match(
    migLayoutProblem('A100-80GB', ['3g.40gb', '3g.40gb', '1g.10gb'])!,
    /9 memory slices, A100-80GB has 8/,
  );
  assert.match(
    migLayoutProblem('A100-80GB', ['3g.40gb', '2g.20gb', '1g.20gb', '1g.10gb'])!,
    /9 memory slices/,
  );
  assert.match(
    migLayoutProblem('A100-40GB', ['1g.10gb', '1g.10gb', '1g.10gb', '1g.10gb', '1g.5gb'])!,
    /9 memory slices/,
  );
  assert.match(migLayoutProblem('L4', ['1g.10gb'])!, /does not support MIG/);
});

test('every bad inventory is refused with the node, the device and why', () => {
  const withDevice = (device: object) => ({
    nodes: [{ name: 'n1', cpus: 4, memoryGiB: 8, accelerators: [device] }],
  });
  assert.match(
    refused(
      withDevice({ index: 0, type: 'A100-40GB', memoryGiB: 40, sharing: 'mig', mig: ['3g.40gb'] }),
    ),
    /node n1: accelerators\[0\]: MIG profile 3g\.40gb is not valid for A100-40GB/,
  );
  assert.match(
    refused(
      withDevice({
        index: 0,
        type: 'A100-80GB',
        memoryGiB: 80,
        sharing: 'mig',
        mig: ['7g.80gb', '1g.10gb'],
      }),
    ),
    /8 compute slices, A100-80GB has 7/,
  );
  assert.match(
    refused(
      withDevice({ index: 0, type: 'A100-80GB', memoryGiB: 40, sharing: 'mig', mig: ['1g.10gb'] }),
    ),
    /a A100-80GB has 80 GiB, not 40/,
  );
  assert.match(
    refused(withDevice({ index: 0, type: 'L4', memoryGiB: -24 })),
    /memoryGiB must be > 0 \(got -24\)/,
  );
  assert.match(
    refused(withDevice({ index: 0, type: 'L4', memoryGiB: 24, mig: ['1g.6gb'] })),
    /MIG instances need sharing "mig"/,
  );
  assert.match(
    refused(withDevice({ index: 0, type: 'L4', memoryGiB: 24, sharing: 'shared' })),
    /sharing must be exclusive, mps or mig/,
  );
  assert.match(
    refused({
      nodes: [
        {
          name: 'n1',
          cpus: 4,
          memoryGiB: 8,
          accelerators: [
            { index: 0, type: 'L4', memoryGiB: 24 },
            { index: 0, type: 'L4', memoryGiB: 24 },
          ],
        },
      ],
    }),
    /node n1: two accelerators with index 0/,
  );
  assert.match(
    refused({
      nodes: [
        { name: 'n1', cpus: 4, memoryGiB: 8 },
        { name: 'n1', cpus: 2, memoryGiB: 8 },
      ],
    }),
    /two nodes named n1/,
  );
  assert.match(
    refused({ nodes: [{ name: 'n1', cpus: 0, memoryGiB: 8 }] }),
    /node n1: cpus must be > 0/,
  );
  assert.match(
    refused({ nodes: [{ name: 'n1', cpus: 2, memoryGiB: -1 }] }),
    /memoryGiB must be > 0/,
  );
  assert.match(
    refused({ nodes: [{ name: 'N 1', cpus: 2, memoryGiB: 1 }] }),
    /name must be a lowercase DNS label/,
  );
  assert.match(
    refused({ nodes: [{ name: 'n1', cpus: 2, memoryGiB: 1, capacity: 'cheap' }] }),
    /capacity must be spot or on-demand/,
  );
  assert.match(
    refused({ nodes: [{ name: 'n1', cpus: 2, memoryGiB: 1, gpus: 2 }] }),
    /unknown field "gpus"/,
  );
  assert.match(refused({ nodes: [] }), /at least one node/);
  assert.match(
    refused({ nodes: [{ name: 'n1', cpus: 2, memoryGiB: 1 }], headroom: 0.9 }),
    /headroom must be a fraction from 0 to 0\.5/,
  );
  assert.match(refused([]), /invalid node inventory test\.json: must be a JSON object/);
});

test('with no inventory declared, this machine is one on-demand node without accelerators', () => {
  const inventory = localInventory({ name: 'My_Host.local', cpus: 8, memoryBytes: 16 * 1024 ** 3 });
  assert.deepEqual(inventory.nodes, [
    { name: 'my-host.local', cpus: 8, memoryGiB: 16, capacity: 'on-demand', accelerators: [] },
  ]);
});

test('resource requests: every bad field is named; defaults fill the rest', () => {
  assert.equal(
    resourceRequestProblem({
      cpu: 2,
      memoryGiB: 4,
      accelerator: { type: 'A100-80GB', memoryGiB: 10 },
    }),
    null,
  );
  assert.equal(resourceRequestProblem({ accelerator: { count: 4 }, capacity: 'on-demand' }), null);
  assert.equal(resourceRequestProblem({ accelerator: { mig: '1g.10gb' } }), null);
  assert.match(
    resourceRequestProblem({ cpu: -1 })!,
    /resources\.cpu must be a number > 0 \(got -1\)/,
  );
  assert.match(resourceRequestProblem({ memoryGiB: 0 })!, /resources\.memoryGiB/);
  assert.match(resourceRequestProblem({ capacity: 'cheap' })!, /resources\.capacity/);
  assert.match(resourceRequestProblem({ gpus: 1 })!, /unknown field "gpus"/);
  assert.match(
    resourceRequestProblem({ accelerator: { memoryGiB: 10, count: 2 } })!,
    /give one of/,
  );
  assert.match(resourceRequestProblem({ accelerator: {} })!, /needs one of/);
  assert.match(
    resourceRequestProblem({ accelerator: { count: 1.5 } })!,
    /count must be a whole number/,
  );
  assert.match(
    resourceRequestProblem({ accelerator: { mig: 'big' } })!,
    /mig must name a MIG profile/,
  );
  // A profile no GPU has is a typo, refused at once (it would wait for room for ever).
  assert.match(
    resourceRequestProblem({ accelerator: { mig: '9g.99gb' } })!,
    /^resources\.accelerator\.mig: no GPU has a MIG profile 9g\.99gb \(known: 1g\.5gb, .*7g\.80gb/,
  );
  assert.match(
    resourceRequestProblem({ accelerator: { type: 'A100-40GB', mig: '3g.40gb' } })!,
    /no A100-40GB has a MIG profile 3g\.40gb \(known: 1g\.5gb, 1g\.10gb, 2g\.10gb, 3g\.20gb, 4g\.20gb, 7g\.40gb\)/,
  );
  assert.equal(resourceRequestProblem({ accelerator: { mig: '3g.40gb' } }), null);
  assert.equal(
    resourceRequestProblem({ accelerator: { type: 'A100-80GB', mig: '1g.10gb' } }),
    null,
  );
  assert.deepEqual(resolveRequest({}, 1024 ** 3), {
    cpu: 1,
    memoryGiB: 2,
    accelerator: null,
    capacity: 'any',
  });
  assert.equal(resolveRequest({}, 1000).memoryGiB, 0.25);
});
