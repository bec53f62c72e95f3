// The cost report's pure parts (issue 15 E): right-sizing hints from observed use, team
// attribution, unpriced device types, and a replica's share of the devices it holds.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  buildCostReport,
  type EndpointFacts,
} from '../../../src/observability/cost/cost-report.ts';
import { parsePriceTable } from '../../../src/observability/cost/price-table.ts';
import { accrueUsage } from '../../../src/observability/cost/usage-accrual.ts';
import { replicaShape } from '../../../src/control/observability/replica-shape.ts';
import type { UsageRow } from '../../../src/store/cost-records.ts';
import type { InventoryNode } from '../../../src/placement/inventory.ts';

const prices = parsePriceTable(
  { cpu: { onDemand: 0.1 }, memoryGiB: { onDemand: 0 }, accelerators: { L4: { onDemand: 1 } } },
  'test',
);
const dayMs = 86_400_000;
const since = Date.parse('2026-01-01T00:00:00Z');

function usage(endpoint: string, over: Partial<UsageRow>): UsageRow {
  return {
    endpoint,
    team: 'risk',
    hourStart: '2026-01-01T00:00:00.000Z',
    cpu: 2,
    memoryGiB: 4,
    acceleratorType: '',
    accelerators: 0,
    capacity: 'on-demand',
    replicaSeconds: 0,
    observedSeconds: 0,
    cpuBusySeconds: 0,
    ...over,
  };
}

const facts = (over: Partial<EndpointFacts> = {}): EndpointFacts => ({
  team: 'risk',
  minReplicas: 1,
  pooled: false,
  llm: false,
  ...over,
});

test('right-sizing hints: fewer min replicas, a smaller instance, a shared pool — each with its figure', () => {
  const report = buildCostReport({
    by: 'endpoint',
    sinceMs: since,
    untilMs: since + dayMs,
    prices,
    usage: [
      // busy: 3 replicas all day, peak concurrency 1.4 → 2 would do; CPU 10 % of 2 cores.
      usage('busy', { replicaSeconds: 3 * 86_400, observedSeconds: 86_400, cpuBusySeconds: 8640 }),
      // idle: 1 replica, no request at all.
      usage('idle', { replicaSeconds: 86_400 }),
      // quiet: 1 replica, 100 requests a day (0.001 req/s), CPU well used.
      usage('quiet', { replicaSeconds: 86_400, observedSeconds: 86_400, cpuBusySeconds: 43_200 }),
      // gpu: quiet too, but on an accelerator: no pool hint.
      usage('gpu', { replicaSeconds: 86_400, acceleratorType: 'L4', accelerators: 1 }),
    ],
    tokens: [],
    demand: new Map([
      ['busy', { requests: 2_000_000, peakConcurrency: 1.4 }],
      ['idle', { requests: 0, peakConcurrency: 0 }],
      ['quiet', { requests: 100, peakConcurrency: 0.01 }],
      ['gpu', { requests: 100, peakConcurrency: 0.01 }],
    ]),
    endpoints: new Map([
      ['busy', facts({ minReplicas: 3 })],
      ['idle', facts()],
      ['quiet', facts()],
      ['gpu', facts()],
    ]),
  });
  const hints = report.hints.map((h) => [h.endpoint, h.kind, h.savingsUsd]);
  // busy: one replica-day of 2 cores at 0.1 = 4.8 USD; 2 × 0.1 × 2 = 0.4 → 0.5 cores:
  // (2 − 0.5) cores × 3 replica-days × 0.1 = 10.8 USD.
  assert.deepEqual(
    hints,
    [
      ['busy', 'smaller-instance', 10.8],
      ['busy', 'fewer-min-replicas', 4.8],
      ['idle', 'fewer-min-replicas', 4.8],
      ['idle', 'shared-pool', null],
      ['quiet', 'shared-pool', null],
    ].sort(
      (a, b) => Number(b[2] ?? 0) - Number(a[2] ?? 0) || (String(a[0]) < String(b[0]) ? -1 : 1),
    ),
  );
  const message = (endpoint: string, kind: string): string =>
    report.hints.find((h) => h.endpoint === endpoint && h.kind === kind)!.message;
  assert.match(
    message('busy', 'fewer-min-replicas'),
    /peak concurrency 1\.40 fits 2 replica\(s\); it keeps at least 3/,
  );
  assert.match(
    message('busy', 'smaller-instance'),
    /CPU utilization 10 % of 2 core\(s\): ask for 0\.5/,
  );
  assert.match(message('idle', 'fewer-min-replicas'), /no request .* scale to zero/);
  assert.match(message('quiet', 'shared-pool'), /0\.001 request\/s .* shared pool/);
});

