// module-entry.ts: a compiled module starts compiled siblings with no loader; a source module
// starts sources through tsx, resolved from the project (not from the working directory).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { moduleEntry, threadStart } from '../../src/core/module-entry.ts';

void test('from a compiled module: the .js sibling, no loader, a plain thread', () => {
  const entry = moduleEntry('file:///opt/kiln/dist/control/gateway-process.js', '../gateway/main');
  assert.equal(entry.path, '/opt/kiln/dist/gateway/main.js');
  assert.equal(entry.url.href, 'file:///opt/kiln/dist/gateway/main.js');
  assert.equal(entry.compiled, true);
  assert.deepEqual(entry.execArgv, []);
  assert.deepEqual(threadStart(entry), { script: entry.url, eval: false });
});

void test('from a source module: the .ts sibling, tsx by absolute URL, a thread that registers it', () => {
  const entry = moduleEntry('file:///w/kiln/src/llm/serving/engine-host.ts', './engine-thread');
  assert.equal(entry.path, '/w/kiln/src/llm/serving/engine-thread.ts');
  assert.equal(entry.compiled, false);
  assert.equal(entry.execArgv[0], '--import');
  assert.match(entry.execArgv[1] ?? '', /^file:\/\/\/.*\/node_modules\/tsx\/.*\.mjs$/);
  const thread = threadStart(entry);
  assert.equal(thread.eval, true);
  assert.equal(typeof thread.script, 'string');
  assert.ok(String(thread.script).includes('tsx.register()'));
  assert.ok(String(thread.script).includes(JSON.stringify(entry.url.href)));
});
