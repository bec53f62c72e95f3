// A sequence's generated text, token by token, exactly as engine/generation.ts makes it: the
// tokenizer's incremental decoder (never half a UTF-8 character), stop tokens (not part of
// the text), and stop strings matched across token boundaries on the decoded text. It lives
// with the sequence for its whole life, so a preempted sequence that recomputes keeps its
// place in the text.

import type { TextStream } from '../engine/generation.ts';
import { StopStringMatcher } from '../sampling/stop-strings.ts';

export type TokenVerdict =
  /** Keep going; `text` is what this token completes. */
  | { readonly kind: 'continue'; readonly text: string }
  /** A stop token or stop string ended it: `text` for the token, `tail` for the done event. */
  | { readonly kind: 'stop'; readonly text: string; readonly tail: string };

export class OutputText {
  private readonly stops: StopStringMatcher | null;
  private readonly stopTokens: ReadonlySet<number>;

  constructor(
    private readonly stream: TextStream | null,
    stopTokenIds: readonly number[],
    stopStrings: readonly string[],
  ) {
    this.stopTokens = new Set(stopTokenIds);
    this.stops = stopStrings.length > 0 ? new StopStringMatcher(stopStrings) : null;
  }

  /** Takes a sampled token: its text, and whether it ended the sequence. */
  push(token: number): TokenVerdict {
    if (this.stopTokens.has(token)) return { kind: 'stop', text: '', tail: this.finish().text };
    if (this.stream === null) return { kind: 'continue', text: '' };
    const piece = this.stream.push(token);
    if (this.stops === null) return { kind: 'continue', text: piece };
    const result = this.stops.push(piece);
    return result.stopped
      ? { kind: 'stop', text: result.text, tail: '' }
      : { kind: 'continue', text: result.text };
  }

  /**
   * What is still held back when the sequence ends for any other reason (max tokens, KV cache
   * full): the decoder's pending bytes, then a partial stop string. `stopped` when that tail
   * itself completes a stop string (the text then ends before it).
   */
  finish(): { text: string; stopped: boolean } {
    const rest = this.stream?.flush() ?? '';
    if (this.stops === null) return { text: rest, stopped: false };
    const pushed = this.stops.push(rest);
    return pushed.stopped
      ? { text: pushed.text, stopped: true }
      : { text: pushed.text + this.stops.flush(), stopped: false };
  }
}
