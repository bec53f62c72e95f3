// What an hf-llm worker serves with: the engine, its tokenizer, the endpoint's serving
// settings, the LLM metrics, and the count of OpenAI requests the HTTP layer holds.

import type { LlmEngine } from '../../llm/serving/engine-api.ts';
import type { LlmLoadReport } from '../../protocol/llm/llm-load-report.ts';
import type { ResolvedLlmServingConfig } from '../../llm/serving/llm-serving-config.ts';
import type { Tokenizer } from '../../llm/tokenizer/tokenizer.ts';
import type { LlmMetrics } from './llm-metrics.ts';

export interface LlmService {
  readonly engine: LlmEngine;
  readonly tokenizer: Tokenizer;
  readonly config: ResolvedLlmServingConfig;
  readonly metrics: LlmMetrics;
  /** Unix seconds the model became ready (the /v1/models `created`). */
  readonly createdSeconds: number;
  /** OpenAI requests held by the HTTP layer, queued or streaming. */
  inflight: number;
  /** Token id → its text alone and its own bytes (log-probability entries), filled as met. */
  readonly tokenTexts: Map<number, TokenAlternativeText>;
}

/** The load report routers read (`GET /kiln/v1/load`, and the `kiln-load` header). */
export function loadReport(service: LlmService): LlmLoadReport {
  const load = service.engine.load();
  return {
    running: load.running,
    waiting: load.waiting,
    paused: load.paused,
    kvBlocksUsed: load.kvBlocksUsed,
    kvBlocksTotal: load.kvBlocksTotal,
    kvUtilization: load.kvUtilization,
    inflight: service.inflight,
  };
}

/** A token as OpenAI's log-probability entries show it. */
export interface TokenAlternativeText {
  /** Its text alone (U+FFFD for part of a character, as vLLM shows it). */
  readonly token: string;
  /** Its own bytes (chat's `bytes`): part of a character's when it holds only part. */
  readonly bytes: readonly number[];
}

/** A token's own text and bytes, as OpenAI's log-probability entries show them. */
export function tokenText(service: LlmService, token: number): TokenAlternativeText {
  let text = service.tokenTexts.get(token);
  if (text === undefined) {
    text = {
      token: service.tokenizer.decode([token]),
      bytes: service.tokenizer.tokenBytes(token),
    };
    service.tokenTexts.set(token, text);
  }
  return text;
}
