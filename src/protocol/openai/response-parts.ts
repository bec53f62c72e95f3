// Pieces every OpenAI response and stream chunk is built from: ids, finish reasons, usage,
// log-probability entries, and the Server-Sent Events framing.

import { randomBytes } from 'node:crypto';
import type { FinishReason } from '../../llm/engine/generation.ts';

/** `cmpl-…` / `chatcmpl-…` followed by 32 hex digits, as vLLM makes them. */
export function responseId(prefix: 'cmpl' | 'chatcmpl'): string {
  return `${prefix}-${randomBytes(16).toString('hex')}`;
}

/** Unix seconds, as OpenAI's `created`. */
export function createdNow(): number {
  return Math.floor(Date.now() / 1000);
}

export type OpenAiFinishReason = 'stop' | 'length';

/** The engine's reasons in OpenAI's words: running out of KV cache is a length cut. */
export function openAiFinishReason(reason: FinishReason): OpenAiFinishReason {
  switch (reason) {
    case 'stop':
      return 'stop';
    case 'length':
    case 'kv_cache_full':
      return 'length';
  }
}

/** A token as text, its own bytes (part of a character's, possibly), and its log-probability. */
export interface TokenAlternative {
  readonly token: string;
  readonly bytes: readonly number[];
  readonly logprob: number;
}

/** One output token's log-probability, its token as text, and the most likely alternatives. */
export interface TokenLogprob extends TokenAlternative {
  readonly top: readonly TokenAlternative[];
}

export interface UsageCounts {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
}

export interface Usage {
  readonly prompt_tokens: number;
  readonly completion_tokens: number;
  readonly total_tokens: number;
  readonly prompt_tokens_details: { readonly cached_tokens: number };
}

export function usageOf(counts: UsageCounts): Usage {
  return {
    prompt_tokens: counts.promptTokens,
    completion_tokens: counts.completionTokens,
    total_tokens: counts.promptTokens + counts.completionTokens,
    prompt_tokens_details: { cached_tokens: counts.cachedTokens },
  };
}

/** One Server-Sent Event carrying a JSON chunk. */
export function sseData(chunk: unknown): string {
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

/** The event that ends every OpenAI stream. */
export const sseDone = 'data: [DONE]\n\n';
