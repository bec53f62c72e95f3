// The `kiln-usage` header/trailer an LLM worker sends the gateway (issue 15 E, cost).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatUsageHeader, parseUsageHeader } from '../../../src/protocol/openai/usage-header.ts';

test('kiln-usage round-trips; anything else is not counted', () => {
  const counts = { promptTokens: 12, completionTokens: 0 };
  assert.equal(formatUsageHeader(counts), 'prompt=12;completion=0');
  assert.deepEqual(parseUsageHeader(formatUsageHeader(counts)), counts);
  for (const bad of [
    '',
    'prompt=1',
    'prompt=-1;completion=2',
    'prompt=1.5;completion=2',
    'completion=2;prompt=1',
    'prompt=1;completion=2;x=3',
  ])
    assert.equal(parseUsageHeader(bad), null, bad);
});
