// A request's whole body, read for the worker's routes (v2 in worker-server.ts, OpenAI in
// llm/openai-routes.ts), refusing more than `limit` bytes. It answers nothing itself: each
// route refuses in its own protocol's shape. The problem is a string, not a wrapper object,
// so a body read on the infer path costs no allocation beyond the buffer.

import type { IncomingMessage } from 'node:http';

/** Why no body: over the limit, or the request stream failed (the client went away). */
export type BodyProblem = 'too_large' | 'unreadable';

export function readRequestBody(
  request: IncomingMessage,
  limit: number,
): Promise<Buffer | BodyProblem> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    request.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        done = true;
        resolve('too_large');
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => {
      if (done) return;
      done = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
    request.on('error', () => {
      if (done) return;
      done = true;
      resolve('unreadable');
    });
  });
}
