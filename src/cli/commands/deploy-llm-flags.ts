// `kiln deploy`'s flags for hf-llm versions: the LLM engine's and its streams' settings
// (the endpoint config's `llm` object; docs/api.md has every field and its range). Absent
// flags send nothing: the endpoint's current value, or the platform's default, stays.

import { InvalidArgumentError, type Command } from 'commander';
import type { LlmSettings } from '../api-types.ts';
import { integerOption } from '../arguments.ts';

export interface LlmFlags {
  readonly kvCacheBytes?: number;
  readonly blockSize?: number;
  readonly maxSeqs?: number;
  readonly maxBatchedTokens?: number;
  readonly maxWaiting?: number;
  /** true with --prefix-caching, false with --no-prefix-caching, absent with neither. */
  readonly prefixCaching?: boolean;
  readonly maxN?: number;
  readonly streamBufferBytes?: number;
  readonly slowReaderTimeoutMs?: number;
  readonly maxPausedBlocks?: number;
}

export function addLlmOptions(command: Command): Command {
  return command
    .option(
      '--kv-cache-bytes <size>',
      'hf-llm: KV cache per engine thread, e.g. 67108864 or 64MiB',
      byteSize,
    )
    .option('--block-size <n>', 'hf-llm: token positions per KV block', integerOption(1))
    .option('--max-seqs <n>', 'hf-llm: sequences in the running batch at once', integerOption(1))
    .option(
      '--max-batched-tokens <n>',
      'hf-llm: tokens computed per engine step (prefill is chunked to fit)',
      integerOption(1),
    )
    .option(
      '--max-waiting <n>',
      'hf-llm: requests that may wait to run; beyond it, 429',
      integerOption(1),
    )
    .option('--prefix-caching', 'hf-llm: reuse shared prompt prefixes (the default)')
    .option('--no-prefix-caching', 'hf-llm: compute every prompt in full')
    .option('--max-n <n>', 'hf-llm: most choices (n) one request may ask for', integerOption(1))
    .option(
      '--stream-buffer-bytes <size>',
      "hf-llm: a stream's unread bytes before its sequence pauses",
      byteSize,
    )
    .option(
      '--slow-reader-timeout-ms <ms>',
      'hf-llm: a stream paused this long is ended',
      integerOption(1),
    )
    .option(
      '--max-paused-blocks <n>',
      'hf-llm: KV blocks paused streams may hold together',
      integerOption(0),
    );
}

/** The LLM flags given, as `config.llm` fields. */
export function llmSettings(options: LlmFlags): LlmSettings {
  const llm: LlmSettings = {};
  if (options.kvCacheBytes !== undefined) llm.kvCacheBytes = options.kvCacheBytes;
  if (options.blockSize !== undefined) llm.blockSize = options.blockSize;
  if (options.maxSeqs !== undefined) llm.maxNumSeqs = options.maxSeqs;
  if (options.maxBatchedTokens !== undefined) llm.maxNumBatchedTokens = options.maxBatchedTokens;
  if (options.maxWaiting !== undefined) llm.maxWaiting = options.maxWaiting;
  if (options.prefixCaching !== undefined) llm.prefixCaching = options.prefixCaching;
  if (options.maxN !== undefined) llm.maxN = options.maxN;
  if (options.streamBufferBytes !== undefined) llm.streamBufferBytes = options.streamBufferBytes;
  if (options.slowReaderTimeoutMs !== undefined)
    llm.slowReaderTimeoutMs = options.slowReaderTimeoutMs;
  if (options.maxPausedBlocks !== undefined) llm.maxPausedBlocks = options.maxPausedBlocks;
  return llm;
}

const byteUnits: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
};

/** `67108864`, `64MiB`, `512 KiB`, `1GiB` → bytes (binary units only: no 1000/1024 doubt). */
export function byteSize(text: string): number {
  const match = /^(\d+)\s*([a-z]*)$/i.exec(text.trim());
  const unit = byteUnits[match?.[2]?.toLowerCase() ?? 'none'];
  const bytes = match === null || unit === undefined ? Number.NaN : Number(match[1]) * unit;
  if (!Number.isSafeInteger(bytes) || bytes < 1) {
    throw new InvalidArgumentError('expected a size in bytes, e.g. 67108864, 512KiB, 64MiB, 1GiB');
  }
  return bytes;
}
