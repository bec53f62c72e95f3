// Migration 11's tables: SLI minutes add up across merges (several gateways, partial minutes),
// bad rows refuse the whole merge, and alert states and their transitions are written together
// and survive a reopen.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { KilnError } from '../../src/core/errors.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';

const minute = (i: number): string => new Date(Date.UTC(2026, 11, 1, 0, i)).toISOString();

test('SLI minutes are summed per endpoint and minute; a bad row refuses the merge; prune drops old rows', async () => {
  const dir = await tempDir();
  const store = SqliteStore.open(join(dir, 'kiln.db'), { clock: new FakeClock() });
  const row = {
    endpoint: 'iris',
    minuteStart: minute(0),
    requests: 10,
    serverErrors: 1,
    latencyTotal: 9,
    latencyGood: 8,
  };
  await store.mergeSliMinutes([row, { ...row, minuteStart: minute(1) }]);
  await store.mergeSliMinutes([
    { ...row, requests: 5, serverErrors: 0, latencyTotal: 5, latencyGood: 5 },
  ]);
  await assert.rejects(
    store.mergeSliMinutes([
      { ...row, minuteStart: minute(2) },
      { ...row, serverErrors: 11 },
    ]),
    (error: unknown) =>
      error instanceof KilnError &&
      error.code === 'KILN_VALIDATION_FAILED' &&
      /SLI row 1 .*serverErrors > requests/.test(error.message),
  );
  await assert.rejects(
    store.mergeSliMinutes([{ ...row, minuteStart: '2026-12-01T00:00:30.000Z' }]),
    /not on a minute/,
  );
  assert.deepEqual(await store.listSliMinutes({ endpoint: 'iris', since: minute(0) }), [
    {
      endpoint: 'iris',
      minuteStart: minute(0),
      requests: 15,
      serverErrors: 1,
      latencyTotal: 14,
      latencyGood: 13,
    },
    { ...row, minuteStart: minute(1) },
  ]);
  assert.equal(
    (await store.listSliMinutes({ endpoint: 'iris', since: minute(0), until: minute(1) })).length,
    1,
  );
  assert.equal(await store.pruneSliMinutes(minute(1)), 1);
  assert.equal((await store.listSliMinutes({ endpoint: 'iris', since: minute(0) })).length, 1);
  await store.close();
});

test('alert states and their events are written together and read back after a reopen', async () => {
  const dir = await tempDir();
  const path = join(dir, 'kiln.db');
  const clock = new FakeClock();
  let store = SqliteStore.open(path, { clock });
  const firing = {
    endpoint: 'iris',
    alert: 'availability-page',
    severity: 'page',
    state: 'firing' as const,
    since: minute(5),
    summary: 'burn 20 over 1h, 40 over 5m',
    detail: { factor: 14.4 },
  };
  await store.applySloAlerts([firing], [{ ...firing, at: minute(5) }]);
  await store.applySloAlerts(
    [{ ...firing, state: 'resolved', since: minute(9), summary: 'ok' }],
    [{ ...firing, state: 'resolved', at: minute(9), summary: 'ok' }],
  );
  await store.close();
  store = SqliteStore.open(path, { clock });
  const [state] = await store.listSloAlerts('iris');
  assert.equal(state?.state, 'resolved');
  assert.equal(state?.since, minute(9));
  assert.deepEqual(state?.detail, { factor: 14.4 });
  assert.deepEqual(await store.listSloAlerts('other'), []);
  const events = await store.listSloAlertEvents({ endpoint: 'iris' });
  assert.deepEqual(
    events.map((e) => [e.alert, e.state, e.at]),
    [
      ['availability-page', 'resolved', minute(9)],
      ['availability-page', 'firing', minute(5)],
    ],
  );
  assert.equal((await store.listSloAlertEvents({ endpoint: 'iris', limit: 1 })).length, 1);
  await store.close();
});
