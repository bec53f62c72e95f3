import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  classificationQuality,
  regressionQuality,
} from '../../../src/observability/quality/quality-metrics.ts';

test('classification: accuracy, AUC and log-loss equal the hand computation', () => {
  // scores / outcomes; threshold 0.5 labels 1,0,1,0,1,0 against 1,0,0,1,1,0: 4 of 6 right.
  const pairs = [
    { prediction: 0.9, outcome: 1 },
    { prediction: 0.2, outcome: 0 },
    { prediction: 0.6, outcome: 0 },
    { prediction: 0.4, outcome: 1 },
    { prediction: 0.8, outcome: 1 },
    { prediction: 0.1, outcome: 0 },
  ];
  const q = classificationQuality(pairs, 0.5);
  assert.equal(q.count, 6);
  assert.equal(q.positives, 3);
  assert.equal(q.accuracy, 4 / 6);
  // Positive/negative pairs (9): positive scores 0.9, 0.4, 0.8 vs negatives 0.2, 0.6, 0.1;
  // 0.9 beats 3, 0.8 beats 3, 0.4 beats 2 (0.2, 0.1): 8 of 9.
  assert.ok(Math.abs(q.auc! - 8 / 9) < 1e-12);
  const hand =
    -(
      Math.log(0.9) +
      Math.log(1 - 0.2) +
      Math.log(1 - 0.6) +
      Math.log(0.4) +
      Math.log(0.8) +
      Math.log(1 - 0.1)
    ) / 6;
  assert.ok(Math.abs(q.logLoss! - hand) < 1e-12);
});

test('classification: tied scores count half in the AUC; one class gives no AUC', () => {
  const tied = classificationQuality(
    [
      { prediction: 0.5, outcome: 1 },
      { prediction: 0.5, outcome: 0 },
    ],
    0.5,
  );
  assert.equal(tied.auc, 0.5);
  assert.equal(tied.accuracy, 0.5);
  const oneClass = classificationQuality([{ prediction: 0.7, outcome: 1 }], 0.5);
  assert.equal(oneClass.auc, null);
  assert.equal(oneClass.accuracy, 1);
});

test('classification: scores that are no probabilities give no log-loss; none gives nulls', () => {
  const margins = classificationQuality(
    [
      { prediction: 2.5, outcome: 1 },
      { prediction: -1, outcome: 0 },
    ],
    0,
  );
  assert.equal(margins.logLoss, null);
  assert.equal(margins.accuracy, 1);
  assert.equal(margins.auc, 1);
  const none = classificationQuality([], 0.5);
  assert.deepEqual([none.accuracy, none.auc, none.logLoss, none.count], [null, null, null, 0]);
});

test('regression: MAE and RMSE equal the hand computation', () => {
  const q = regressionQuality([
    { prediction: 3, outcome: 1 },
    { prediction: 1, outcome: 2 },
    { prediction: 5, outcome: 5 },
    { prediction: 0, outcome: 4 },
  ]);
  // errors 2, -1, 0, -4: |e| sum 7, e^2 sum 21.
  assert.equal(q.mae, 7 / 4);
  assert.equal(q.rmse, Math.sqrt(21 / 4));
  assert.deepEqual(regressionQuality([]), { task: 'regression', count: 0, mae: null, rmse: null });
});
