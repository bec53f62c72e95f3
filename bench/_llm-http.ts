// The HTTP side of bench/llm-serving.ts part (d): a platform in a temp home with the tiny
// Llama deployed as an hf-llm endpoint on N replicas, and a sender that streams OpenAI
// completions through the gateway (`stream: true`, SSE), timing the first chunk that
// carries a token.

import { platformStarter } from './_compiled.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Pool } from 'undici';

import { type RunningPlatform } from '../src/control/start-platform.ts';
import type { LlmServingConfig } from '../src/llm/serving/llm-serving-config.ts';
import { call, readArtifact, register } from '../test/helpers/platform.ts';
import type { Sender } from './_llm-drive.ts';

export interface LlmPlatform {
  readonly platform: RunningPlatform;
  readonly gatewayUrl: string;
  readonly endpoint: string;
  close(): Promise<void>;
}

/**
 * Starts a platform whose gateway process gets `env` (e.g. KILN_LLM_ROUTING), registers
 * `modelDir` as an hf-llm model and deploys it on `replicas`; waits until every replica is
 * ready and the gateway lists the endpoint. On failure, closes what it started.
 */
export async function startLlmPlatform(options: {
  readonly modelDir: string;
  readonly replicas: number;
  readonly llm: LlmServingConfig;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
}): Promise<LlmPlatform> {
  const home = await mkdtemp(join(tmpdir(), 'kiln-bench-llm-'));
  // The gateway process inherits this process's environment (gateway-process.ts).
  const saved = new Map<string, string | undefined>();
  for (const [key, value] of Object.entries(options.env)) {
    saved.set(key, process.env[key]);
    process.env[key] = value;
  }
  let platform: RunningPlatform | undefined;
  const close = async (): Promise<void> => {
    await platform?.close();
    await rm(home, { recursive: true, force: true });
  };
  try {
    platform = await (
      await platformStarter()
    )({
      home,
      host: '127.0.0.1',
      port: 0,
      gatewayPort: 0,
      dev: true,
    });
    const endpoint = 'bench-llm';
    const registered = await register(
      platform.url,
      endpoint,
      'hf-llm',
      await readArtifact(options.modelDir),
    );
    if (registered.status !== 201)
      throw new Error(`registering the model: ${JSON.stringify(registered.body)}`);
    const deployed = await call(platform.url, 'PUT', `/api/v1/endpoints/${endpoint}`, {
      model: endpoint,
      replicas: options.replicas,
      config: { llm: options.llm },
    });
    if (deployed.status >= 300)
      throw new Error(`deploying the endpoint: ${JSON.stringify(deployed.body)}`);
    const deadline = performance.now() + options.timeoutMs;
    for (;;) {
      const status = (await call(platform.url, 'GET', `/api/v1/endpoints/${endpoint}`)).body as {
        status?: { ready?: boolean; replicas?: { state: string }[] };
      };
      const ready = (status.status?.replicas ?? []).filter((r) => r.state === 'ready').length;
      if (status.status?.ready === true && ready >= options.replicas) {
        const models = await fetch(`${platform.gatewayUrl}/v1/models`);
        const text = await models.text();
        if (models.status === 200 && text.includes(`"${endpoint}"`)) break;
      }
      if (performance.now() > deadline)
        throw new Error(
          `the endpoint was not ready on ${options.replicas} replicas within ${options.timeoutMs} ms: ${JSON.stringify(status)}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return { platform, gatewayUrl: platform.gatewayUrl, endpoint, close };
  } catch (error) {
    await close();
    throw error;
  } finally {
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
}

/**
 * Streams `POST /v1/completions` with the prompt as token ids, greedy, and counts tokens from
 * the chunks (the final usage chunk's completion_tokens when it comes). One connection per
 * request in flight, as many clients would have.
 */
export function openAiSender(
  gatewayUrl: string,
  endpoint: string,
): Sender & { close(): Promise<void> } {
  const pool = new Pool(gatewayUrl, { connections: 1024, pipelining: 1 });
  return {
    close: () => pool.close(),
    start(request, timing, done) {
      const body = JSON.stringify({
        model: endpoint,
        prompt: request.promptTokens,
        max_tokens: request.maxTokens,
        temperature: 0,
        stream: true,
        stream_options: { include_usage: true },
      });
      const exchange = async (): Promise<void> => {
        const response = await pool.request({
          method: 'POST',
          path: '/v1/completions',
          body,
          headers: { 'content-type': 'application/json' },
        });
        if (response.statusCode !== 200) {
          const text = await response.body.text();
          timing.error = `HTTP ${response.statusCode}: ${text.slice(0, 200)}`;
          return;
        }
        let buffered = '';
        let usageTokens: number | null = null;
        for await (const piece of response.body) {
          buffered += (piece as Buffer).toString('utf8');
          let end: number;
          while ((end = buffered.indexOf('\n\n')) >= 0) {
            const event = buffered.slice(0, end);
            buffered = buffered.slice(end + 2);
            const data = event.startsWith('data: ') ? event.slice(6) : null;
            if (data === null || data === '[DONE]') continue;
            const chunk = JSON.parse(data) as {
              choices?: { text?: string }[];
              usage?: { completion_tokens?: number } | null;
            };
            if (chunk.choices !== undefined && chunk.choices.length > 0) {
              if (timing.outputTokens === 0) timing.ttftMs = performance.now() - timing.sentMs;
              timing.outputTokens += 1;
            }
            if (typeof chunk.usage?.completion_tokens === 'number')
              usageTokens = chunk.usage.completion_tokens;
          }
        }
        if (usageTokens !== null) timing.outputTokens = usageTokens;
      };
      exchange()
        .catch((error: unknown) => {
          timing.error = error instanceof Error ? error.message : String(error);
        })
        .finally(done);
    },
  };
}
