// Stop strings matched across token boundaries. Generated text arrives in pieces (one per
// token, from the incremental detokenizer); a stop string may span several pieces, so text
// that could still be the start of one is held back until it either completes the stop
// string (generation ends; the stop string and what follows are never sent) or cannot.
//
//   push("Hello wor")  → "Hello wor"        stop: ["world!"]… held: "wor" (a prefix) → "Hello "
//   push("ld! more")   → stopped, "" (the held "wor" + "ld!" is the stop string)

export interface StopResult {
  /** Text safe to send now. */
  readonly text: string;
  /** A stop string was found: send `text`, then end. */
  readonly stopped: boolean;
}

export class StopStringMatcher {
  private held = '';
  private done = false;

  constructor(private readonly stops: readonly string[]) {
    if (stops.some((s) => s.length === 0)) throw new RangeError('a stop string cannot be empty');
  }

  push(piece: string): StopResult {
    if (this.done) return { text: '', stopped: true };
    const text = this.held + piece;
    let cut = -1;
    for (const stop of this.stops) {
      const at = text.indexOf(stop);
      if (at !== -1 && (cut === -1 || at < cut)) cut = at;
    }
    if (cut !== -1) {
      this.done = true;
      this.held = '';
      return { text: text.slice(0, cut), stopped: true };
    }
    // Hold back the longest tail that is a proper prefix of some stop string.
    let keep = 0;
    for (const stop of this.stops) {
      for (let n = Math.min(stop.length - 1, text.length); n > keep; n--) {
        if (text.endsWith(stop.slice(0, n))) {
          keep = n;
          break;
        }
      }
    }
    this.held = text.slice(text.length - keep);
    return { text: text.slice(0, text.length - keep), stopped: false };
  }

  /** The end of generation for another reason: what was held back is plain text after all. */
  flush(): string {
    const text = this.held;
    this.held = '';
    return this.done ? '' : text;
  }
}
