// Shared by the serving engine's tests: the tiny-llama fixture (a real 1 M-parameter Llama),
// engine options, 32 prompts of different lengths cut from a reference prompt, and helpers
// that run requests through the in-process engine and collect each request's outcome.

import { readFile } from 'node:fs/promises';
import type {
  EngineDoneEvent,
  EngineEvent,
  EngineOptions,
  EngineRequest,
} from '../../../src/llm/serving/engine-api.ts';
import {
  createServingEngine,
  type ServingEngineSetup,
} from '../../../src/llm/serving/create-serving-engine.ts';
import type { ServingEngine } from '../../../src/llm/serving/serving-engine.ts';

export const folder = new URL('../../../fixtures/llm/tiny-llama', import.meta.url).pathname;

export const baseOptions: EngineOptions = {
  kvCacheBytes: 4 << 20, // 256 blocks of 16 positions
  blockSize: 16,
  maxNumSeqs: 64,
  maxNumBatchedTokens: 128,
  maxWaiting: 256,
  prefixCaching: true,
  threads: 1,
  batching: 'continuous',
  maxPausedBlocks: 1024,
};

export interface Reference {
  readonly prompts: readonly { ids: number[]; greedyIds: number[]; greedyText: string }[];
}

export async function readReference(): Promise<Reference> {
  return JSON.parse(await readFile(`${folder}/reference.json`, 'utf8')) as Reference;
}

/** 32 greedy requests: prompts of 3–150 tokens from the long reference prompt, 6–45 new tokens. */
export async function thirtyTwoRequests(prefix = 'r'): Promise<EngineRequest[]> {
  const reference = await readReference();
  const long = reference.prompts.find((p) => p.ids.length > 200)!.ids;
  return Array.from({ length: 32 }, (_, i) => {
    const length = 3 + ((i * 37) % 148);
    const start = (i * 13) % (long.length - length);
    return greedy(`${prefix}${i}`, long.slice(start, start + length), 6 + ((i * 11) % 40));
  });
}

export function greedy(
  requestId: string,
  promptTokens: readonly number[],
  maxTokens: number,
  extra: Partial<EngineRequest> = {},
): EngineRequest {
  return {
    requestId,
    promptTokens,
    maxTokens,
    sampling: { temperature: 0 },
    stopTokenIds: [],
    stopStrings: [],
    ...extra,
  };
}

export interface Outcome {
  tokens: number[];
  text: string;
  done: EngineDoneEvent | null;
  errors: string[];
}

export function emptyOutcome(): Outcome {
  return { tokens: [], text: '', done: null, errors: [] };
}

/** Adds an event to its request's outcome. */
export function record(outcomes: Map<string, Outcome>, event: EngineEvent): void {
  let outcome = outcomes.get(event.requestId);
  if (outcome === undefined) outcomes.set(event.requestId, (outcome = emptyOutcome()));
  if (event.kind === 'token') {
    outcome.tokens.push(event.token);
    outcome.text += event.text;
  } else if (event.kind === 'done') {
    if (outcome.done !== null) throw new Error(`${event.requestId} finished twice`);
    outcome.text += event.text;
    outcome.done = event;
  } else outcome.errors.push(event.message);
}

export async function inProcess(options: Partial<ServingEngineSetup> = {}): Promise<ServingEngine> {
  const { threads: _threads, ...setup } = { ...baseOptions, ...options };
  const created = await createServingEngine(folder, setup);
  if (!created.ok) throw new Error(created.message);
  return created.engine;
}

/** Steps the engine until it has nothing to run (bounded); every event recorded. */
export function drain(
  engine: ServingEngine,
  outcomes: Map<string, Outcome> = new Map(),
  maxSteps = 100_000,
): Map<string, Outcome> {
  for (let i = 0; i < maxSteps && engine.hasWork(); i++)
    for (const event of engine.step().events) record(outcomes, event);
  if (engine.hasWork()) throw new Error('the engine did not drain');
  return outcomes;
}

/** Each request run alone in `engine` (one after another). */
export function runAlone(
  engine: ServingEngine,
  requests: readonly EngineRequest[],
): Map<string, Outcome> {
  const outcomes = new Map<string, Outcome>();
  for (const request of requests) {
    const added = engine.add(request);
    if (!added.ok) throw new Error(added.message);
    drain(engine, outcomes);
  }
  return outcomes;
}

/** The parts of an outcome a rerun must reproduce (the cache hit may differ). */
export function comparable(outcome: Outcome | undefined): unknown {
  if (outcome === undefined) return undefined;
  return {
    tokens: outcome.tokens,
    text: outcome.text,
    reason: outcome.done?.reason,
    completionTokens: outcome.done?.completionTokens,
    errors: outcome.errors,
  };
}
