import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  encodeFrame,
  FrameReader,
  frameKind,
  type Frame,
} from '../../../src/protocol/channel/frames.ts';

interface Seen {
  kind: number;
  id: number;
  meta: string;
  body: string;
}

function reader(max = 1 << 20): { reader: FrameReader; seen: Seen[] } {
  const seen: Seen[] = [];
  const r = new FrameReader(max, (frame: Frame) =>
    seen.push({ kind: frame.kind, id: frame.id, meta: frame.meta, body: frame.body.toString() }),
  );
  return { reader: r, seen };
}

const frames: Seen[] = [
  { kind: frameKind.infer, id: 1, meta: '{"t":"100","p":"high"}', body: '{"inputs":[]}' },
  { kind: frameKind.cancel, id: 2, meta: '', body: '' },
  { kind: frameKind.reply, id: 0xffffffff, meta: '{"s":200}', body: 'é→😀 multi-byte' },
  { kind: frameKind.infer, id: 7, meta: '', body: 'x'.repeat(5000) },
];

function encodeAll(list: readonly Seen[]): Buffer {
  return Buffer.concat(list.map((f) => encodeFrame(f.kind as 1, f.id, f.meta, f.body)));
}

test('frames round-trip, several in one chunk', () => {
  const { reader: r, seen } = reader();
  assert.equal(r.push(encodeAll(frames)), null);
  assert.deepEqual(seen, frames);
  assert.equal(r.buffered, 0);
});

test('a stream cut at every byte boundary gives the same frames', () => {
  const bytes = encodeAll(frames);
  for (let cut = 1; cut < bytes.length; cut += 7) {
    const { reader: r, seen } = reader();
    for (let at = 0; at < bytes.length; at += cut) {
      assert.equal(r.push(bytes.subarray(at, Math.min(bytes.length, at + cut))), null);
    }
    assert.deepEqual(seen, frames, `chunks of ${cut} bytes`);
    assert.equal(r.buffered, 0);
  }
});

test('a buffer body and a string body encode alike', () => {
  assert.deepEqual(
    encodeFrame(frameKind.reply, 3, '{"s":200}', Buffer.from('{"a":1}')),
    encodeFrame(frameKind.reply, 3, '{"s":200}', '{"a":1}'),
  );
});

test('a frame over the limit is a protocol error, before its bytes arrive', () => {
  const { reader: r, seen } = reader(100);
  const big = encodeFrame(frameKind.infer, 1, '', 'y'.repeat(200));
  assert.match(r.push(big.subarray(0, 8)) ?? '', /over the limit of 100/);
  assert.equal(seen.length, 0);
});

test('a header that lies is a protocol error', () => {
  const short = Buffer.alloc(8);
  short.writeUInt32BE(4, 0); // shorter than kind + id + metaLength
  assert.match(reader().reader.push(short) ?? '', /shorter than its header/);

  const frame = encodeFrame(frameKind.infer, 1, '{}', 'body');
  frame.writeUInt32BE(1000, 9); // meta longer than the frame
  assert.match(reader().reader.push(frame) ?? '', /runs past the frame's end/);
});
