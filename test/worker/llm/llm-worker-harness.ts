// A real hf-llm worker (startWorker, in process; the engine on its own threads) serving
// fixtures/llm/tiny-llama from a fresh artifact store in a temp home, and what the tests ask
// of it: its load report, a metric's value, and greedy text from the engine of
// src/llm/engine/generation.ts run in this process for comparison.

import assert from 'node:assert/strict';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createModel } from '../../../src/llm/engine/create-model.ts';
import { generate } from '../../../src/llm/engine/generation.ts';
import { loadLlamaFolder } from '../../../src/llm/loader/load-llama-folder.ts';
import type { LlmServingConfig } from '../../../src/llm/serving/llm-serving-config.ts';
import { loadTokenizer } from '../../../src/llm/tokenizer/load-tokenizer.ts';
import type { Tokenizer } from '../../../src/llm/tokenizer/tokenizer.ts';
import { ArtifactStore } from '../../../src/registry/artifact-store.ts';
import { startWorker, type RunningWorker } from '../../../src/worker/start-worker.ts';
import type { WorkerEvent, WorkerSpec } from '../../../src/worker/worker-spec.ts';
import { tempDir } from '../../helpers/temp-dir.ts';

export const tinyLlama = fileURLToPath(
  new URL('../../../fixtures/llm/tiny-llama/', import.meta.url),
);
const files = [
  'config.json',
  'generation_config.json',
  'model.safetensors',
  'tokenizer.json',
  'tokenizer_config.json',
];

export interface LlmWorker {
  readonly worker: RunningWorker;
  readonly url: string;
  readonly events: WorkerEvent[];
  close(): Promise<void>;
}

/** A spec serving tiny-llama from a fresh artifact store (the temp home goes with the test file). */
export async function llmWorkerSpec(
  llm: LlmServingConfig = {},
  overrides: Partial<WorkerSpec> = {},
): Promise<WorkerSpec> {
  const home = await tempDir('kiln-llm-worker-');
  const store = new ArtifactStore(join(home, 'artifacts'));
  await store.init();
  const manifest = [];
  for (const path of files) {
    const blob = await store.ingest(createReadStream(join(tinyLlama, path)), null, {
      maxBytes: 1 << 30,
    });
    manifest.push({ path, size: blob.size, sha256: blob.sha256 });
  }
  const spec: WorkerSpec = {
    replicaId: 'tiny-1',
    endpoint: 'tiny',
    model: 'tiny-llama',
    version: 1,
    format: 'hf-llm',
    files: manifest,
    schema: null,
    artifacts: store.locator,
    workDir: join(home, 'replica'),
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: 1_000_000,
    config: {},
    batching: null,
    defaultTimeoutMs: null,
    llm: { kvCacheBytes: 8 << 20, ...llm },
    ...overrides,
  };
  return spec;
}

export async function startLlmWorker(
  llm: LlmServingConfig = {},
  overrides: Partial<WorkerSpec> = {},
): Promise<LlmWorker> {
  const spec = await llmWorkerSpec(llm, overrides);
  const events: WorkerEvent[] = [];
  const worker = await startWorker(spec, (event) => events.push(event));
  await worker.loaded;
  assert.equal(worker.state.phase, 'ready', JSON.stringify(events));
  return { worker, url: worker.url, events, close: () => worker.close(1000) };
}

export interface LoadReport {
  running: number;
  waiting: number;
  paused: number;
  kvBlocksUsed: number;
  kvBlocksTotal: number;
  kvUtilization: number;
  inflight: number;
}

export async function loadOf(url: string): Promise<LoadReport> {
  const response = await fetch(`${url}/kiln/v1/load`);
  assert.equal(response.status, 200);
  return (await response.json()) as LoadReport;
}

/** A metric's value (summed over its series with `labels` in them); 0 when absent. */
export async function metricValue(url: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (!(rest.startsWith(' ') || rest.startsWith('{'))) continue;
    if (labels !== '' && !rest.includes(labels)) continue;
    sum += Number(line.split(' ').at(-1));
  }
  return sum;
}

/** Greedy text from the in-process engine (engine/generation.ts) for the same tokens. */
export async function referenceGreedy(
  promptTokens: readonly number[],
  maxTokens: number,
  stopTokenIds: readonly number[],
): Promise<{ text: string; completionTokens: number }> {
  const { tokenizer } = await referenceParts();
  const loaded = await loadLlamaFolder(tinyLlama);
  if (!loaded.ok) assert.fail(loaded.message);
  const created = createModel(loaded.config, loaded.weights, { kvCacheBytes: 8 << 20 });
  if (!created.ok) assert.fail(created.message);
  let text = '';
  let completionTokens = 0;
  for (const event of generate(created.model, created.model.pool!, [
    {
      promptTokens,
      maxTokens,
      sampling: { temperature: 0 },
      stopTokenIds,
      textStream: tokenizer.decodeStream({ prefixIds: promptTokens }),
    },
  ])) {
    text += event.text;
    if (event.kind === 'done') completionTokens = event.completionTokens;
  }
  return { text, completionTokens };
}

let parts: Promise<{ tokenizer: Tokenizer }> | null = null;
export function referenceParts(): Promise<{ tokenizer: Tokenizer }> {
  parts ??= loadTokenizer(tinyLlama).then((loaded) => {
    if (!loaded.ok) assert.fail(loaded.message);
    return { tokenizer: loaded.tokenizer };
  });
  return parts;
}
