// `kiln deploy` of hf-llm versions: the LLM flags → `config.llm`, --threads by the version's
// format, a redeploy that merges into the current llm settings and drops those of the other
// kind of model, sizes with units; `endpoints show` renders the settings with defaults.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command, InvalidArgumentError } from 'commander';
import { parseVersionRef } from '../../src/cli/arguments.ts';
import type { Endpoint } from '../../src/cli/api-types.ts';
import { deployBody, keepCurrent } from '../../src/cli/commands/deploy.ts';
import {
  addLlmOptions,
  byteSize,
  llmSettings,
  type LlmFlags,
} from '../../src/cli/commands/deploy-llm-flags.ts';
import { endpointDetails, llmText } from '../../src/cli/commands/endpoints-render.ts';
import { llmChatCurl } from '../../src/cli/commands/up.ts';

const ref = parseVersionRef('tiny@champion');
const defaults = { endpoint: 'chat' };

void test('LLM flags land in config.llm; --threads follows the format', () => {
  const body = deployBody(
    ref,
    {
      ...defaults,
      kvCacheBytes: 8 * 2 ** 20,
      blockSize: 32,
      maxSeqs: 16,
      maxBatchedTokens: 256,
      maxWaiting: 100,
      prefixCaching: false,
      threads: 2,
      maxN: 4,
      streamBufferBytes: 4096,
      slowReaderTimeoutMs: 5000,
      maxPausedBlocks: 64,
      maxConcurrency: 50,
    },
    'hf-llm',
  );
  assert.deepEqual(body.config, {
    maxConcurrency: 50,
    llm: {
      kvCacheBytes: 8 * 2 ** 20,
      blockSize: 32,
      maxNumSeqs: 16,
      maxNumBatchedTokens: 256,
      maxWaiting: 100,
      prefixCaching: false,
      threads: 2,
      maxN: 4,
      streamBufferBytes: 4096,
      slowReaderTimeoutMs: 5000,
      maxPausedBlocks: 64,
    },
  });
  assert.deepEqual(deployBody(ref, { ...defaults, threads: 2 }, 'onnx').config, {
    intraOpThreads: 2,
  });
  // Format unknown (the version could not be read): the PUT will say why; ONNX's meaning.
  assert.deepEqual(deployBody(ref, { ...defaults, threads: 2 }).config, { intraOpThreads: 2 });
  assert.deepEqual(deployBody(ref, { ...defaults, prefixCaching: true }, 'hf-llm').config, {
    llm: { prefixCaching: true },
  });
  // No LLM flag: no llm object (the endpoint's settings, or the defaults, stay).
  assert.deepEqual(deployBody(ref, defaults, 'hf-llm').config, {});
});

function current(config: Endpoint['config'], format: Endpoint['format'] = 'hf-llm'): Endpoint {
  return {
    name: 'chat',
    team: 'llm',
    model: 'tiny',
    version: 1,
    ref: '@champion',
    format,
    replicas: 3,
    config,
    createdAt: '2026-01-31T14:05:09.123Z',
    updatedAt: '2026-01-31T14:06:00.000Z',
    url: 'http://127.0.0.1:8000/v1',
    status: {
      ready: true,
      readyReplicas: 3,
      reason: null,
      maxConcurrency: 960,
      maxConcurrencySource: 'derived',
      replicas: [],
    },
  };
}

void test('a redeploy merges the llm flags into the current llm settings', () => {
  const now = current({ llm: { kvCacheBytes: 2 ** 20, maxNumSeqs: 8 }, timeoutMs: 500 });
  const body = keepCurrent(
    deployBody(parseVersionRef('tiny:2'), { ...defaults, maxSeqs: 16 }, 'hf-llm'),
    now,
    'hf-llm',
  );
  assert.deepEqual(body, {
    model: 'tiny',
    version: 2,
    replicas: 3,
    team: 'llm',
    config: { llm: { kvCacheBytes: 2 ** 20, maxNumSeqs: 16 }, timeoutMs: 500 },
  });
  // No LLM flag: the current llm object as it is.
  assert.deepEqual(keepCurrent(deployBody(ref, defaults, 'hf-llm'), now, 'hf-llm').config, {
    llm: { kvCacheBytes: 2 ** 20, maxNumSeqs: 8 },
    timeoutMs: 500,
  });
});

