// Streams that cannot all be served at full speed: a reader that stops reading pauses its own
// sequences (not the others'), and is ended after slowReaderTimeoutMs with a metric; a flood
// beyond the engine's waiting queue is shed with 429 queue_full, never queued without bound.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join } from 'node:path';
import OpenAI from 'openai';
import { tempDir } from '../../helpers/temp-dir.ts';
import { loadOf, metricValue, startLlmWorker } from './llm-worker-harness.ts';

/** Polls `check` until it holds; fails naming `what` after `limitMs` (generous: a loaded machine). */
async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  limitMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('a reader that stops reading is paused, does not delay another stream, and is ended after the timeout', async (t) => {
  // The slow reader connects on the worker's Unix socket: its buffer (~200 KB) fills after a
  // few hundred chunks, where loopback TCP's autotuned buffers could swallow the whole answer.
  const socketPath = join(await tempDir('kiln-llm-sock-'), 'w.sock');
  const w = await startLlmWorker(
    { streamBufferBytes: 16 * 1024, slowReaderTimeoutMs: 5_000, maxN: 4 },
    { channelSocket: socketPath },
  );
  t.after(() => w.close());
  const body = JSON.stringify({
    model: 'tiny',
    messages: [{ role: 'user', content: 'Write about the GNU licences at length.' }],
    max_tokens: 480,
    ignore_eos: true,
    n: 4,
    logprobs: true,
    top_logprobs: 20, // ~1.5 KB a chunk
    stream: true,
  });
  const slow = connect(socketPath);
  let head = '';
  let closed = false;
  slow.on('close', () => (closed = true));
  slow.on('error', () => undefined);
  slow.write(
    `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await new Promise<void>((resolve) => {
    const onData = (chunk: Buffer): void => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      slow.off('data', onData);
      slow.pause(); // reads nothing more
      resolve();
    };
    slow.on('data', onData);
  });
  assert.match(head, /^HTTP\/1\.1 200/);
  await waitFor(
    async () => (await metricValue(w.url, 'kiln_llm_paused_streams')) === 1,
    'the slow stream paused',
  );
  // The engine's threads report their load after a step: wait for it, do not race it.
  await waitFor(async () => (await loadOf(w.url)).paused > 0, 'its sequences paused in the engine');

  // Another stream runs to its end while the slow one stays paused.
  const client = new OpenAI({ baseURL: `${w.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'tiny',
    messages: [{ role: 'user', content: 'hello' }],
    max_tokens: 32,
    ignore_eos: true,
    stream: true,
    stream_options: { include_usage: true },
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  let usage: OpenAI.CompletionUsage | null | undefined = null;
  for await (const chunk of stream) usage = chunk.usage ?? usage;
  assert.equal(usage?.completion_tokens, 32);
  assert.equal(await metricValue(w.url, 'kiln_llm_paused_streams'), 1, 'the slow one still paused');
  assert.equal(await metricValue(w.url, 'kiln_llm_slow_reader_aborts_total'), 0);
  assert.equal(closed, false);

  // Past the timeout: ended, counted, its blocks freed.
  await waitFor(
    async () => (await metricValue(w.url, 'kiln_llm_slow_reader_aborts_total')) === 1,
    'the slow reader ended',
  );
  // Reading again, the client finds its stream cut short: no `data: [DONE]`, then the end.
  let tail = '';
  slow.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString('latin1')).slice(-64)));
  slow.resume();
  await waitFor(() => closed, 'its connection closed');
  assert.doesNotMatch(tail, /data: \[DONE\]/);
  await waitFor(async () => {
    const load = await loadOf(w.url);
    return load.kvBlocksUsed === 0 && load.running === 0 && load.paused === 0;
  }, 'its blocks freed');
  assert.equal(await metricValue(w.url, 'kiln_llm_paused_streams'), 0);
  slow.destroy();
});

