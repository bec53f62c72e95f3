// `kiln cost report` and `GET /api/v1/cost` (issue 15 E): the real CLI (one process per
// command) and the API of an in-process platform over usage rows in its store; a price table
// that is wrong refuses the start.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { call, testPlatform } from '../helpers/platform.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { startPlatform } from '../../src/control/start-platform.ts';
import { defaultPriceTable } from '../../src/observability/cost/price-table.ts';
import { costCsvColumns } from '../../src/observability/cost/cost-report-csv.ts';
import type { UsageRow } from '../../src/store/cost-records.ts';
import { Cli } from './cli-harness.ts';

test('cost report by team and endpoint, as text, JSON and CSV; bad queries are 400s naming the field', async () => {
  const platform = await testPlatform({ dev: false });
  const hourMs = 3_600_000;
  const thisHour = new Date(Math.floor(Date.now() / hourMs) * hourMs);
  const row = (endpoint: string, team: string, replicaSeconds: number): UsageRow => ({
    endpoint,
    team,
    hourStart: thisHour.toISOString(),
    cpu: 1,
    memoryGiB: 2,
    acceleratorType: '',
    accelerators: 0,
    capacity: 'on-demand',
    replicaSeconds,
    observedSeconds: 0,
    cpuBusySeconds: 0,
  });
  await platform.registry.store.mergeUsage([
    row('fraud', 'risk', 7200),
    row('churn', 'risk', 3600),
    row('vision', 'ml', 1800),
  ]);
  // Default prices: 1 core + 2 GiB on-demand = 0.04 + 2 × 0.005 = 0.05 USD per replica-hour.
  const perHour =
    defaultPriceTable.cpu.onDemandUsdPerHour + 2 * defaultPriceTable.memoryGiB.onDemandUsdPerHour;

  const anonymous = await call(platform.url, 'GET', '/api/v1/cost');
  assert.equal(anonymous.status, 401);
  const byTeam = await call(
    platform.url,
    'GET',
    '/api/v1/cost?by=team&since=1d',
    undefined,
    platform.admin,
  );
  assert.equal(byTeam.status, 200, JSON.stringify(byTeam.body));
  const report = byTeam.body as {
    rows: Array<{ key: string; costUsd: number }>;
    prices: { source: string | null };
  };
  assert.deepEqual(
    report.rows.map((r) => r.key),
    ['risk', 'ml'],
  );
  assert.ok(Math.abs(report.rows[0]!.costUsd - 3 * perHour) < 1e-9);
  assert.equal(report.prices.source, null, 'no table given: the defaults');

  const csv = await fetch(`${platform.url}/api/v1/cost?by=endpoint&since=1d&format=csv`, {
    headers: platform.admin,
  });
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
  const lines = (await csv.text()).trimEnd().split('\r\n');
  assert.equal(lines[0], costCsvColumns.join(','));
  assert.deepEqual(
    lines.slice(1).map((l) => l.split(',').slice(0, 3)),
    [
      ['endpoint', 'fraud', 'risk'],
      ['endpoint', 'churn', 'risk'],
      ['endpoint', 'vision', 'ml'],
    ],
  );

  const badBy = await call(platform.url, 'GET', '/api/v1/cost?by=model', undefined, platform.admin);
  assert.equal(badBy.status, 400);
  assert.match(JSON.stringify(badBy.body), /by/);
  const badSince = await call(
    platform.url,
    'GET',
    '/api/v1/cost?since=lastweek',
    undefined,
    platform.admin,
  );
  assert.equal(badSince.status, 400);
  assert.match(JSON.stringify(badSince.body), /since \\"lastweek\\" is neither a duration/);
  const backwards = await call(
    platform.url,
    'GET',
    '/api/v1/cost?since=1h&until=2h',
    undefined,
    platform.admin,
  );
  assert.equal(backwards.status, 400);
  assert.match(JSON.stringify(backwards.body), /until .* must be after since/);

  const cli = new Cli(platform.url, platform.home);
  const text = await cli.ok(['cost', 'report', '--by', 'endpoint', '--since', '1d']);
  assert.match(text, /^cost by endpoint, .* \(USD; prices: defaults\)/);
  assert.match(text, /\nENDPOINT +TEAM +COST +REPLICA-H/);
  assert.match(text, /\nfraud +risk +0\.1000 +2\.00 /);
  assert.match(text, /\ntotal +- +0\.1750 +3\.50 /);
  const cliCsv = await cli.ok(['cost', 'report', '--by', 'team', '--since', '1d', '--csv']);
  assert.deepEqual(
    cliCsv.split('\r\n').map((l) => l.split(',')[1]),
    ['key', 'risk', 'ml', undefined],
  );
});

test('a price table that is wrong refuses the start, naming the file and the entry', async () => {
  const home = await tempDir();
  const file = join(home, 'my-prices.json');
  await writeFile(file, JSON.stringify({ accelerators: { L4: { onDemand: -2 } } }));
  await assert.rejects(
    startPlatform({ home, host: '127.0.0.1', port: 0, dev: true, gateway: false, prices: file }),
    /invalid price table .*my-prices\.json: accelerators\.L4\.onDemand must be a price in USD per hour >= 0/,
  );
});
