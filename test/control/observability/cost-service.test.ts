// Cost accounting on an injected clock (issue 15 E): known replicas on a known inventory,
// sampled at known times and priced by a known table, give a report that equals the hand
// computation — per endpoint and per team, in JSON, as CSV, and in kiln_cost_usd_total.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Registry as MetricsRegistry } from 'prom-client';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.ts';
import { Placer } from '../../../src/control/placement/placer.ts';
import { parseInventory } from '../../../src/placement/parse-inventory.ts';
import { parsePriceTable } from '../../../src/observability/cost/price-table.ts';
import { CostService } from '../../../src/control/observability/cost-service.ts';
import { costReportCsv, costCsvColumns } from '../../../src/observability/cost/cost-report-csv.ts';
import type { ReplicaStatus } from '../../../src/control/reconciler.ts';
import type { EndpointConfig } from '../../../src/store/serving-records.ts';
import { HistogramSketch } from '../../../src/traffic/histogram-sketch.ts';
import { FakeClock, tempDir } from '../../helpers/temp-dir.ts';
import { placeholderVersion } from '../../helpers/stored-version.ts';

const prices = parsePriceTable(
  {
    cpu: { onDemand: 0.05, spot: 0.02 },
    memoryGiB: { onDemand: 0.01, spot: 0.004 },
    accelerators: { L4: { onDemand: 0.8, spot: 0.3 } },
  },
  'test prices',
);

const inventory = parseInventory(
  {
    nodes: [
      {
        name: 'spot-1',
        capacity: 'spot',
        cpus: 16,
        memoryGiB: 64,
        accelerators: [{ index: 0, type: 'L4', memoryGiB: 24, sharing: 'exclusive' }],
      },
      { name: 'od-1', capacity: 'on-demand', cpus: 8, memoryGiB: 32, accelerators: [] },
    ],
  },
  'test inventory',
);

const fraudConfig: EndpointConfig = {
  resources: { cpu: 2, memoryGiB: 4, capacity: 'on-demand' },
};
const visionConfig: EndpointConfig = {
  resources: { cpu: 1, memoryGiB: 8, capacity: 'spot', accelerator: { type: 'L4', count: 1 } },
};

function replica(
  id: string,
  endpoint: string,
  state: ReplicaStatus['state'],
  pid: number | null,
): ReplicaStatus {
  return {
    id,
    endpoint,
    model: 'm',
    version: 1,
    revision: 'r',
    slot: 0,
    state,
    url: null,
    pid,
    restarts: 0,
    reason: null,
    lastFailure: null,
    restartAt: null,
    node: null,
    evicted: false,
  };
}

async function setup() {
  const clock = new FakeClock(Date.parse('2026-01-01T00:59:00Z'));
  const store = SqliteStore.open(join(await tempDir(), 'kiln.db'), { clock });
  await store.createModel({ name: 'm', team: 'risk', description: '' });
  await store.createVersion('m', placeholderVersion());
  const endpoints = [
    { name: 'fraud', team: 'risk', config: fraudConfig, replicas: 2 },
    { name: 'vision', team: 'ml', config: visionConfig, replicas: 1 },
  ];
  for (const e of endpoints)
    await store.putEndpoint({
      name: e.name,
      team: e.team,
      model: 'm',
      version: 1,
      ref: '1',
      replicas: e.replicas,
      config: e.config,
    });
  const placer = new Placer({ inventory, source: null });
  for (const [id, e] of [
    ['fraud-a', endpoints[0]!],
    ['fraud-b', endpoints[0]!],
    ['vision-a', endpoints[1]!],
  ] as const)
    assert.ok(placer.place(id, { name: e.name, config: e.config }, 3).ok);
  let replicas = [
    replica('fraud-a', 'fraud', 'ready', 11),
    replica('fraud-b', 'fraud', 'ready', 12),
    replica('vision-a', 'vision', 'ready', 13),
    // Waiting for room (never launched) and failed: they hold nothing, are charged nothing.
    replica('fraud-c', 'fraud', 'starting', null),
    replica('vision-b', 'vision', 'failed', null),
  ];
  const metrics = new MetricsRegistry();
  const watched: Array<ReadonlySet<string>> = [];
  // The workers' CPU as the worker-load poller sums it: fraud's two replicas at 0.1 + 0.3.
  const workerLoad = {
    watch: (endpoints: ReadonlySet<string>) => void watched.push(endpoints),
    latest: (endpoint: string) =>
      endpoint === 'fraud'
        ? {
            atMs: 0,
            replicas: 2,
            queueDepth: 0,
            cpu: 0.4,
            threads: 1,
            accelerator: null,
            custom: {},
          }
        : null,
  };
  const service = new CostService({
    store,
    clock,
    replicas: { replicaStatus: () => replicas, placer },
    prices,
    pricesSource: 'test prices',
    metrics,
    workerLoad,
  });
  return {
    clock,
    store,
    service,
    watched,
    metrics,
    setReplicas: (next: ReplicaStatus[]) => {
      replicas = next;
    },
    replicas: () => replicas,
  };
}

