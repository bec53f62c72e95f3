// The gateway's channel writes (issue 16, "a short tail at saturation"): frames sent from
// different callbacks of one event-loop pass leave in one write, so at saturation the
// channel costs one write and one worker wake-up per pass, not per request. Flushed after
// each callback (nextTick) as before, two requests read in one pass took two writes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { ChannelClient, type ChannelRequester } from '../../src/gateway/channel-client.ts';
import {
  channelPath,
  channelProtocol,
  encodeFrame,
  FrameReader,
  frameKind,
} from '../../src/protocol/channel/frames.ts';

class Answer implements ChannelRequester {
  status = 0;
  private resolve: (() => void) | null = null;
  readonly settled = new Promise<void>((resolve) => (this.resolve = resolve));
  onChannelReply(status: number): void {
    this.status = status;
    this.resolve?.();
  }
  onChannelError(): void {
    this.resolve?.();
  }
}

const body = Buffer.from('{"inputs":[]}');

test('frames sent from two callbacks of one event-loop pass leave in one write', async (t) => {
  // A worker's end that answers every infer frame with a 200.
  const server = createServer();
  server.on('upgrade', (_request, socket: Socket) => {
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: ${channelProtocol}\r\n\r\n`,
    );
    const reader = new FrameReader(1 << 20, (frame) =>
      socket.write(encodeFrame(frameKind.reply, frame.id, '{"s":200}', '{}')),
    );
    socket.on('data', (chunk: Buffer) => reader.push(chunk));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client = new ChannelClient(`http://127.0.0.1:${port}`, channelPath, 30_000, () =>
    performance.now(),
  );
  t.after(() => {
    client.destroy();
    server.closeAllConnections();
    server.close();
  });
  // Open the channel first: frames held while connecting go out together anyway.
  const first = new Answer();
  client.send(first, body, undefined, undefined);
  await first.settled;
  assert.equal(first.status, 200);

  // Count the writes that reach the socket's stream implementation from now on.
  const socket = (client as unknown as { socket: Socket }).socket;
  let writes = 0;
  const stream = socket as unknown as {
    _write: (...args: unknown[]) => void;
    _writev: (...args: unknown[]) => void;
  };
  const write = stream._write.bind(socket);
  const writev = stream._writev.bind(socket);
  stream._write = (...args) => {
    writes += 1;
    write(...args);
  };
  stream._writev = (...args) => {
    writes += 1;
    writev(...args);
  };
  // Two timers due at once run in one timers phase, each its own callback, as two HTTP
  // requests read in one poll phase are.
  const answers = [new Answer(), new Answer()];
  for (const answer of answers)
    setTimeout(() => client.send(answer, body, undefined, undefined), 0);
  await Promise.all(answers.map((a) => a.settled));
  for (const answer of answers) assert.equal(answer.status, 200);
  assert.equal(writes, 1, 'both frames in one write');
});
