import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  hashValue,
  redactRecord,
  redactableFields,
  rulesNamingNothing,
} from '../../../src/observability/prediction-log/redact-record.ts';

const sha = (text: string): string => `sha256:${createHash('sha256').update(text).digest('hex')}`;

test('drop removes an input, hash replaces each element; outputs and parameters too', () => {
  const request = {
    inputs: [
      { name: 'ssn', datatype: 'BYTES', shape: [2], data: ['123-45-6789', '987-65-4321'] },
      { name: 'age', datatype: 'FP32', shape: [2], data: [31, 45] },
      { name: 'email', datatype: 'BYTES', shape: [2], data: ['a@x', 'b@x'] },
    ],
    parameters: { user: 'alice', trace: 'keep' },
  };
  const answer = { outputs: [{ name: 'score', datatype: 'FP32', shape: [2], data: [0.1, 0.9] }] };
  const parts = redactRecord(
    request,
    answer,
    [
      { field: 'ssn', action: 'drop' },
      { field: 'email', action: 'hash' },
      { field: 'parameters.user', action: 'hash' },
      { field: 'outputs.score', action: 'drop' },
      { field: 'nothing', action: 'drop' },
    ],
    null,
  );
  assert.deepEqual(
    parts.inputs?.map((t) => t.name),
    ['age', 'email'],
  );
  assert.deepEqual(parts.inputs?.[1]?.data, [sha('a@x'), sha('b@x')]);
  assert.deepEqual(parts.parameters, { user: sha('alice'), trace: 'keep' });
  assert.deepEqual(parts.outputs, []);
  assert.deepEqual(parts.unmatched, ['nothing']);
  assert.ok(!JSON.stringify(parts).includes('123-45-6789'));
});

test('a feature rule redacts its column of a one-matrix request', () => {
  const request = {
    inputs: [
      {
        name: 'input-0',
        datatype: 'FP32',
        shape: [2, 3],
        data: [
          [1, 2, 3],
          [4, 5, 6],
        ],
      },
    ],
  };
  const features = ['a', 'b', 'c'];
  const dropped = redactRecord(request, null, [{ field: 'b', action: 'drop' }], features);
  assert.deepEqual(dropped.inputs?.[0]?.data, [1, null, 3, 4, null, 6]);
  const hashed = redactRecord(request, null, [{ field: 'c', action: 'hash' }], features);
  assert.deepEqual(hashed.inputs?.[0]?.data, [1, 2, hashValue(3), 4, 5, hashValue(6)]);
  assert.deepEqual(hashed.unmatched, []);
});

test('with rules, a request the rules cannot see into is logged without inputs', () => {
  const v1 = { instances: [{ ssn: '123-45-6789' }] };
  const parts = redactRecord(v1, null, [{ field: 'ssn', action: 'drop' }], null);
  assert.equal(parts.inputs, null);
  assert.match(parts.inputsOmitted ?? '', /cannot see/);
  assert.ok(!JSON.stringify(parts).includes('123-45-6789'));
  const plain = redactRecord(v1, null, [], null);
  assert.deepEqual(plain.inputs, [{ name: 'instances', data: v1.instances }]);
});

test('rules naming nothing of a version are found (parameters always pass)', () => {
  const fields = redactableFields(['x'], ['score'], ['age', 'income']);
  assert.deepEqual(
    rulesNamingNothing(
      [
        { field: 'x', action: 'drop' },
        { field: 'income', action: 'hash' },
        { field: 'outputs.score', action: 'drop' },
        { field: 'outputs.label', action: 'drop' },
        { field: 'parameters.user', action: 'drop' },
        { field: 'ssn', action: 'drop' },
      ],
      fields,
    ),
    ['outputs.label', 'ssn'],
  );
});
