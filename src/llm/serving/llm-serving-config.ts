// An hf-llm endpoint's serving settings (the endpoint config's `llm` object): what the
// control plane validates at deploy, stores, and hands the worker in its spec, and what the
// worker turns into EngineOptions (engine-api.ts) plus its own stream limits.

/** As a deploy may send it: every field optional (the rest are defaulted). */
export interface LlmServingConfig {
  /** KV cache budget per engine thread, in bytes (keys and values, every layer). */
  readonly kvCacheBytes?: number;
  /** Token positions per KV block. */
  readonly blockSize?: number;
  /** Sequences in one engine step's batch at once. */
  readonly maxNumSeqs?: number;
  /** Tokens computed in one step, all sequences together (prefill is chunked to fit). */
  readonly maxNumBatchedTokens?: number;
  /** Requests waiting to run at most; beyond it new ones get 429. */
  readonly maxWaiting?: number;
  /** Reuse shared prompt prefixes' keys and values. */
  readonly prefixCaching?: boolean;
  /** Engine threads (a model replica and KV cache each). */
  readonly threads?: number;
  /** Most choices (`n`) a request may ask for. */
  readonly maxN?: number;
  /** Bytes a stream may have waiting in its socket before its sequence is paused. */
  readonly streamBufferBytes?: number;
  /** A stream paused this long by a reader that does not read is ended (ms). */
  readonly slowReaderTimeoutMs?: number;
  /** KV blocks paused sequences may hold together before they are preempted. */
  readonly maxPausedBlocks?: number;
}

export type ResolvedLlmServingConfig = Required<LlmServingConfig>;

export const llmServingDefaults: ResolvedLlmServingConfig = {
  kvCacheBytes: 64 * 2 ** 20,
  blockSize: 16,
  maxNumSeqs: 64,
  maxNumBatchedTokens: 512,
  maxWaiting: 256,
  prefixCaching: true,
  threads: 1,
  maxN: 8,
  streamBufferBytes: 64 * 1024,
  slowReaderTimeoutMs: 30_000,
  maxPausedBlocks: 1024,
};

export function resolveLlmServingConfig(
  config: LlmServingConfig | null | undefined,
): ResolvedLlmServingConfig {
  return { ...llmServingDefaults, ...(config ?? {}) };
}
