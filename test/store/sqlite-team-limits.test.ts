// Per-team rate limits in the SQLite store (migration 3).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';

test('team limits: set creates or replaces, list is by team, delete returns what it removed', async () => {
  const dir = await tempDir();
  const clock = new FakeClock();
  const path = join(dir, 'kiln.db');
  const store = SqliteStore.open(path, { clock });
  assert.deepEqual(await store.listTeamLimits(), []);

  const risk = await store.setTeamLimit({ team: 'risk', requestsPerSecond: 2.5, burst: 10 });
  assert.equal(risk.team, 'risk');
  assert.equal(risk.requestsPerSecond, 2.5);
  assert.equal(risk.burst, 10);
  assert.equal(typeof risk.updatedAt, 'string');
  await store.setTeamLimit({ team: 'growth', requestsPerSecond: 100, burst: 200 });
  const replaced = await store.setTeamLimit({ team: 'risk', requestsPerSecond: 5, burst: 1 });
  assert.deepEqual(
    { rps: replaced.requestsPerSecond, burst: replaced.burst },
    { rps: 5, burst: 1 },
  );
  assert.deepEqual(
    (await store.listTeamLimits()).map((l) => [l.team, l.requestsPerSecond, l.burst]),
    [
      ['growth', 100, 200],
      ['risk', 5, 1],
    ],
  );

  assert.equal((await store.deleteTeamLimit('risk'))?.team, 'risk');
  assert.equal(await store.deleteTeamLimit('risk'), null);
  await store.close();

  // Survives a reopen.
  const again = SqliteStore.open(path, { clock });
  assert.deepEqual(
    (await again.listTeamLimits()).map((l) => l.team),
    ['growth'],
  );
  await again.close();
});
