import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
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

test('outcomes join once, within the window; unknown, expired and duplicates are told apart', async () => {
  const store = SqliteStore.open(':memory:');
  try {
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
  } finally {
    await store.close();
  }
});
