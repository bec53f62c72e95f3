import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  isValidTraceparent,
  newTraceparent,
  requestIdFrom,
  traceparentFrom,
} from '../../src/gateway/trace-context.ts';

const valid = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

test('a valid client traceparent is kept; malformed or all-zero ones start a new trace', () => {
  assert.equal(traceparentFrom(valid), valid);
  for (const bad of [
    undefined,
    '',
    'garbage',
    '00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01',
    '00-00000000000000000000000000000000-b7ad6b7169203331-01',
    '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
    'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  ]) {
    const made = traceparentFrom(bad);
    assert.notEqual(made, bad);
    assert.ok(isValidTraceparent(made), made);
  }
});

test('new traces are well-formed and distinct', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 1000; i++) {
    const value = newTraceparent();
    assert.match(value, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    seen.add(value.slice(3, 35));
  }
  assert.equal(seen.size, 1000);
});

test('request ids: the client one when reasonable, else a new UUID', () => {
  assert.equal(requestIdFrom('abc-123'), 'abc-123');
  assert.match(requestIdFrom(undefined), /^[0-9a-f-]{36}$/);
  assert.match(requestIdFrom('x'.repeat(500)), /^[0-9a-f-]{36}$/);
});
