// Cost usage in the store (every kind) (issue 15 E, migration 10): hourly replica time per endpoint,
// team and shape, and LLM tokens; merges add, reads are windows, bad rows are refused whole.

import assert from 'node:assert/strict';
import { KilnError } from '../../src/core/errors.ts';
import type { UsageRow } from '../../src/store/cost-records.ts';
import { forEachStore } from '../helpers/store-kinds.ts';

const h0 = '2026-01-01T00:00:00.000Z';
const h1 = '2026-01-01T01:00:00.000Z';

function usage(over: Partial<UsageRow> = {}): UsageRow {
  return {
    endpoint: 'fraud',
    team: 'risk',
    hourStart: h0,
    cpu: 2,
    memoryGiB: 4,
    acceleratorType: '',
    accelerators: 0,
    capacity: 'on-demand',
    replicaSeconds: 60,
    observedSeconds: 30,
    cpuBusySeconds: 3,
    ...over,
  };
}

function validation(pattern: RegExp) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof KilnError, String(error));
    assert.equal(error.code, 'KILN_VALIDATION_FAILED');
    assert.match(error.message, pattern);
    return true;
  };
}

forEachStore(
  'usage rows of one endpoint, team, hour and shape add up; other shapes stay apart',
  async ({ store }) => {
    await store.mergeUsage([usage(), usage({ capacity: 'spot' })]);
    await store.mergeUsage([
      usage({ replicaSeconds: 15, observedSeconds: 15, cpuBusySeconds: 1.5 }),
    ]);
    await store.mergeUsage([usage({ hourStart: h1, endpoint: 'vision', team: 'ml' })]);
    const rows = await store.listUsage({ since: h0 });
    assert.deepEqual(
      rows.map((r) => [
        r.endpoint,
        r.hourStart,
        r.capacity,
        r.replicaSeconds,
        r.observedSeconds,
        r.cpuBusySeconds,
      ]),
      [
        ['fraud', h0, 'on-demand', 75, 45, 4.5],
        ['fraud', h0, 'spot', 60, 30, 3],
        ['vision', h1, 'on-demand', 60, 30, 3],
      ],
    );
    assert.equal((await store.listUsage({ since: h0, until: h1 })).length, 2);
    assert.equal((await store.listUsage({ since: h1 })).length, 1);
    assert.equal((await store.listUsage({ since: h0, endpoint: 'vision' })).length, 1);
  },
);

forEachStore('token rows add up per endpoint, team and hour', async ({ store }) => {
  const row = {
    endpoint: 'chat',
    team: 'ml',
    hourStart: h0,
    promptTokens: 100,
    completionTokens: 40,
  };
  await store.mergeTokenUsage([row, row]);
  await store.mergeTokenUsage([{ ...row, hourStart: h1, promptTokens: 1 }]);
  assert.deepEqual(await store.listTokenUsage({ since: h0 }), [
    { ...row, promptTokens: 200, completionTokens: 80 },
    { ...row, hourStart: h1, promptTokens: 1 },
  ]);
});

forEachStore(
  'bad usage rows are refused naming the row and field, and nothing of the batch is kept',
  async ({ store }) => {
    await assert.rejects(
      store.mergeUsage([usage(), usage({ hourStart: '2026-01-01T00:30:00Z' })]),
      validation(/usage row 1 .*hourStart .* is not on a whole hour/),
    );
    await assert.rejects(
      store.mergeUsage([usage({ replicaSeconds: -1 })]),
      validation(/replicaSeconds must be/),
    );
    await assert.rejects(store.mergeUsage([usage({ cpu: Number.NaN })]), validation(/cpu must be/));
    await assert.rejects(
      store.mergeUsage([usage({ capacity: 'reserved' as 'spot' })]),
      validation(/capacity must be spot or on-demand/),
    );
    await assert.rejects(
      store.mergeUsage([usage({ endpoint: '' })]),
      validation(/endpoint is empty/),
    );
    await assert.rejects(
      store.mergeTokenUsage([
        { endpoint: 'c', team: 't', hourStart: h0, promptTokens: 1.5, completionTokens: 0 },
      ]),
      validation(/promptTokens must be an integer >= 0/),
    );
    assert.deepEqual(await store.listUsage({ since: h0 }), []);
  },
);

forEachStore('pruneUsage deletes the hours before a time, usage and tokens', async ({ store }) => {
  await store.mergeUsage([usage(), usage({ hourStart: h1 })]);
  await store.mergeTokenUsage([
    { endpoint: 'chat', team: 'ml', hourStart: h0, promptTokens: 1, completionTokens: 1 },
  ]);
  assert.equal(await store.pruneUsage(h1), 2);
  assert.deepEqual(
    (await store.listUsage({ since: h0 })).map((r) => r.hourStart),
    [h1],
  );
  assert.deepEqual(await store.listTokenUsage({ since: h0 }), []);
});

forEachStore(
  'merges from two control planes at once add up; rows list by hour, then endpoint in byte order',
  async (subject) => {
    const { store } = subject;
    const other = await subject.openAnother();
    const merges = [];
    for (let i = 0; i < 10; i += 1) {
      for (const s of [store, other]) {
        merges.push(
          s.mergeUsage([usage({ replicaSeconds: 1, observedSeconds: 1, cpuBusySeconds: 0.5 })]),
        );
        merges.push(
          s.mergeTokenUsage([
            { endpoint: 'chat', team: 'ml', hourStart: h0, promptTokens: 2, completionTokens: 1 },
          ]),
        );
      }
    }
    await Promise.all(merges);
    await store.mergeUsage([usage({ endpoint: 'Zeta' }), usage({ endpoint: 'alpha' })]);
    const rows = await store.listUsage({ since: h0 });
    assert.deepEqual(
      rows.map((r) => [r.endpoint, r.replicaSeconds, r.observedSeconds, r.cpuBusySeconds]),
      [
        ['Zeta', 60, 30, 3],
        ['alpha', 60, 30, 3],
        ['fraud', 20, 20, 10],
      ],
    );
    assert.deepEqual(
      (await other.listTokenUsage({ since: h0, endpoint: 'chat' })).map((r) => [
        r.promptTokens,
        r.completionTokens,
      ]),
      [[40, 20]],
    );
  },
);
