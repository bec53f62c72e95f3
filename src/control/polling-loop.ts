// The round loop of the control plane's replica pollers (the workers' load for the
// autoscaler, their drift sketches): rounds that never overlap, each started intervalMs after
// the last one began (at once when a round ran longer), a round asked for while one runs
// joined rather than doubled, and a close that aborts the round's requests and waits for it.
//
//   start ─▶ round ─▶ wait out the interval ─▶ round ─▶ …      once() joins the current round
//   close ─▶ no more rounds; `signal` aborts; resolves when the round in progress has ended

import type { Clock } from '../core/clock.ts';

export class PollingLoop {
  #timer: NodeJS.Timeout | null = null;
  #round: Promise<void> | null = null;
  #closed = false;
  readonly #stop = new AbortController();

  constructor(
    /** One round; a rejection reaches whoever called once(). */
    private readonly run: () => Promise<void>,
    private readonly intervalMs: number,
    private readonly clock: Clock,
  ) {}

  /** Aborted at close: the round's requests listen to it. */
  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  /** Closed: a round still running keeps nothing it found. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Runs a round every intervalMs until close(); rounds never overlap. */
  start(): void {
    if (this.#timer !== null || this.#closed) return;
    const next = (): void => {
      if (this.#closed) return;
      const began = this.clock.now();
      void this.once().finally(() => {
        if (this.#closed) return;
        const waitMs = Math.max(0, this.intervalMs - (this.clock.now() - began));
        this.#timer = setTimeout(next, waitMs);
        this.#timer.unref();
      });
    };
    next();
  }

  /** One round (a round in progress is joined, not doubled). */
  once(): Promise<void> {
    this.#round ??= this.run().finally(() => (this.#round = null));
    return this.#round;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#stop.abort();
    await this.#round;
  }
}

/** GETs `url` and parses its JSON body; null for a non-2xx answer (its body discarded). */
export async function fetchJson(url: string, signal: AbortSignal): Promise<unknown> {
  const response = await fetch(url, { signal });
  if (!response.ok) {
    await response.body?.cancel();
    return null;
  }
  return response.json();
}
