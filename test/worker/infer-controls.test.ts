// Deadline and priority from headers, the request's `priority` parameter and the default.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readInferControls } from '../../src/worker/infer-controls.ts';

const request = { inputs: [], id: 'r1' };

void test('defaults: normal priority, the endpoint timeout (or none)', () => {
  assert.deepEqual(readInferControls({}, request, null), {
    ok: true,
    priority: 'normal',
    timeoutMs: null,
    request,
  });
  const controls = readInferControls({}, request, 250);
  assert.ok(controls.ok && controls.timeoutMs === 250);
});

void test('kiln-timeout-ms overrides the default; it must be whole milliseconds', () => {
  const controls = readInferControls({ 'kiln-timeout-ms': '0' }, request, 250);
  assert.ok(controls.ok && controls.timeoutMs === 0);
  for (const bad of ['-1', '1.5', 'soon', '', '99999999999']) {
    const refused = readInferControls({ 'kiln-timeout-ms': bad }, request, null);
    assert.equal(refused.ok, false, bad);
  }
});

void test('priority from the header, else the parameter, which is taken out of the request', () => {
  const withParameter = { ...request, parameters: { priority: 'high', output_margin: true } };
  const fromParameter = readInferControls({}, withParameter, null);
  assert.ok(fromParameter.ok);
  assert.equal(fromParameter.priority, 'high');
  assert.deepEqual(fromParameter.request, { ...request, parameters: { output_margin: true } });
  const fromHeader = readInferControls({ 'kiln-priority': 'normal' }, withParameter, null);
  assert.ok(fromHeader.ok && fromHeader.priority === 'normal');
  const only = readInferControls({}, { ...request, parameters: { priority: 'normal' } }, null);
  assert.ok(only.ok);
  assert.deepEqual(only.request, request);
  assert.equal(readInferControls({ 'kiln-priority': 'urgent' }, request, null).ok, false);
  assert.equal(readInferControls({}, { ...request, parameters: { priority: 3 } }, null).ok, false);
});
