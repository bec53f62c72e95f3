// `kiln teams limit | limits | unlimit`: the real CLI (one process per command) against an
// in-process platform; and the table rendering.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { teamLimitsTable } from '../../src/cli/commands/teams.ts';
import { testPlatform } from '../helpers/platform.ts';
import { Cli } from './cli-harness.ts';

interface Limit {
  team: string;
  requestsPerSecond: number;
  burst: number;
}

void test('teams limit / limits / unlimit, end to end', async () => {
  const platform = await testPlatform();
  const cli = new Cli(platform.url, platform.home);
  assert.equal(await cli.ok(['teams', 'limits']), 'no team limits\n');
  assert.equal(
    await cli.ok(['teams', 'limit', 'risk', '--rps', '2.5', '--burst', '10']),
    'team risk: 2.5 requests/s, burst 10\n',
  );
  const set = await cli.json<Limit>(['teams', 'limit', 'growth', '--rps', '100', '--burst', '1']);
  assert.deepEqual([set.team, set.requestsPerSecond, set.burst], ['growth', 100, 1]);

  const listed = await cli.json<{ items: Limit[] }>(['teams', 'limits']);
  assert.deepEqual(
    listed.items.map((l) => [l.team, l.requestsPerSecond, l.burst]),
    [
      ['growth', 100, 1],
      ['risk', 2.5, 10],
    ],
  );
  assert.match(await cli.ok(['teams', 'limits']), /^TEAM +RPS +BURST +UPDATED\ngrowth +100 +1 /);
  assert.deepEqual(platform.reconciler.routing.current().teamLimits, [
    { team: 'growth', requestsPerSecond: 100, burst: 1 },
    { team: 'risk', requestsPerSecond: 2.5, burst: 10 },
  ]);

  assert.equal(await cli.ok(['teams', 'unlimit', 'growth']), 'team growth: no rate limit\n');
  assert.match(await cli.fails(['teams', 'unlimit', 'growth'], 1), /KILN_TEAM_LIMIT_NOT_FOUND/);
  await cli.fails(['teams', 'limit', 'risk', '--rps', '0', '--burst', '1'], 2);
  await cli.fails(['teams', 'limit', 'risk', '--rps', '1', '--burst', '0'], 2);
  await cli.fails(['teams', 'limit', 'risk', '--burst', '3'], 2);
});

void test('the team limits table aligns numbers right', () => {
  const text = teamLimitsTable([
    { team: 'growth', requestsPerSecond: 100, burst: 200, updatedAt: '2026-01-31T14:05:09.123Z' },
    { team: 'risk', requestsPerSecond: 2.5, burst: 5, updatedAt: '2026-01-31T14:06:00.000Z' },
  ]);
  const lines = text.split('\n');
  assert.match(lines[0] ?? '', /^TEAM +RPS +BURST +UPDATED$/);
  assert.match(lines[1] ?? '', /^growth +100 +200 +\S/);
  assert.match(lines[2] ?? '', /^risk +2\.5 +5 +\S/);
});
