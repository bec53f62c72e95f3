// Store contract, per-team rate limits (migration 3), on SQLite and on PostgreSQL.

import assert from 'node:assert/strict';
import { forEachStore } from '../helpers/store-kinds.ts';

forEachStore(
  'team limits: set creates or replaces, list is by team, delete returns what it removed',
  async (subject) => {
    const { store } = subject;
    assert.deepEqual(await store.listTeamLimits(), []);

    const risk = await store.setTeamLimit({ team: 'risk', requestsPerSecond: 2.5, burst: 10 });
    assert.equal(risk.team, 'risk');
    assert.equal(risk.requestsPerSecond, 2.5);
    assert.equal(risk.burst, 10);
    assert.equal(typeof risk.updatedAt, 'string');
    await store.setTeamLimit({ team: 'growth', requestsPerSecond: 100, burst: 200 });
    await store.setTeamLimit({ team: 'Ads', requestsPerSecond: 0.5, burst: 1 });
    const replaced = await store.setTeamLimit({ team: 'risk', requestsPerSecond: 5, burst: 1 });
    assert.deepEqual(
      { rps: replaced.requestsPerSecond, burst: replaced.burst },
      { rps: 5, burst: 1 },
    );
    assert.deepEqual(
      (await store.listTeamLimits()).map((l) => [l.team, l.requestsPerSecond, l.burst]),
      [
        ['Ads', 0.5, 1],
        ['growth', 100, 200],
        ['risk', 5, 1],
      ],
    );

    assert.equal((await store.deleteTeamLimit('risk'))?.team, 'risk');
    assert.equal(await store.deleteTeamLimit('risk'), null);

    // Seen by another control plane (or the same one reopened).
    const again = await subject.openAnother();
    assert.deepEqual(
      (await again.listTeamLimits()).map((l) => l.team),
      ['Ads', 'growth'],
    );
  },
);