test('team attribution follows the latest usage row; device types without a price are listed', () => {
  const report = buildCostReport({
    by: 'team',
    sinceMs: since,
    untilMs: since + dayMs,
    prices,
    usage: [
      usage('moved', { team: 'old', replicaSeconds: 3600 }),
      usage('moved', { team: 'new', hourStart: '2026-01-01T01:00:00.000Z', replicaSeconds: 3600 }),
      usage('tpu', {
        team: 'ml',
        acceleratorType: 'TPU-v5',
        accelerators: 1,
        replicaSeconds: 3600,
      }),
    ],
    tokens: [
      {
        endpoint: 'chat',
        team: 'ml',
        hourStart: '2026-01-01T00:00:00.000Z',
        promptTokens: 900,
        completionTokens: 100,
      },
    ],
    demand: new Map([['moved', { requests: 10, peakConcurrency: 0 }]]),
    endpoints: new Map(),
  });
  assert.deepEqual(
    report.rows.map((r) => [
      r.key,
      Number(r.costUsd.toFixed(6)),
      r.requests,
      r.promptTokens + r.completionTokens,
    ]),
    [
      ['new', 0.4, 10, 0],
      ['ml', 0.2, 0, 1000],
    ],
  );
  assert.deepEqual(report.unpricedAcceleratorTypes, ['TPU-v5']);
  assert.deepEqual(report.hints, [], 'deleted endpoints get no hints');
});

test('accrueUsage splits a sample at the hour and keeps shapes apart', () => {
  const shape = {
    cpu: 1,
    memoryGiB: 1,
    acceleratorType: null,
    accelerators: 0,
    capacity: 'spot' as const,
  };
  const rows = accrueUsage(
    [
      { endpoint: 'a', team: 't', shape, cpuUtilization: 0.5 },
      { endpoint: 'a', team: 't', shape, cpuUtilization: 0.5 },
      { endpoint: 'a', team: 't', shape: { ...shape, cpu: 2 }, cpuUtilization: null },
    ],
    Date.parse('2026-01-01T00:59:50Z'),
    Date.parse('2026-01-01T01:00:20Z'),
  );
  assert.deepEqual(
    rows.map((r) => [
      r.hourStart.slice(11, 16),
      r.cpu,
      r.replicaSeconds,
      r.observedSeconds,
      r.cpuBusySeconds,
    ]),
    [
      ['00:00', 1, 20, 20, 10],
      ['01:00', 1, 40, 40, 20],
      ['00:00', 2, 10, 0, 0],
      ['01:00', 2, 20, 0, 0],
    ],
  );
  assert.deepEqual(
    accrueUsage([{ endpoint: 'a', team: 't', shape, cpuUtilization: null }], 5, 5),
    [],
  );
});

test('a replica is charged its share of the devices it holds: whole, MIG slices, MPS memory', () => {
  const node: InventoryNode = {
    name: 'g',
    cpus: 8,
    memoryGiB: 64,
    capacity: 'on-demand',
    accelerators: [
      { index: 0, type: 'A100-80GB', memoryGiB: 80, sharing: 'exclusive' },
      { index: 1, type: 'A100-80GB', memoryGiB: 80, sharing: 'mig', mig: ['3g.40gb', '4g.40gb'] },
      { index: 2, type: 'A100-80GB', memoryGiB: 80, sharing: 'mps' },
    ],
  };
  const request = {
    cpu: 1,
    memoryGiB: 2,
    accelerator: { type: 'A100-80GB' },
    capacity: 'any' as const,
  };
  const on = (
    devices: Array<{
      index: number;
      memoryGiB: number;
      whole: boolean;
      mig?: { profile: string; instance: number };
    }>,
  ) => replicaShape(request, { node, placement: { node: 'g', cpu: 1, memoryGiB: 2, devices } });
  assert.equal(on([{ index: 0, memoryGiB: 80, whole: true }]).accelerators, 1);
  assert.equal(
    on([{ index: 1, memoryGiB: 40, whole: false, mig: { profile: '3g.40gb', instance: 0 } }])
      .accelerators,
    3 / 7,
  );
  assert.equal(on([{ index: 2, memoryGiB: 20, whole: false }]).accelerators, 0.25);
  const placed = on([{ index: 2, memoryGiB: 20, whole: false }]);
  assert.equal(placed.acceleratorType, 'A100-80GB');
  assert.equal(placed.capacity, 'on-demand');
  // Not placed on a device: what it asks; 'any' capacity is charged on-demand.
  assert.deepEqual(replicaShape({ ...request, accelerator: { type: 'L4', count: 2 } }, null), {
    cpu: 1,
    memoryGiB: 2,
    acceleratorType: 'L4',
    accelerators: 2,
    capacity: 'on-demand',
  });
});

test('a pool’s workers get no replica hint: their requests are the endpoints’ they serve', () => {
  const report = buildCostReport({
    by: 'endpoint',
    sinceMs: since,
    untilMs: since + dayMs,
    prices,
    usage: [usage('_pool-small', { replicaSeconds: 2 * 86_400 })],
    tokens: [],
    demand: new Map(),
    endpoints: new Map([['_pool-small', facts({ minReplicas: 2, pooled: true })]]),
  });
  assert.deepEqual(report.hints, []);
});