void test("a redeploy onto the other kind of model drops the current endpoint's other settings", () => {
  const onnx = current(
    {
      intraOpThreads: 2,
      graphOptimizationLevel: 'all',
      batching: { maxBatchSize: 8, maxDelayMicros: 0, maxQueue: 64 },
      maxConcurrency: 40,
    },
    'onnx',
  );
  assert.deepEqual(
    keepCurrent(deployBody(ref, { ...defaults, maxSeqs: 4 }, 'hf-llm'), onnx, 'hf-llm').config,
    {
      maxConcurrency: 40,
      llm: { maxNumSeqs: 4 },
    },
  );
  // Given ones are kept, for the platform to refuse by name.
  assert.deepEqual(
    keepCurrent(deployBody(ref, { ...defaults, maxBatch: 4 }, 'hf-llm'), onnx, 'hf-llm').config
      .batching,
    { maxBatchSize: 4, maxDelayMicros: 0, maxQueue: 64 },
  );
  const llm = current({ llm: { maxNumSeqs: 4 }, maxConcurrency: 40 });
  assert.deepEqual(keepCurrent(deployBody(ref, defaults, 'onnx'), llm, 'onnx').config, {
    maxConcurrency: 40,
  });
  // Format unknown: everything current is kept.
  assert.deepEqual(keepCurrent(deployBody(ref, defaults), llm).config, llm.config);
});

void test('the command line as commander parses it → config.llm', () => {
  const parse = (...args: string[]): LlmFlags =>
    addLlmOptions(new Command().exitOverride()).parse(args, { from: 'user' }).opts<LlmFlags>();
  assert.deepEqual(
    llmSettings(
      parse(
        '--kv-cache-bytes',
        '16MiB',
        '--block-size',
        '8',
        '--max-seqs',
        '4',
        '--max-batched-tokens',
        '64',
        '--max-waiting',
        '9',
        '--max-n',
        '2',
        '--stream-buffer-bytes',
        '4KiB',
        '--slow-reader-timeout-ms',
        '100',
        '--max-paused-blocks',
        '0',
      ),
    ),
    {
      kvCacheBytes: 16 * 2 ** 20,
      blockSize: 8,
      maxNumSeqs: 4,
      maxNumBatchedTokens: 64,
      maxWaiting: 9,
      maxN: 2,
      streamBufferBytes: 4096,
      slowReaderTimeoutMs: 100,
      maxPausedBlocks: 0,
    },
  );
  // Both forms defined: neither given sends nothing (the current setting stays).
  assert.deepEqual(llmSettings(parse()), {});
  assert.deepEqual(llmSettings(parse('--no-prefix-caching')), { prefixCaching: false });
  assert.deepEqual(llmSettings(parse('--prefix-caching')), { prefixCaching: true });
});

void test('sizes: bytes, or KiB/MiB/GiB', () => {
  assert.equal(byteSize('67108864'), 67108864);
  assert.equal(byteSize('64MiB'), 64 * 2 ** 20);
  assert.equal(byteSize('512 kib'), 512 * 1024);
  assert.equal(byteSize('1GiB'), 2 ** 30);
  for (const bad of ['', '0', '64MB', '1.5GiB', '-1', 'MiB', '64 Mi'])
    assert.throws(() => byteSize(bad), InvalidArgumentError, bad);
});

void test('endpoints show: the LLM settings with the defaults filled in, the OpenAI base URL', () => {
  assert.equal(
    llmText(undefined),
    'KV 64.0 MiB/thread in blocks of 16, 64 seqs × 512 tokens/step, 256 waiting, prefix caching on, 1 thread, n ≤ 8, streams: pause past 64.0 KiB unread, end after 30000 ms paused, paused ≤ 1024 blocks',
  );
  assert.match(
    llmText({ kvCacheBytes: 4 * 2 ** 20, prefixCaching: false, threads: 2 }),
    /^KV 4\.00 MiB\/thread .* prefix caching off, 2 threads,/,
  );
  const text = endpointDetails(current({ llm: { maxNumSeqs: 8 }, maxConcurrency: 40 }));
  assert.match(text, /^format:\s+hf-llm$/m);
  assert.match(text, /^llm:\s+KV 64\.0 MiB\/thread in blocks of 16, 8 seqs × 512 tokens\/step,/m);
  assert.match(text, /^config:\s+maxConcurrency=40$/m);
  assert.doesNotMatch(text, /^batching:/m);
  assert.match(text, /^url:\s+http:\/\/127\.0\.0\.1:8000\/v1 \(OpenAI API, model "chat"\)$/m);
  const onnx = endpointDetails(current({ batching: null }, 'onnx'));
  assert.match(onnx, /^batching:\s+off$/m);
  assert.doesNotMatch(onnx, /^llm:/m);
});

void test("kiln up --dev prints the README's streamed chat curl line", () => {
  assert.equal(
    llmChatCurl('http://127.0.0.1:8000'),
    `curl -N http://127.0.0.1:8000/v1/chat/completions -H 'content-type: application/json' -d '{"model":"tiny-llm","messages":[{"role":"user","content":"What does the GPL protect?"}],"max_tokens":32,"temperature":0,"stream":true}'`,
  );
});
