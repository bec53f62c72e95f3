// Predictions and outcomes (migration 9), on every store kind: outcomes join once, within the
// join window; prune keeps joined rows to their own horizon.

import assert from 'node:assert/strict';
import { forEachStore } from '../helpers/store-kinds.ts';
import type { NewPrediction } from '../../src/store/quality-records.ts';

function prediction(
  requestId: string,
  atMs: number,
  extra: Partial<NewPrediction> = {},
): NewPrediction {
  return {
    endpoint: 'fraud',
    requestId,
    model: 'fraud-model',
    version: 1,
    prediction: 0.5,
    slice: null,
    atMs,
    ...extra,
  };
}

forEachStore(
  'outcomes join once, within the window; unknown, expired and duplicates are told apart',
  async ({ store }) => {
    assert.equal(
      await store.addPredictions([
        prediction('a', 1_000, { prediction: 0.9, slice: 'de' }),
        prediction('b', 2_000, { version: 2 }),
        prediction('old', 10),
        prediction('other', 1_500, { endpoint: 'churn' }),
      ]),
      4,
    );
    // The same request id reported again (a retried report) is kept once.
    assert.equal(await store.addPredictions([prediction('a', 1_000, { prediction: 0.1 })]), 0);
    const statuses = await store.joinOutcomes(
      'fraud',
      [
        { requestId: 'a', value: 1 },
        { requestId: 'a', value: 0 },
        { requestId: 'old', value: 1 },
        { requestId: 'nope', value: 1 },
        { requestId: 'other', value: 1 },
        { requestId: 'b', value: 0 },
      ],
      500,
      5_000,
    );
    assert.deepEqual(statuses, ['joined', 'duplicate', 'expired', 'unknown', 'unknown', 'joined']);
    assert.deepEqual(
      await store.joinOutcomes('fraud', [{ requestId: 'b', value: 1 }], 500, 6_000),
      ['duplicate'],
    );
    const joined = await store.listJoinedPredictions({ endpoint: 'fraud', sinceMs: 0 });
    assert.deepEqual(
      joined.map((j) => [j.requestId, j.version, j.prediction, j.outcome, j.slice, j.joinedAtMs]),
      [
        ['a', 1, 0.9, 1, 'de', 5_000],
        ['b', 2, 0.5, 0, null, 5_000],
      ],
    );
    const de = await store.listJoinedPredictions({ endpoint: 'fraud', sinceMs: 0, slice: 'de' });
    assert.deepEqual(
      de.map((j) => j.requestId),
      ['a'],
    );
    assert.equal(
      (await store.listJoinedPredictions({ endpoint: 'fraud', sinceMs: 1_500 })).length,
      1,
    );
    // Prune: the unjoined `old` goes; joined ones stay until their own horizon.
    assert.equal(await store.prunePredictions('fraud', 500, 0), 1);
    assert.deepEqual(
      await store.joinOutcomes('fraud', [{ requestId: 'old', value: 1 }], 0, 7_000),
      ['unknown'],
    );
    assert.equal(await store.prunePredictions('fraud', 0, 1_500), 1);
    assert.equal((await store.listJoinedPredictions({ endpoint: 'fraud', sinceMs: 0 })).length, 1);
  },
);

forEachStore(
  'a request id twice in one batch keeps the first; an outcome reported to two control planes at once joins once',
  async (subject) => {
    const { store } = subject;
    const other = await subject.openAnother();
    assert.equal(
      await store.addPredictions([
        prediction('a', 1_000, { prediction: 0.25 }),
        prediction('a', 1_000, { prediction: 0.75 }),
        prediction('b', 1_000),
      ]),
      2,
    );
    assert.equal(await store.addPredictions([]), 0);
    const [fromStore, fromOther] = await Promise.all([
      store.joinOutcomes('fraud', [{ requestId: 'a', value: 1 }], 0, 2_000),
      other.joinOutcomes('fraud', [{ requestId: 'a', value: 0 }], 0, 3_000),
    ]);
    assert.deepEqual([...fromStore, ...fromOther].sort(), ['duplicate', 'joined']);
    const [joined] = await other.listJoinedPredictions({ endpoint: 'fraud', sinceMs: 0 });
    assert.equal(joined?.prediction, 0.25);
    assert.equal(joined?.outcome, fromStore[0] === 'joined' ? 1 : 0);
    assert.deepEqual(await store.joinOutcomes('fraud', [], 0, 4_000), []);
  },
);
