// LLM tokens in the cost report, end to end (issue 15 E): a real platform (control plane,
// gateway, an hf-llm worker of tiny-llama), answers whole and streamed through the gateway;
// the cost report's tokens for the endpoint are the sum of the `usage` the answers gave.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { call, readArtifact, register, testPlatform } from '../helpers/platform.ts';

const folder = new URL('../../fixtures/llm/tiny-llama/', import.meta.url).pathname;

test(
  'the tokens of whole and streamed answers reach the cost report',
  { timeout: 300_000 },
  async () => {
    const platform = await testPlatform({ gateway: true });
    const files = (await readArtifact(folder)).filter((f) => f.path !== 'reference.json');
    const registered = await register(platform.url, 'tiny-llama', 'hf-llm', files);
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/chat', {
      model: 'tiny-llama',
    });
    assert.ok(deployed.status === 201 || deployed.status === 200, JSON.stringify(deployed.body));
    const client = new OpenAI({
      baseURL: `${platform.gatewayUrl}/v1`,
      apiKey: 'unused',
      maxRetries: 0,
    });

    let prompt = 0;
    let completion = 0;
    const deadline = Date.now() + 180_000;
    for (;;) {
      // The first answer means the replica is ready (refusals before it carry no tokens).
      const answer = await client.completions
        .create({ model: 'chat', prompt: 'Once upon a time', max_tokens: 3 })
        .catch(() => null);
      if (answer !== null) {
        prompt += answer.usage!.prompt_tokens;
        completion += answer.usage!.completion_tokens;
        break;
      }
      if (Date.now() > deadline) assert.fail('no completion through the gateway');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const stream = await client.chat.completions.create({
      model: 'chat',
      messages: [{ role: 'user', content: 'hello' }],
      max_tokens: 4,
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) {
      if (chunk.usage) {
        prompt += chunk.usage.prompt_tokens;
        completion += chunk.usage.completion_tokens;
      }
    }
    // A stream whose client did not ask for usage is counted all the same: greedy, so it
    // gives what the same request whole gives (whose usage we read).
    const same = { model: 'chat', prompt: 'abc', max_tokens: 2, temperature: 0 } as const;
    const whole = await client.completions.create(same);
    const quiet = await client.completions.create({ ...same, stream: true });
    let pieces = 0;
    for await (const chunk of quiet) pieces += chunk.choices.length;
    assert.ok(pieces > 0);
    prompt += 2 * whole.usage!.prompt_tokens;
    completion += 2 * whole.usage!.completion_tokens;
    assert.ok(prompt > 0 && completion > 0);

    const cost = platform.observability.cost!;
    const tokens = async (): Promise<[number, number] | null> => {
      await cost.sampleOnce(); // stores what the gateway's reports carried so far
      const report = await cost.report({
        by: 'endpoint',
        sinceMs: Date.now() - 3_600_000,
        untilMs: Date.now() + 1,
      });
      const row = report.rows.find((r) => r.key === 'chat');
      return row === undefined ? null : [row.promptTokens, row.completionTokens];
    };
    const until = Date.now() + 60_000;
    let seen = await tokens();
    while (!(seen !== null && seen[0] === prompt && seen[1] === completion) && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      seen = await tokens();
    }
    assert.deepEqual(seen, [prompt, completion]);
  },
);
