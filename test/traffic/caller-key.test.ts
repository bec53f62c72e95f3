// The caller key: the `kiln-user` header first, else the configured body path; the path
// syntax is checked as a value with the problem and its place named.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callerKey, compileCallerKey, type CallerKeySource } from '../../src/traffic/caller-key.ts';

function source(keyPath: string | null): CallerKeySource {
  const result = compileCallerKey(keyPath);
  if (!result.ok) assert.fail(result.problem);
  return result.source;
}

const v2Body = {
  id: 'r1',
  parameters: { user_id: 'u-17', tenant: { id: 42 }, flag: true, none: null },
  inputs: [{ name: 'user', datatype: 'BYTES', shape: [1], data: ['alice'] }],
};

test('the kiln-user header wins over the body; repeated, the first counts', () => {
  const s = source('$.parameters.user_id');
  assert.equal(callerKey(s, 'bob', v2Body), 'bob');
  assert.equal(callerKey(s, ['carol', 'dave'], v2Body), 'carol');
  // An empty or blank header is no header: the body path answers.
  assert.equal(callerKey(s, '', v2Body), 'u-17');
  assert.equal(callerKey(s, '  ', v2Body), 'u-17');
  assert.equal(callerKey(s, undefined, v2Body), 'u-17');
});

test('without a key path only the header counts', () => {
  const s = source(null);
  assert.equal(callerKey(s, 'bob', v2Body), 'bob');
  assert.equal(callerKey(s, undefined, v2Body), null);
  assert.equal(compileCallerKey().ok, true);
});

test('body paths: names and indexes, with or without $', () => {
  const cases: [string, string | null][] = [
    ['$.parameters.user_id', 'u-17'],
    ['parameters.user_id', 'u-17'],
    ['inputs[0].data[0]', 'alice'],
    ['$.inputs[0].data[0]', 'alice'],
    ['$.parameters.tenant.id', '42'], // a number is its decimal text
    ['$.parameters.flag', null], // a boolean is no key
    ['$.parameters.none', null],
    ['$.parameters.tenant', null], // an object is no key
    ['$.parameters.missing', null],
    ['inputs[1].data[0]', null],
    ['inputs.data', null], // a name on an array
    ['parameters[0]', null], // an index on an object
    ['$.parameters.constructor', null], // own properties only
    ['$.__proto__', null],
    ['id', 'r1'],
  ];
  for (const [path, expected] of cases) {
    assert.equal(callerKey(source(path), undefined, v2Body), expected, path);
  }
  assert.equal(callerKey(source('$[1]'), undefined, ['a', 'b']), 'b');
  assert.equal(callerKey(source('id'), undefined, { id: '' }), null);
  assert.equal(callerKey(source('id'), undefined, { id: Number.NaN }), null);
  assert.equal(callerKey(source('id'), undefined, null), null);
  assert.equal(callerKey(source('user-id'), undefined, { 'user-id': 'x' }), 'x');
});

test('bad key paths are values naming the problem and where', () => {
  const problem = (path: string): string => {
    const result = compileCallerKey(path);
    assert.equal(result.ok, false, path);
    return result.ok ? '' : result.problem;
  };
  assert.equal(problem(''), 'the key path is empty');
  assert.equal(problem('$'), "the key path '$' names no field");
  assert.equal(problem('a.'), "key path 'a.' ends with '.'");
  assert.equal(
    problem('a..b'),
    "expected a name (letters, digits, '_' or '-') at character 3 of key path 'a..b', got '.'",
  );
  assert.equal(problem('$a'), "expected '.' or '[' at character 2 of key path '$a', got 'a'");
  assert.equal(problem('a b'), "expected '.' or '[' at character 2 of key path 'a b', got ' '");
  for (const bad of ['a[x]', 'a[01]', 'a[-1]', 'a[1', 'a[]', 'a[99999999999]']) {
    assert.match(problem(bad), /^an index must be \[digits\] with a whole number at character 2/);
  }
});

test('a body key is trimmed as the header is: one user, whichever way it is named', () => {
  const s = source('$.parameters.user_id');
  const body = { parameters: { user_id: ' alice ' } };
  assert.equal(callerKey(s, undefined, body), 'alice');
  assert.equal(callerKey(s, undefined, body), callerKey(s, ' alice ', {}));
  assert.equal(callerKey(s, undefined, { parameters: { user_id: '   ' } }), null);
});
