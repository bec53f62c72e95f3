// Migration 11's tables: SLI minutes add up across merges (several gateways, partial minutes),
// bad rows refuse the whole merge, and alert states and their transitions are written together
// and are read back by another store
// on the same database (a restarted or second control plane). Every store kind.

import assert from 'node:assert/strict';
import { KilnError } from '../../src/core/errors.ts';
import { forEachStore } from '../helpers/store-kinds.ts';

const minute = (i: number): string => new Date(Date.UTC(2026, 11, 1, 0, i)).toISOString();

forEachStore(
  'SLI minutes are summed per endpoint and minute; a bad row refuses the merge; prune drops old rows',
  async ({ store }) => {
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
  },
);

forEachStore(
  'alert states and their events are written together and read back by another store on the database',
  async (subject) => {
    const first = subject.store;
    const firing = {
      endpoint: 'iris',
      alert: 'availability-page',
      severity: 'page',
      state: 'firing' as const,
      since: minute(5),
      summary: 'burn 20 over 1h, 40 over 5m',
      detail: { factor: 14.4 },
    };
    await first.applySloAlerts([firing], [{ ...firing, at: minute(5) }]);
    await first.applySloAlerts(
      [{ ...firing, state: 'resolved', since: minute(9), summary: 'ok' }],
      [{ ...firing, state: 'resolved', at: minute(9), summary: 'ok' }],
    );
    const store = await subject.openAnother();
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
  },
);

forEachStore(
  'alert states list by endpoint then alert in byte order; events newest first per endpoint',
  async ({ store }) => {
    const state = (endpoint: string, alert: string) => ({
      endpoint,
      alert,
      severity: 'ticket',
      state: 'firing' as const,
      since: minute(1),
      summary: '',
      detail: null,
    });
    await store.applySloAlerts(
      [state('iris', 'latency-ticket'), state('Iris', 'drift'), state('iris', 'availability-page')],
      [
        { ...state('iris', 'latency-ticket'), at: minute(1) },
        { ...state('Iris', 'drift'), at: minute(2) },
        { ...state('iris', 'availability-page'), at: minute(3) },
      ],
    );
    assert.deepEqual(
      (await store.listSloAlerts()).map((a) => [a.endpoint, a.alert, a.detail]),
      [
        ['Iris', 'drift', null],
        ['iris', 'availability-page', null],
        ['iris', 'latency-ticket', null],
      ],
    );
    assert.deepEqual(
      (await store.listSloAlertEvents({ endpoint: 'iris' })).map((e) => e.alert),
      ['availability-page', 'latency-ticket'],
    );
  },
);
