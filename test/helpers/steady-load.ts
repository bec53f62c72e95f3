// A steady closed-loop load on one gateway endpoint for traffic-switch tests: `clients`
// concurrent loops, each sending the next request as soon as its last one is answered (no
// client retries), every answer filed under the version that answered (`kiln-model-version`)
// and checked by the caller's `check` (reference outputs). A failed request is anything but a
// 200 that passes the check: another status, a connection error, an answer without the
// version header, or wrong outputs; `failures` lists them with what was sent.
//
// Tests wait on answers, never on time: `waitForAnswers` resolves once a version has answered
// N more requests, so a switch is observed by its effect however slow the machine is.

import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { servedBy, type ServedBy } from './model-version.ts';

export interface LoadRequest {
  readonly body: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Passed back to `check` and `expectFailure` (e.g. the fixture row sent). */
  readonly tag: number;
}

export interface LoadAnswer extends ServedBy {
  readonly status: number;
  readonly body: unknown;
  readonly tag: number;
}

export interface SteadyLoadOptions {
  /** The full infer URL (`{gateway}/v2/models/{endpoint}/infer`). */
  readonly url: string;
  readonly clients: number;
  /** The i-th request (0, 1, 2, … across all clients). */
  readonly next: (i: number) => LoadRequest;
  /** A problem with a 200 answer (wrong outputs), or null. */
  readonly check?: (answer: LoadAnswer) => string | null;
  /**
   * Answers that are expected to fail and are not counted as failures (a canary that fails
   * on one slice by design); they are counted in `expectedFailures`.
   */
  readonly expectFailure?: (answer: LoadAnswer) => boolean;
  /**
   * At most this many requests a second in all (each client waits for its next slot after an
   * answer); absent: as fast as answers come. Keeps a shared test machine usable: the tiny
   * fixture models answer thousands a second, and a switch needs only a steady stream.
   */
  readonly maxRatePerSecond?: number;
}

export interface LoadSummary {
  readonly sent: number;
  readonly answered: number;
  /** Answers by `kiln-model-version` ('?' when absent). */
  readonly byVersion: ReadonlyMap<string, number>;
  readonly failures: readonly string[];
  readonly expectedFailures: number;
}

export class SteadyLoad {
  readonly #options: SteadyLoadOptions;
  readonly #agent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
  readonly #byVersion = new Map<string, number>();
  readonly #failures: string[] = [];
  #expectedFailures = 0;
  #sent = 0;
  #answered = 0;
  #stopped = false;
  #loops: Promise<void>[] = [];
  /** Called after every answer (waiters re-check). */
  #listeners = new Set<() => void>();

  constructor(options: SteadyLoadOptions) {
    this.#options = options;
  }

  start(): this {
    this.#loops = Array.from({ length: this.#options.clients }, () => this.#loop());
    return this;
  }

  /** Stops sending, waits for the requests in flight, and returns the totals. */
  async stop(): Promise<LoadSummary> {
    this.#stopped = true;
    await Promise.all(this.#loops);
    await this.#agent.close();
    return this.summary();
  }

  summary(): LoadSummary {
    return {
      sent: this.#sent,
      answered: this.#answered,
      byVersion: new Map(this.#byVersion),
      failures: [...this.#failures],
      expectedFailures: this.#expectedFailures,
    };
  }

  /** Answers so far from `version` (a number, or '?' for answers without the header). */
  answeredBy(version: number | string): number {
    return this.#byVersion.get(String(version)) ?? 0;
  }

  get failures(): readonly string[] {
    return this.#failures;
  }

  /**
   * Resolves once `version` has answered `count` more requests than when called; fails the
   * test naming the version after `timeoutMs` (generous: the machine may be loaded).
   */
  async waitForAnswers(version: number, count = 20, timeoutMs = 120_000): Promise<void> {
    const target = this.answeredBy(version) + count;
    await this.waitFor(
      () => this.answeredBy(version) >= target,
      `${count} more answers from version ${version}`,
      timeoutMs,
    );
  }

  /**
   * Resolves once `count` answers in a row came from `version` (a switch fully applied at the
   * gateway); an answer from another version starts the run again.
   */
  async waitForOnly(version: number, count = 20, timeoutMs = 120_000): Promise<void> {
    let run = 0;
    let last = this.#answered;
    const snapshot = new Map(this.#byVersion);
    await this.waitFor(
      () => {
        // Any answer since the last look from another version restarts the run.
        const others = [...this.#byVersion].some(
          ([v, n]) => v !== String(version) && n !== (snapshot.get(v) ?? 0),
        );
        for (const [v, n] of this.#byVersion) snapshot.set(v, n);
        run = others ? 0 : run + (this.#answered - last);
        last = this.#answered;
        return run >= count;
      },
      `${count} answers in a row from version ${version}`,
      timeoutMs,
    );
  }

  /** Resolves when `check` holds after some answer; fails naming `what` after `timeoutMs`. */
  waitFor(check: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const listener = (): void => {
        if (!check()) return;
        clearTimeout(timer);
        this.#listeners.delete(listener);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#listeners.delete(listener);
        reject(
          new assert.AssertionError({
            message:
              `timed out waiting for ${what} (answers so far: ${JSON.stringify(Object.fromEntries(this.#byVersion))}, ` +
              `${this.#failures.length} failed${this.#failures[0] === undefined ? '' : `, first: ${this.#failures[0]}`})`,
          }),
        );
      }, timeoutMs);
      this.#listeners.add(listener);
    });
  }

  async #loop(): Promise<void> {
    const rate = this.#options.maxRatePerSecond;
    const gapMs = rate === undefined ? 0 : (1000 * this.#options.clients) / rate;
    let nextAt = performance.now();
    while (!this.#stopped) {
      if (gapMs > 0) {
        // Pacing, not waiting for a state: the next request leaves at its slot.
        const waitMs = nextAt - performance.now();
        if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
        nextAt = Math.max(nextAt + gapMs, performance.now() - gapMs);
        if (this.#stopped) break;
      }
      const i = this.#sent++;
      const next = this.#options.next(i);
      let answer: LoadAnswer | undefined;
      try {
        const response = await request(this.#options.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...next.headers },
          body: next.body,
          dispatcher: this.#agent,
        });
        const text = await response.body.text();
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // keep the text: it goes into the failure's message
        }
        answer = {
          status: response.statusCode,
          body,
          tag: next.tag,
          ...servedBy(response.headers),
        };
      } catch (error) {
        this.#failures.push(`request ${i} (tag ${next.tag}): ${String(error)}`);
      }
      if (answer !== undefined) this.#file(i, answer);
      for (const listener of [...this.#listeners]) listener();
    }
  }

  #file(i: number, answer: LoadAnswer): void {
    this.#answered++;
    const key = answer.version === null ? '?' : String(answer.version);
    this.#byVersion.set(key, (this.#byVersion.get(key) ?? 0) + 1);
    if (this.#options.expectFailure?.(answer) === true) {
      this.#expectedFailures++;
      return;
    }
    const problem =
      answer.status !== 200
        ? `status ${answer.status}`
        : answer.version === null
          ? 'no kiln-model-version header'
          : (this.#options.check?.(answer) ?? null);
    if (problem !== null) {
      const body = JSON.stringify(answer.body).slice(0, 300);
      this.#failures.push(
        `request ${i} (tag ${answer.tag}, version ${key}, model ${answer.model ?? '?'}): ${problem}: ${body}`,
      );
    }
  }
}