test('a reader that reads again is resumed and gets its whole stream', async (t) => {
  const socketPath = join(await tempDir('kiln-llm-sock-'), 'w.sock');
  const w = await startLlmWorker(
    { streamBufferBytes: 16 * 1024, slowReaderTimeoutMs: 120_000, maxN: 4 },
    { channelSocket: socketPath },
  );
  t.after(() => w.close());
  const request = {
    model: 'tiny',
    prompt: 'The GNU licences',
    max_tokens: 300,
    ignore_eos: true,
    temperature: 0,
    n: 2,
    logprobs: 5,
  };
  const body = JSON.stringify({ ...request, stream: true });
  const reader = connect(socketPath);
  let received = '';
  reader.write(
    `POST /v1/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  reader.pause();
  await waitFor(
    async () => (await metricValue(w.url, 'kiln_llm_paused_streams')) === 1,
    'the stream paused',
  );
  reader.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
  reader.resume();
  await waitFor(() => received.includes('data: [DONE]'), 'the whole stream');
  reader.destroy();
  assert.equal(await metricValue(w.url, 'kiln_llm_paused_streams'), 0);
  assert.equal(await metricValue(w.url, 'kiln_llm_slow_reader_aborts_total'), 0);
  // The same text as a request that was never paused.
  const texts = ['', ''];
  for (const line of received.split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const chunk = JSON.parse(line.slice(6)) as OpenAI.Completion;
    for (const choice of chunk.choices) texts[choice.index] += choice.text;
  }
  assert.match(received, /data: \[DONE\]/);
  const client = new OpenAI({ baseURL: `${w.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const whole = await client.completions.create(
    request as OpenAI.CompletionCreateParamsNonStreaming,
  );
  assert.deepEqual(
    texts,
    whole.choices.map((c) => c.text),
  );
});

test('a flood beyond the waiting queue is shed with 429 queue_full and Retry-After', async (t) => {
  const w = await startLlmWorker({ maxNumSeqs: 1, maxWaiting: 2 });
  t.after(() => w.close());
  const one = (): Promise<Response> =>
    fetch(`${w.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', prompt: 'flood', max_tokens: 64, ignore_eos: true }),
    });
  const responses = await Promise.all(Array.from({ length: 12 }, one));
  const shed = responses.filter((r) => r.status === 429);
  const served = responses.filter((r) => r.status === 200);
  assert.equal(shed.length + served.length, 12, responses.map((r) => r.status).join());
  // At least the waiting queue's worth is taken (more if one was admitted to run meanwhile).
  assert.ok(shed.length > 0 && served.length >= 2, `${served.length} served, ${shed.length} shed`);
  const refusal = (await shed[0]!.json()) as { error: Record<string, unknown> };
  assert.equal(refusal.error.type, 'rate_limit_error');
  assert.equal(refusal.error.code, 'queue_full');
  assert.equal(shed[0]!.headers.get('retry-after'), '1');
  assert.ok(
    (JSON.parse(shed[0]!.headers.get('kiln-load') ?? '{}') as { waiting: number }).waiting >= 1,
  );
  for (const r of served) await r.arrayBuffer();
  assert.equal(await metricValue(w.url, 'kiln_llm_queue_full_total'), shed.length);
  // The client sees it as OpenAI's RateLimitError.
  const client = new OpenAI({ baseURL: `${w.url}/v1`, apiKey: 'x', maxRetries: 0 });
  const many = Array.from({ length: 8 }, () =>
    client.completions
      .create({ model: 'tiny', prompt: 'flood', max_tokens: 64, ignore_eos: true } as never)
      .then(
        () => null,
        (error: unknown) => error,
      ),
  );
  const errors = (await Promise.all(many)).filter((e) => e !== null);
  assert.ok(errors.length > 0);
  assert.ok(
    errors.every((e) => e instanceof OpenAI.RateLimitError),
    (errors[0] as Error).message,
  );
});
