// A stream's writer with backpressure. Events are written as they arrive; when the bytes
// waiting in the response (Node's buffer and the socket's) pass `limitBytes` and the socket
// has asked to be drained, the stream's sequences are paused in the engine (they keep their
// blocks, within the engine's budget) and resumed on 'drain'. A stream that stays paused
// `slowReaderTimeoutMs` is ended: its sequences cancelled, its connection closed, counted.
// Nothing here blocks other streams: each response has its own writer and its own pause.
//
// The pause waits for 'drain', which Node emits only after a write returned false — so the
// effective limit is the larger of limitBytes and the socket's high-water mark (16 KiB).

import type { ServerResponse } from 'node:http';

export interface SseWriterHooks {
  pause(): void;
  resume(): void;
  /** The reader stayed paused past the timeout: cancel its sequences (the writer closes). */
  timedOut(): void;
}

export class SseWriter {
  readonly #response: ServerResponse;
  readonly #limitBytes: number;
  readonly #timeoutMs: number;
  readonly #hooks: SseWriterHooks;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  /** What was written before `open` (the headers wait until the request is accepted). */
  #early: string[] | null = [];
  /** The end's text when end() came before `open` (sent, and the response ended, by open). */
  #earlyEnd: string | null = null;

  constructor(
    response: ServerResponse,
    limitBytes: number,
    timeoutMs: number,
    hooks: SseWriterHooks,
  ) {
    this.#response = response;
    this.#limitBytes = limitBytes;
    this.#timeoutMs = timeoutMs;
    this.#hooks = hooks;
    // Gone while paused: undo the pause (the owner cancels what is left on the same event).
    response.once('close', () => {
      if (this.#timer === null) return;
      this.#stopTimer();
      this.#hooks.resume();
    });
  }

  get paused(): boolean {
    return this.#timer !== null;
  }

  /** Sends the headers and whatever was written before them. */
  open(status: number, headers: Record<string, string>): void {
    const early = this.#early ?? [];
    this.#early = null;
    this.#response.writeHead(status, headers);
    this.#response.flushHeaders();
    for (const text of early) this.write(text);
    if (this.#earlyEnd !== null) this.end(this.#earlyEnd);
  }

  write(text: string): void {
    if (this.#early !== null) {
      if (this.#earlyEnd === null) this.#early.push(text);
      return;
    }
    if (this.#closed || this.#response.destroyed) return;
    const accepted = this.#response.write(text);
    if (!accepted && this.#timer === null && this.#response.writableLength > this.#limitBytes)
      this.#pause();
  }

  end(text: string): void {
    if (this.#early !== null) {
      this.#earlyEnd ??= text;
      return;
    }
    if (this.#closed) return;
    this.#closed = true;
    // Ending while paused (the engine had finished before the pause reached it): undo the
    // pause, or its owner's bookkeeping (the paused-streams gauge) never comes back down.
    if (this.#timer !== null) {
      this.#stopTimer();
      this.#response.off('drain', this.#onDrain);
      this.#hooks.resume();
    }
    if (!this.#response.destroyed) this.#response.end(text);
  }

  #pause(): void {
    this.#hooks.pause();
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#closed = true;
      this.#response.off('drain', this.#onDrain);
      this.#hooks.timedOut();
      this.#response.destroy();
    }, this.#timeoutMs);
    this.#response.once('drain', this.#onDrain);
  }

  readonly #onDrain = (): void => {
    if (this.#timer === null) return;
    this.#stopTimer();
    this.#hooks.resume();
  };

  #stopTimer(): void {
    if (this.#timer === null) return;
    clearTimeout(this.#timer);
    this.#timer = null;
  }
}
