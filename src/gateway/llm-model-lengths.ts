// The context length (`max_model_len`) of each hf-llm endpoint's model, for the gateway's
// `GET /v1/models` (vLLM lists it, and so does the worker). The routing snapshot does not
// carry it: the worker learns it from the model when it loads. So the gateway asks a replica's
// own `/v1/models` the first time it lists the endpoint, and keeps the answer for that
// endpoint version (every replica of a version serves the same model).
//
// A replica that does not answer (within `timeoutMs`) leaves the field out of that listing;
// the next listing asks again. No replica: no field, as before.

import type { Pool } from 'undici';
import type { EndpointEntry } from './route-table.ts';

/** A replica as this needs it (ReplicaState provides it). */
interface ModelsTarget {
  readonly pool: Pool;
  readonly pathPrefix: string;
  readonly retired: boolean;
  readonly ejectedUntilMs: number;
}

export class LlmModelLengths {
  /** Endpoint name → its version and that version's context length. */
  private readonly known = new Map<string, { version: number; maxModelLen: number }>();
  /** `name@version` → the question on its way (one at a time per endpoint version). */
  private readonly asking = new Map<string, Promise<void>>();

  constructor(
    private readonly timeoutMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The endpoint's context length, when known for the version it serves now. */
  maxModelLen(entry: EndpointEntry): number | undefined {
    const known = this.known.get(entry.name);
    return known?.version === entry.version ? known.maxModelLen : undefined;
  }

  /** Asks a replica of each entry whose length is not known yet; never rejects. */
  async learn(entries: readonly EndpointEntry[]): Promise<void> {
    const questions: Promise<void>[] = [];
    for (const entry of entries) {
      if (this.maxModelLen(entry) !== undefined) continue;
      const key = `${entry.name}@${entry.version}`;
      let question = this.asking.get(key);
      if (question === undefined) {
        question = this.ask(entry).finally(() => this.asking.delete(key));
        this.asking.set(key, question);
      }
      questions.push(question);
    }
    await Promise.all(questions);
  }

  private async ask(entry: EndpointEntry): Promise<void> {
    const nowMs = this.now();
    const replica: ModelsTarget | undefined = entry.replicas.find(
      (r) => !r.retired && r.ejectedUntilMs <= nowMs,
    );
    if (replica === undefined) return;
    try {
      const response = await replica.pool.request({
        path: `${replica.pathPrefix}/v1/models`,
        method: 'GET',
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const text = await response.body.text();
      if (response.statusCode !== 200) return;
      const length = maxModelLenOf(text);
      if (length !== undefined)
        this.known.set(entry.name, { version: entry.version, maxModelLen: length });
    } catch {
      // Unreachable, slow, or not a worker we understand: left out, asked again next time.
    }
  }
}

/** The first model's `max_model_len` in an OpenAI model list, if it is a positive integer. */
function maxModelLenOf(text: string): number | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof json !== 'object' || json === null) return undefined;
  const data = (json as { data?: unknown }).data;
  if (!Array.isArray(data)) return undefined;
  const first: unknown = data[0];
  if (typeof first !== 'object' || first === null) return undefined;
  const length = (first as { max_model_len?: unknown }).max_model_len;
  return typeof length === 'number' && Number.isInteger(length) && length > 0 ? length : undefined;
}
