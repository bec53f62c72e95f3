import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StopStringMatcher } from '../../../src/llm/sampling/stop-strings.ts';

function run(stops: string[], pieces: string[]): { sent: string; stopped: boolean } {
  const matcher = new StopStringMatcher(stops);
  let sent = '';
  for (const piece of pieces) {
    const result = matcher.push(piece);
    sent += result.text;
    if (result.stopped) return { sent, stopped: true };
  }
  return { sent: sent + matcher.flush(), stopped: false };
}

test('a stop string split across pieces is found; nothing of it (or after it) is sent', () => {
  assert.deepEqual(run(['world!'], ['Hello wor', 'ld! more']), { sent: 'Hello ', stopped: true });
  assert.deepEqual(run(['\n\nUser:'], ['ok', '\n', '\nUs', 'er:', 'x']), {
    sent: 'ok',
    stopped: true,
  });
});

test('held-back text that turns out not to be a stop string is sent, in order', () => {
  const matcher = new StopStringMatcher(['STOP']);
  assert.deepEqual(matcher.push('aST'), { text: 'a', stopped: false });
  assert.deepEqual(matcher.push('x'), { text: 'STx', stopped: false });
  assert.deepEqual(matcher.push('S'), { text: '', stopped: false });
  assert.equal(matcher.flush(), 'S');
});

test('of several stop strings the earliest match wins; multi-byte text is fine', () => {
  assert.deepEqual(run(['bb', 'ab'], ['xa', 'bb']), { sent: 'x', stopped: true });
  assert.deepEqual(run(['日本'], ['こんにち', 'は日', '本語']), {
    sent: 'こんにちは',
    stopped: true,
  });
  assert.deepEqual(run(['🙂'], ['no stop here']), { sent: 'no stop here', stopped: false });
  assert.throws(() => new StopStringMatcher(['']), /cannot be empty/);
});
