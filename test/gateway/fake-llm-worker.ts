// A fake hf-llm worker for gateway tests: a small node:http server speaking the worker's
// OpenAI contract (JSON answers and SSE streams shaped as OpenAI's, `/kiln/v1/load`, the
// `kiln-load` header on every answer) with behaviours the tests steer, and records of what
// it received, how often its load was polled and which answers were cut.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { LlmLoadReport } from '../../src/gateway/llm-replica-load.ts';
import { serveOnLoopback } from './gateway-harness.ts';

/**
 * - `ok`: answers at once (a stream: three text chunks, then `[DONE]`).
 * - `hold`: a stream's headers and first chunk, then nothing until `release()`.
 * - `stall`: nothing at all (a prompt still in prefill) until `release()`.
 * - `flood`: a stream of ~16 KiB events written as fast as the connection takes them
 *   (waiting for 'drain' when a write returns false), up to `floodLimitBytes`.
 */
export type LlmWorkerBehavior = 'ok' | 'hold' | 'stall' | 'flood';

export interface LlmReceived {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly raw: Buffer;
  readonly body: Record<string, unknown>;
}

export interface FakeLlmWorker {
  readonly url: string;
  /** The text every answer carries: `from <name>`. */
  readonly name: string;
  readonly received: LlmReceived[];
  behavior: LlmWorkerBehavior;
  /** What `/kiln/v1/load` and the `kiln-load` header report. */
  load: LlmLoadReport;
  /** `/kiln/v1/load` requests answered. */
  loadPolls: number;
  /** The `max_model_len` its `/v1/models` reports. */
  maxModelLen: number;
  /** `/v1/models` requests answered. */
  modelRequests: number;
  /** Answers whose connection closed before they ended (the gateway aborted them). */
  aborted: number;
  /** Bytes a `flood` stream has written so far (what its socket took). */
  floodBytes: number;
  floodLimitBytes: number;
  /** Whether a `flood` stream wrote everything. */
  floodFinished: boolean;
  release(): void;
  close(): Promise<void>;
}

export const idleLoad: LlmLoadReport = {
  running: 0,
  waiting: 0,
  paused: 0,
  kvBlocksUsed: 0,
  kvBlocksTotal: 100,
  kvUtilization: 0,
  inflight: 0,
};

export const streamPieces = ['Hello', ' from', ' kiln'];

export async function fakeLlmWorker(
  name: string,
  behavior: LlmWorkerBehavior = 'ok',
): Promise<FakeLlmWorker> {
  const held: Array<() => void> = [];
  const worker: FakeLlmWorker = {
    url: '',
    name,
    received: [],
    behavior,
    load: idleLoad,
    loadPolls: 0,
    maxModelLen: 2048,
    modelRequests: 0,
    aborted: 0,
    floodBytes: 0,
    floodLimitBytes: 256 * 2 ** 20,
    floodFinished: false,
    release() {
      for (const answer of held.splice(0)) answer();
    },
    close: () => Promise.resolve(), // the server's, once it listens
  };
  /** Answers a generation request as `behavior` says. */
  const respond = (
    res: ServerResponse,
    path: string,
    body: Record<string, unknown>,
    behavior: LlmWorkerBehavior,
  ): void => {
    const chat = path === '/v1/chat/completions';
    const model = typeof body.model === 'string' ? body.model : '';
    const loadHeader = { 'kiln-load': JSON.stringify(worker.load) };
    if (body.stream !== true) {
      res.writeHead(200, { 'content-type': 'application/json', ...loadHeader });
      res.end(JSON.stringify(answer(chat, model, `from ${name}`)));
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      ...loadHeader,
    });
    const event = (data: unknown): string => `data: ${JSON.stringify(data)}\n\n`;
    if (behavior === 'flood') {
      flood(res, worker, event(chunk(chat, model, 'x'.repeat(16 * 1024), null)));
      return;
    }
    const pieces = chat ? ['', ...streamPieces] : streamPieces;
    res.write(event(chunk(chat, model, pieces[0]!, null, chat)));
    const rest = (): void => {
      for (const piece of pieces.slice(1)) res.write(event(chunk(chat, model, piece, null)));
      res.write(event(chunk(chat, model, '', 'stop')));
      res.end('data: [DONE]\n\n');
    };
    if (behavior === 'hold') held.push(rest);
    else rest();
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '';
      if (req.method === 'GET' && path === '/kiln/v1/load') {
        worker.loadPolls += 1;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(worker.load));
        return;
      }
      if (req.method === 'GET' && path === '/v1/models') {
        worker.modelRequests += 1;
        res.writeHead(200, { 'content-type': 'application/json' });
        const model = { id: 'served', object: 'model', created: 1_700_000_000, owned_by: 'kiln' };
        const data = [{ ...model, root: 'served-model', max_model_len: worker.maxModelLen }];
        res.end(JSON.stringify({ object: 'list', data }));
        return;
      }
      const raw = Buffer.concat(chunks);
      const body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
      worker.received.push({ path, headers: req.headers, raw, body });
      let ended = false;
      res.on('finish', () => (ended = true));
      res.on('close', () => {
        if (!ended) worker.aborted += 1;
      });
      if (worker.behavior === 'stall') held.push(() => respond(res, path, body, 'ok'));
      else respond(res, path, body, worker.behavior);
    });
  });
  const served = await serveOnLoopback(server);
  Object.assign(worker, { url: served.url, close: served.close });
  return worker;
}

/** Writes `event` over and over as fast as the connection takes it. */
function flood(res: ServerResponse, worker: FakeLlmWorker, event: string): void {
  const bytes = Buffer.from(event);
  const write = (): void => {
    while (!res.destroyed) {
      if (worker.floodBytes >= worker.floodLimitBytes) {
        worker.floodFinished = true;
        res.end('data: [DONE]\n\n');
        return;
      }
      worker.floodBytes += bytes.length;
      if (!res.write(bytes)) {
        res.once('drain', write);
        return;
      }
    }
  };
  write();
}

function answer(chat: boolean, model: string, text: string): unknown {
  const usage = { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 };
  return chat
    ? {
        id: 'chatcmpl-fake',
        object: 'chat.completion',
        created: 1_700_000_000,
        model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: text },
            logprobs: null,
            finish_reason: 'stop',
          },
        ],
        usage,
      }
    : {
        id: 'cmpl-fake',
        object: 'text_completion',
        created: 1_700_000_000,
        model,
        choices: [{ index: 0, text, logprobs: null, finish_reason: 'stop' }],
        usage,
      };
}

function chunk(
  chat: boolean,
  model: string,
  text: string,
  finish: string | null,
  withRole = false,
): unknown {
  return chat
    ? {
        id: 'chatcmpl-fake',
        object: 'chat.completion.chunk',
        created: 1_700_000_000,
        model,
        choices: [
          {
            index: 0,
            delta:
              finish !== null
                ? {}
                : withRole
                  ? { role: 'assistant', content: text }
                  : { content: text },
            logprobs: null,
            finish_reason: finish,
          },
        ],
      }
    : {
        id: 'cmpl-fake',
        object: 'text_completion',
        created: 1_700_000_000,
        model,
        choices: [{ index: 0, text, logprobs: null, finish_reason: finish }],
      };
}
