import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { errorRegistry, KilnError, type ErrorCode } from '../../src/core/errors.ts';

const docs = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
const documented = new Map<string, { status: number; retryable: boolean }>();
for (const match of docs.matchAll(/^\| `(KILN_[A-Z_]+)` \| (\d{3}) \| (yes|no) \|/gm)) {
  documented.set(match[1]!, { status: Number(match[2]), retryable: match[3] === 'yes' });
}

test('every registered error code is documented in docs/errors.md with its status, and vice versa', () => {
  const codes = Object.keys(errorRegistry) as ErrorCode[];
  assert.deepEqual([...documented.keys()].sort(), [...codes].sort());
  for (const code of codes) {
    assert.deepEqual(
      documented.get(code),
      { status: errorRegistry[code].status, retryable: errorRegistry[code].retryable },
      code,
    );
  }
});

test('statuses are 4xx/5xx and templates render their parameters', () => {
  for (const [code, spec] of Object.entries(errorRegistry)) {
    assert.ok(spec.status >= 400 && spec.status < 600, code);
  }
  const error = new KilnError('KILN_VERSION_NOT_FOUND', { model: 'fraud', version: 7 });
  assert.equal(error.message, 'model fraud has no version 7');
  assert.deepEqual(error.toJSON(), {
    error: {
      code: 'KILN_VERSION_NOT_FOUND',
      message: 'model fraud has no version 7',
      hint: 'list versions with `kiln models versions MODEL`',
    },
  });
});