function near(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} != ${expected}`);
}

test('the cost report equals the hand computation (injected clock, known replicas and prices)', async () => {
  const { clock, store, service, metrics, setReplicas, replicas, watched } = await setup();
  assert.deepEqual(await service.sampleOnce(), [], 'the first sample only starts the clock');
  clock.advance(60_000); // 00:59:00 → 01:00:00: all three for 60 s, in hour 00:00
  await service.sampleOnce();
  clock.advance(90_000); // → 01:01:30: all three for 90 s, in hour 01:00
  await service.sampleOnce();
  setReplicas(
    replicas().map((r) => (r.id === 'fraud-b' ? { ...r, state: 'failed', pid: null } : r)),
  );
  clock.advance(30_000); // → 01:02:00: fraud-a and vision-a for 30 s
  await service.sampleOnce();
  // Requests from the demand history: 1200 in one minute, 300 in another.
  const sketch = new HistogramSketch().snapshot();
  await store.mergeDemand([
    {
      endpoint: 'fraud',
      minuteStart: '2026-01-01T01:00:00Z',
      arrivals: 1200,
      concurrencySeconds: 30,
      seconds: 60,
      latencyMs: sketch,
    },
    {
      endpoint: 'fraud',
      minuteStart: '2026-01-01T01:01:00Z',
      arrivals: 300,
      concurrencySeconds: 6,
      seconds: 60,
      latencyMs: sketch,
    },
  ]);

  // By hand: fraud, on-demand node, 2 cores + 4 GiB: 2 × 0.05 + 4 × 0.01 = 0.14 USD/h;
  // 60 + 60 + 90 + 90 + 30 = 330 replica-seconds. vision, spot node with the L4:
  // 1 × 0.02 + 8 × 0.004 + 1 × 0.3 = 0.352 USD/h; 60 + 90 + 30 = 180 replica-seconds.
  const fraudUsd = (330 / 3600) * 0.14;
  const visionUsd = (180 / 3600) * 0.352;

  const sinceMs = Date.parse('2026-01-01T00:00:00Z');
  const untilMs = Date.parse('2026-01-01T02:00:00Z');
  const byEndpoint = await service.report({ by: 'endpoint', sinceMs, untilMs });
  assert.deepEqual(
    byEndpoint.rows.map((r) => [r.key, r.team]),
    [
      ['vision', 'ml'],
      ['fraud', 'risk'],
    ],
  );
  const [vision, fraud] = byEndpoint.rows;
  near(fraud!.costUsd, fraudUsd, 'fraud cost');
  near(vision!.costUsd, visionUsd, 'vision cost');
  near(fraud!.replicaHours, 330 / 3600, 'fraud replica-hours');
  near(fraud!.cpuHours, (2 * 330) / 3600, 'fraud cpu-hours');
  near(fraud!.memoryGiBHours, (4 * 330) / 3600, 'fraud memory');
  near(vision!.acceleratorHours, 180 / 3600, 'vision gpu-hours');
  assert.equal(fraud!.spotShare, 0);
  assert.equal(vision!.spotShare, 1);
  assert.equal(fraud!.requests, 1500);
  near(fraud!.usdPer1kRequests!, (fraudUsd / 1500) * 1000, 'fraud $/1k');
  assert.equal(vision!.usdPer1kRequests, null);
  near(byEndpoint.total.costUsd, fraudUsd + visionUsd, 'total');
  // Fraud's workers ran at a mean 20 % of their threads; vision was never polled.
  near(fraud!.cpuUtilization!, 0.2, 'fraud CPU');
  assert.equal(vision!.cpuUtilization, null);
  assert.deepEqual(
    [...watched.at(-1)!].sort(),
    ['fraud', 'vision'],
    'the poller watches what runs',
  );
  assert.deepEqual(byEndpoint.unpricedAcceleratorTypes, []);

  const byTeam = await service.report({ by: 'team', sinceMs, untilMs });
  assert.deepEqual(
    byTeam.rows.map((r) => r.key),
    ['ml', 'risk'],
  );
  near(byTeam.rows[1]!.costUsd, fraudUsd, 'team risk');

  // A window of the second hour only: the 60 s of hour 00:00 are out.
  const later = await service.report({
    by: 'endpoint',
    sinceMs: Date.parse('2026-01-01T01:00:00Z'),
    untilMs,
  });
  near(
    later.rows.find((r) => r.key === 'fraud')!.costUsd,
    (210 / 3600) * 0.14,
    'fraud, hour 01:00',
  );

  // The counter on the control plane's registry says the same.
  const counter = (await metrics.getSingleMetric('kiln_cost_usd_total')!.get()).values;
  near(
    counter.find((v) => v.labels.endpoint === 'fraud' && v.labels.team === 'risk')!.value,
    fraudUsd,
    'metric fraud',
  );
  near(
    counter.find((v) => v.labels.endpoint === 'vision' && v.labels.team === 'ml')!.value,
    visionUsd,
    'metric vision',
  );
  const rate = (await metrics.getSingleMetric('kiln_cost_usd_per_hour')!.get()).values;
  near(rate.find((v) => v.labels.endpoint === 'fraud')!.value, 0.14, 'fraud now: one replica');

  // CSV: the header, then one line per endpoint in the report's order, RFC 4180 line ends.
  const csv = costReportCsv(byEndpoint);
  const lines = csv.split('\r\n');
  assert.equal(lines.at(-1), '', 'ends with CRLF');
  assert.equal(lines[0], costCsvColumns.join(','));
  assert.equal(lines.length, 4);
  const fraudLine = lines[2]!.split(',');
  assert.equal(fraudLine.length, costCsvColumns.length);
  const col = (name: (typeof costCsvColumns)[number]): string =>
    fraudLine[costCsvColumns.indexOf(name)]!;
  assert.equal(col('group'), 'endpoint');
  assert.equal(col('key'), 'fraud');
  assert.equal(col('team'), 'risk');
  near(Number(col('cost_usd')), fraudUsd, 'csv cost');
  assert.equal(col('requests'), '1500');
  assert.equal(col('usd_per_1m_tokens'), '', 'null is an empty field');
  await store.close();
});

test('a gap longer than maxGapMs is not charged; the sample after it starts the clock again', async () => {
  const { clock, store, service } = await setup();
  await service.sampleOnce();
  clock.advance(10 * 60_000);
  assert.deepEqual(await service.sampleOnce(), []);
  clock.advance(10_000);
  const rows = await service.sampleOnce();
  assert.deepEqual(rows.map((r) => [r.endpoint, r.replicaSeconds]).sort(), [
    ['fraud', 20],
    ['vision', 10],
  ]);
  await store.close();
});
