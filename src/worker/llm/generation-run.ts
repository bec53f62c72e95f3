// The engine requests of one OpenAI request (its n × prompts choices), submitted together and
// ended together: a refusal of any one withdraws the others, and a cancel (the client went
// away, a slow reader timed out, one choice failed) reaches every choice still live at once.
// Pause and resume likewise apply to the whole answer: one HTTP response carries them all.
// It also measures, per choice, time to first token and the gaps between tokens.

import type { EngineEvent, LlmEngine, SubmitRefusal } from '../../llm/serving/engine-api.ts';
import type { LlmMetrics } from './llm-metrics.ts';
import type { ChoicePlan } from './prepare-choices.ts';

export type ChoiceEventSink = (choice: ChoicePlan, events: readonly EngineEvent[]) => void;

interface LiveChoice {
  readonly plan: ChoicePlan;
  /** hrtime (ns) of the last token, or null before the first. */
  lastTokenNs: bigint | null;
}

export class GenerationRun {
  readonly #engine: LlmEngine;
  readonly #metrics: LlmMetrics;
  readonly #arrivedNs: bigint;
  readonly #live = new Map<string, LiveChoice>();
  #paused = false;

  constructor(engine: LlmEngine, metrics: LlmMetrics, arrivedNs: bigint) {
    this.#engine = engine;
    this.#metrics = metrics;
    this.#arrivedNs = arrivedNs;
  }

  /** Choices not finished yet. */
  get liveCount(): number {
    return this.#live.size;
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** Submits every choice, or none: a refusal withdraws those already queued. */
  submit(choices: readonly ChoicePlan[], sink: ChoiceEventSink): SubmitRefusal | null {
    for (const plan of choices) {
      const live: LiveChoice = { plan, lastTokenNs: null };
      const id = plan.request.requestId;
      this.#live.set(id, live);
      const result = this.#engine.submit(plan.request, (events) =>
        this.#deliver(live, events, sink),
      );
      if (!result.ok) {
        this.#live.delete(id);
        this.cancel();
        return result;
      }
    }
    return null;
  }

  #deliver(live: LiveChoice, events: readonly EngineEvent[], sink: ChoiceEventSink): void {
    const id = live.plan.request.requestId;
    if (!this.#live.has(id)) return; // cancelled: nothing more is wanted
    for (const event of events) {
      if (event.kind === 'token') {
        const now = process.hrtime.bigint();
        if (live.lastTokenNs === null)
          this.#metrics.ttft.observe(Number(now - this.#arrivedNs) / 1e9);
        else this.#metrics.itl.observe(Number(now - live.lastTokenNs) / 1e9);
        live.lastTokenNs = now;
      } else {
        this.#live.delete(id);
        this.#metrics.finished.inc({
          finish_reason:
            event.kind === 'error' ? 'error' : event.reason === 'stop' ? 'stop' : 'length',
        });
      }
    }
    sink(live.plan, events);
  }

  /** Drops every choice still live (blocks freed at once); no events follow. */
  cancel(): void {
    for (const id of [...this.#live.keys()]) {
      this.#live.delete(id);
      this.#engine.cancel(id);
    }
  }

  pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    for (const id of this.#live.keys()) this.#engine.pause(id);
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    for (const id of this.#live.keys()) this.#engine.resume(id);
  }
}
