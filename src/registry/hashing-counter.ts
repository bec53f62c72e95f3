// A pass-through stream that hashes (sha256) and counts the bytes flowing through it, and
// fails the stream once past a byte limit: every artifact store ingests and reads through one,
// so what is stored or loaded is checked against its digest as it moves, never afterwards.

import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { kilnError } from '../core/errors.ts';

export class HashingCounter extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      done(
        kilnError('KILN_PAYLOAD_TOO_LARGE', {
          size: `more than ${this.maxBytes}`,
          limit: this.maxBytes,
        }),
      );
      return;
    }
    this.hash.update(chunk);
    done(null, chunk);
  }
}
