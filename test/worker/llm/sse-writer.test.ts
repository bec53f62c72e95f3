// The stream writer's backpressure policy on a fake response and mock timers: nothing leaves
// before the headers, a full socket pauses, 'drain' resumes, a reader paused past the timeout
// is ended (counted once, the response destroyed), and a client gone while paused unpauses.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { SseWriter } from '../../../src/worker/llm/sse-writer.ts';

class FakeResponse extends EventEmitter {
  written: string[] = [];
  writableLength = 0;
  /** What write() answers (false: the socket asks to be drained). */
  accepts = true;
  destroyed = false;
  ended = false;
  status = 0;
  writeHead(status: number): void {
    this.status = status;
  }
  flushHeaders(): void {}
  write(text: string): boolean {
    this.written.push(text);
    return this.accepts;
  }
  end(text: string): void {
    this.written.push(text);
    this.ended = true;
  }
  destroy(): void {
    this.destroyed = true;
    this.emit('close');
  }
}

function writer(response: FakeResponse) {
  const calls: string[] = [];
  const sse = new SseWriter(response as unknown as ServerResponse, 1000, 5000, {
    pause: () => calls.push('pause'),
    resume: () => calls.push('resume'),
    timedOut: () => calls.push('timedOut'),
  });
  return { sse, calls };
}

test('nothing leaves before the headers; then in order', () => {
  const response = new FakeResponse();
  const { sse } = writer(response);
  sse.write('a');
  sse.write('b');
  assert.deepEqual(response.written, []);
  sse.open(200, {});
  sse.write('c');
  sse.end('d');
  assert.deepEqual(response.written, ['a', 'b', 'c', 'd']);
  assert.equal(response.status, 200);
  assert.ok(response.ended);
});

test('past the limit with the socket full: paused until drain, then resumed', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const response = new FakeResponse();
  const { sse, calls } = writer(response);
  sse.open(200, {});
  response.accepts = false;
  response.writableLength = 900; // under the limit: the socket's own buffer, no pause
  sse.write('x');
  assert.deepEqual(calls, []);
  response.writableLength = 1200;
  sse.write('y');
  sse.write('z'); // already paused: once
  assert.deepEqual(calls, ['pause']);
  assert.ok(sse.paused);
  t.mock.timers.tick(4999);
  response.emit('drain');
  assert.deepEqual(calls, ['pause', 'resume']);
  assert.equal(sse.paused, false);
  t.mock.timers.tick(10_000); // the timer was cleared
  assert.deepEqual(calls, ['pause', 'resume']);
  assert.equal(response.destroyed, false);
});

test('paused past the timeout: ended once, the response destroyed, later writes dropped', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const response = new FakeResponse();
  const { sse, calls } = writer(response);
  sse.open(200, {});
  response.accepts = false;
  response.writableLength = 5000;
  sse.write('x');
  t.mock.timers.tick(5000);
  assert.deepEqual(calls, ['pause', 'timedOut']);
  assert.ok(response.destroyed);
  const before = response.written.length;
  sse.write('late');
  sse.end('data: [DONE]\n\n');
  assert.equal(response.written.length, before);
  response.emit('drain');
  assert.deepEqual(calls, ['pause', 'timedOut']);
});

test('a client gone while paused: unpaused (its owner cancels), no timeout later', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const response = new FakeResponse();
  const { sse, calls } = writer(response);
  sse.open(200, {});
  response.accepts = false;
  response.writableLength = 5000;
  sse.write('x');
  response.emit('close');
  t.mock.timers.tick(10_000);
  assert.deepEqual(calls, ['pause', 'resume']);
});
