// Predictions of endpoints with quality settings (issue 15, D), on their way to the control
// plane, where outcomes reported later are joined to them (quality-service.ts).
//
// `offer` runs after the answer is written and only queues references (the answer's and the
// request's bytes, already held); `take` — once a second, from the reporter — reads each
// answer's prediction and the request's slice and hands one report of at most
// maxPredictionsPerReport. Bounded: beyond `capacity` queued, offers are dropped and counted;
// a report the control plane does not take is dropped (control-plane-reporter.ts), never
// retried, so a control plane that is away costs predictions, never memory or latency.
//
// The prediction of an answer: the configured output (else the first numeric one), row 0;
// a row of two values (a binary classifier's [P(0), P(1)]) gives the second, else the first.

import type { IncomingHttpHeaders } from 'node:http';
import { callerKey, type CallerKeySource } from '../traffic/caller-key.ts';
import { parseJsonLenient } from '../protocol/v2/lenient-json.ts';
import { maxSliceValueLength } from '../protocol/traffic/traffic-report.ts';
import { answerOutputs, type AnswerOutput } from './answer-outputs.ts';

export interface QualityItem {
  readonly endpoint: string;
  readonly requestId: string;
  readonly model: string;
  readonly version: number;
  /** Epoch ms the request arrived. */
  readonly atMs: number;
  /** The 200's v2 answer. */
  readonly answer: Buffer;
  /** The client's body (read for a slice path only). */
  readonly body: Buffer | null;
  readonly sliceHeader: IncomingHttpHeaders[string];
  readonly output: string | null;
  /** null: the endpoint has no slice key. */
  readonly sliceSource: CallerKeySource | null;
}

export interface PredictionReport {
  readonly gateway: string;
  readonly predictions: readonly {
    readonly endpoint: string;
    readonly requestId: string;
    readonly model: string;
    readonly version: number;
    readonly prediction: number;
    readonly slice: string | null;
    readonly atMs: number;
  }[];
}

export type QualityOutcome = 'queued' | 'dropped' | 'no-prediction';

/** As the control plane takes at most (quality-service.ts). */
export const maxPredictionsPerReport = 10_000;

export class QualityCollector {
  private items: QualityItem[] = [];

  constructor(
    private readonly capacity: number,
    private readonly count: (endpoint: string, outcome: QualityOutcome) => void,
  ) {}

  get queued(): number {
    return this.items.length;
  }

  offer(item: QualityItem): boolean {
    if (this.items.length >= this.capacity) {
      this.count(item.endpoint, 'dropped');
      return false;
    }
    this.items.push(item);
    this.count(item.endpoint, 'queued');
    return true;
  }

  /** The next report (null: nothing queued). */
  take(gateway: string): PredictionReport | null {
    if (this.items.length === 0) return null;
    const taken = this.items.splice(0, maxPredictionsPerReport);
    const predictions: PredictionReport['predictions'][number][] = [];
    for (const item of taken) {
      const outputs = answerOutputs(item.answer);
      const prediction = outputs === null ? null : predictionOf(outputs, item.output);
      if (prediction === null) {
        this.count(item.endpoint, 'no-prediction');
        continue;
      }
      predictions.push({
        endpoint: item.endpoint,
        requestId: item.requestId,
        model: item.model,
        version: item.version,
        prediction,
        slice: sliceOf(item),
        atMs: item.atMs,
      });
    }
    return predictions.length === 0 ? null : { gateway, predictions };
  }
}

/** The prediction of one answer (see the header); null when it has none. */
export function predictionOf(outputs: readonly AnswerOutput[], name: string | null): number | null {
  const output =
    name === null
      ? outputs.find((o) => o.data.length > 0 && typeof o.data[0] === 'number')
      : outputs.find((o) => o.name === name);
  if (output === undefined) return null;
  let columns = 1;
  for (let i = 1; i < output.shape.length; i++) columns *= output.shape[i] ?? 0;
  const value = output.data[columns === 2 ? 1 : 0];
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function sliceOf(item: QualityItem): string | null {
  const source = item.sliceSource;
  if (source === null) return null;
  let slice = callerKey(source, item.sliceHeader, undefined);
  if (slice === null && source.segments.length > 0 && item.body !== null) {
    const parsed = parseJsonLenient(item.body);
    slice = parsed.ok ? callerKey(source, undefined, parsed.value) : null;
  }
  return slice === null ? null : slice.slice(0, maxSliceValueLength);
}
