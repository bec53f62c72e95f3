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
import { costReportText } from '../../src/cli/commands/cost.ts';

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

test('LLM tokens ride on the gateways’ load reports into the cost report; malformed counts are 400s', async () => {
  const platform = await testPlatform({ dev: true });
  const now = Date.now();
  const report = (endpoints: unknown[]) => ({
    gateway: 'test',
    windowStart: new Date(now - 1000).toISOString(),
    windowEnd: new Date(now).toISOString(),
    endpoints,
  });
  const load = {
    endpoint: 'chat',
    arrivals: 2,
    completed: 2,
    concurrencyMean: 0.5,
    concurrencyMax: 1,
    held: 0,
    latencyMs: { relativeAccuracy: 0.01, zeroCount: 0, positive: [], negative: [] },
  };
  for (const tokens of [
    { promptTokens: 100, completionTokens: 20 },
    { promptTokens: 50, completionTokens: 30 },
  ]) {
    const posted = await call(
      platform.url,
      'POST',
      '/api/v1/scaling/reports',
      report([{ ...load, ...tokens }]),
    );
    assert.equal(posted.status, 202, JSON.stringify(posted.body));
  }
  const bad = await call(
    platform.url,
    'POST',
    '/api/v1/scaling/reports',
    report([{ ...load, promptTokens: -1, completionTokens: 0 }]),
  );
  assert.equal(bad.status, 400);
  assert.match(JSON.stringify(bad.body), /promptTokens/);
  await platform.observability.cost!.sampleOnce(); // stores what the reports carried
  const cost = await call(platform.url, 'GET', '/api/v1/cost?by=endpoint&since=1h');
  const chat = (
    cost.body as {
      rows: Array<{ key: string; team: string; promptTokens: number; completionTokens: number }>;
    }
  ).rows.find((r) => r.key === 'chat');
  assert.deepEqual(chat && [chat.team, chat.promptTokens, chat.completionTokens], [
    '(deleted)',
    150,
    50,
  ]);
});

test('the text report lists unpriced device types and the hints with their savings', () => {
  const row = {
    key: 'vision',
    team: 'ml',
    costUsd: 12.5,
    replicaHours: 24,
    cpuHours: 24,
    memoryGiBHours: 48,
    acceleratorHours: 24,
    spotShare: 0.5,
    requests: 1000,
    promptTokens: 0,
    completionTokens: 0,
    usdPer1kRequests: 12.5,
    usdPer1mTokens: null,
    cpuUtilization: 0.1,
  };
  const text = costReportText({
    by: 'endpoint',
    since: '2026-01-01T00:00:00.000Z',
    until: '2026-01-02T00:00:00.000Z',
    currency: 'USD',
    rows: [row],
    total: { ...row, key: 'total', team: '' },
    unpricedAcceleratorTypes: ['TPU-v5'],
    hints: [
      {
        endpoint: 'vision',
        team: 'ml',
        kind: 'smaller-instance',
        message: 'CPU utilization 10 % of 1 core(s): ask for 0.25 (resources.cpu)',
        savingsUsd: 0.72,
      },
    ],
    prices: { source: '/home/prices.json', table: defaultPriceTable },
  });
  assert.match(text, /^cost by endpoint, .* \(USD; prices: \/home\/prices\.json\)\n/);
  assert.match(text, /\nvision +ml +12\.50 +24\.00 +24\.00 +24\.00 +50% +1000 +0 +12\.50 +10%\n/);
  assert.match(text, /\nnot in the price table \(charged 0\): TPU-v5\n/);
  assert.match(
    text,
    /\nRight-sizing hints\nENDPOINT +HINT +SAVES +WHY\nvision +smaller-instance +0\.7200 +CPU utilization 10 %/,
  );
});
