import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LlmReplicaLoad, parseLlmLoadReport } from '../../src/gateway/llm-replica-load.ts';
import { PrefixAffinity } from '../../src/gateway/prefix-affinity.ts';
import { prefixChars, promptPrefix } from '../../src/gateway/prompt-prefix.ts';

test('the affinity map keeps the most recently used prefixes up to its capacity', () => {
  const affinity = new PrefixAffinity(2);
  affinity.set('p1', 'a');
  affinity.set('p2', 'b');
  assert.equal(affinity.get('p1'), 'a'); // p1 now the most recent
  affinity.set('p3', 'c'); // p2 goes
  assert.equal(affinity.get('p2'), undefined);
  assert.equal(affinity.get('p1'), 'a');
  assert.equal(affinity.get('p3'), 'c');
  affinity.set('p1', 'b'); // the last replica to serve a prefix is remembered
  assert.equal(affinity.get('p1'), 'b');
  assert.equal(affinity.size, 2);
});

test("a completion's prefix is its prompt's first block", () => {
  const long = 'S'.repeat(prefixChars);
  assert.equal(promptPrefix('completions', { prompt: `${long} tail one` }), long);
  assert.equal(
    promptPrefix('completions', { prompt: `${long} tail one` }),
    promptPrefix('completions', { prompt: `${long} another tail` }),
  );
  assert.equal(promptPrefix('completions', { prompt: 'short' }), 'short');
  assert.equal(promptPrefix('completions', { prompt: ['first', 'second'] }), 'first');
  const ids = Array.from({ length: 40 }, (_, i) => i);
  assert.equal(
    promptPrefix('completions', { prompt: ids }),
    '#0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15',
  );
  assert.equal(
    promptPrefix('completions', { prompt: [ids] }),
    promptPrefix('completions', { prompt: ids }),
  );
  assert.equal(promptPrefix('completions', { prompt: '' }), null);
  assert.equal(promptPrefix('completions', { prompt: 42 }), null);
  assert.equal(promptPrefix('completions', {}), null);
});

test("a chat's prefix is its first message (the system prompt), role and text", () => {
  const system = { role: 'system', content: 'You are a careful assistant. '.repeat(4) };
  const a = promptPrefix('chat', { messages: [system, { role: 'user', content: 'hi' }] });
  const b = promptPrefix('chat', { messages: [system, { role: 'user', content: 'bye' }] });
  assert.equal(a, b);
  assert.equal(a?.length, prefixChars);
  assert.ok(a?.startsWith('system:You are'));
  assert.equal(
    promptPrefix('chat', {
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
    }),
    'user:hello',
  );
  assert.equal(promptPrefix('chat', { messages: [] }), null);
  assert.equal(promptPrefix('chat', { messages: 'nope' }), null);
  assert.equal(promptPrefix('chat', { messages: [null] }), null);
});

test('load reports are read leniently and refused when they lack the queue counts', () => {
  assert.deepEqual(
    parseLlmLoadReport(
      '{"running":2,"waiting":1,"paused":0,"kvBlocksUsed":5,"kvBlocksTotal":10,"kvUtilization":0.5,"inflight":3}',
    ),
    {
      running: 2,
      waiting: 1,
      paused: 0,
      kvBlocksUsed: 5,
      kvBlocksTotal: 10,
      kvUtilization: 0.5,
      inflight: 3,
    },
  );
  assert.deepEqual(
    parseLlmLoadReport('{"running":1,"waiting":0,"kvBlocksUsed":1,"kvBlocksTotal":4}'),
    {
      running: 1,
      waiting: 0,
      paused: 0,
      kvBlocksUsed: 1,
      kvBlocksTotal: 4,
      kvUtilization: 0.25,
      inflight: 1,
    },
  );
  assert.equal(parseLlmLoadReport('{"waiting":1}'), null);
  assert.equal(parseLlmLoadReport('{"running":-1,"waiting":0}'), null);
  assert.equal(parseLlmLoadReport('not json'), null);
  assert.equal(parseLlmLoadReport('[1]'), null);
});

test('a report counts the requests sent after it, and an older one never replaces a newer', () => {
  const load = new LlmReplicaLoad();
  const idle = {
    running: 0,
    waiting: 0,
    paused: 0,
    kvBlocksUsed: 0,
    kvBlocksTotal: 1,
    kvUtilization: 0,
    inflight: 0,
  };
  const busy = { ...idle, running: 3 };
  const first = load.noteSent();
  load.noteSent();
  load.noteSent();
  // The answer to request 1 carries a report taken when it arrived: 2 and 3 are not in it.
  load.applyReport(busy, first, 100);
  assert.equal(load.sentSinceReport, 2);
  // A poll that left before request 1 was sent comes back late: ignored.
  load.applyReport(idle, 0, 120);
  assert.equal(load.report, busy);
  // A poll that left after all three includes them.
  load.applyReport(idle, 3, 130);
  assert.equal(load.report, idle);
  assert.equal(load.sentSinceReport, 0);
  assert.equal(load.reportAtMs, 130);
});
