// The prediction log (issue 15, D): sampled requests of endpoints that opted in
// (`observability.predictionLog`, carried by the routing snapshot), written as JSON lines
// to rotating files under `<dir>/<endpoint>/` — `predictions-000001.jsonl`, `-000002`, …
//
// Never on the request path. `offer` is called after the answer is written and only queues
// references to the request and answer bytes already held; parsing, redaction and writing
// happen later, on the writer's own turn (setImmediate), one file write per endpoint and
// batch. The queue is a fixed ring of `capacity` slots:
//
//     head ─▶ [ item | item | item |  …  |      |      ] ◀─ head + size (mod capacity)
//
// an offer finding it full is dropped and counted (outcome `dropped`) at once: a slow or
// failing disk costs log records, never request latency. A write that fails (disk full,
// permissions) drops its batch (`failed`) and is logged once per endpoint.
//
// Size cap: a file takes lines while it stays within maxFileBytes, then the next number is
// opened and the oldest beyond maxFiles deleted, so an endpoint's log never holds more than
// maxFiles × maxFileBytes. A single record larger than maxFileBytes is dropped (`too-large`).
// Redaction (redact-record.ts) runs before a line exists: a redacted field is never written.

import { mkdir, open, readdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { PredictionLogConfig } from '../store/observability-config.ts';
import { redactRecord } from '../observability/prediction-log/redact-record.ts';
import { parseJsonLenient } from '../protocol/v2/lenient-json.ts';

export interface PredictionLogItem {
  readonly endpoint: string;
  readonly model: string;
  readonly version: number;
  readonly requestId: string;
  readonly status: number;
  readonly latencyMs: number;
  /** Epoch ms the request arrived. */
  readonly timeMs: number;
  readonly slice: string | null;
  /** The client's body as it came; null: none (never read). */
  readonly request: Buffer | null;
  /** A 200's body as the replica answered (v2); null: none or not kept. */
  readonly answer: Buffer | null;
  readonly config: PredictionLogConfig;
  /** The version's feature names (column order), for feature rules; null: none. */
  readonly features: readonly string[] | null;
}

export type PredictionLogOutcome = 'written' | 'dropped' | 'failed' | 'too-large';

export interface PredictionLogWriterOptions {
  /** `<home>/prediction-log`: one folder per endpoint below it. */
  readonly dir: string;
  /** Records queued at most (default 1 024); beyond, offers are dropped. */
  readonly capacity?: number;
  /** `records` of one endpoint went that way (1 when absent). */
  readonly count: (endpoint: string, outcome: PredictionLogOutcome, records?: number) => void;
  /** A redaction rule that matched nothing in a record (counted; logged once). */
  readonly unmatched: (endpoint: string, field: string) => void;
  readonly warn: (fields: Record<string, unknown>, message: string) => void;
}

/** Records taken from the queue per turn (bounded work per setImmediate). */
const batchLimit = 256;

const filePattern = /^predictions-(\d{6,})\.jsonl$/;

export function predictionLogFileName(seq: number): string {
  return `predictions-${String(seq).padStart(6, '0')}.jsonl`;
}

interface EndpointFile {
  readonly dir: string;
  seq: number;
  size: number;
  handle: FileHandle | null;
  /** A failure was logged (once per endpoint). */
  warned: boolean;
}

export class PredictionLogWriter {
  private readonly ring: (PredictionLogItem | undefined)[];
  private head = 0;
  private size = 0;
  private readonly files = new Map<string, EndpointFile>();
  private draining: Promise<void> | null = null;
  private scheduled = false;
  private closed = false;

  constructor(private readonly options: PredictionLogWriterOptions) {
    this.ring = new Array<PredictionLogItem | undefined>(options.capacity ?? 1_024);
  }

  /** Queued records now. */
  get queued(): number {
    return this.size;
  }

  /** Queues a record (false: the queue was full or the writer closed; counted as dropped). */
  offer(item: PredictionLogItem): boolean {
    const capacity = this.ring.length;
    if (this.size === capacity || this.closed) {
      this.options.count(item.endpoint, 'dropped');
      return false;
    }
    this.ring[(this.head + this.size) % capacity] = item;
    this.size += 1;
    if (!this.scheduled && this.draining === null) {
      this.scheduled = true;
      setImmediate(drainSoon, this);
    }
    return true;
  }

  /** Resolves once everything queued now is written (or dropped). */
  async flush(): Promise<void> {
    while (this.size > 0 || this.draining !== null || this.scheduled) {
      if (this.draining === null) this.startDrain();
      await this.draining;
    }
  }

  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
    for (const file of this.files.values()) await file.handle?.close().catch(() => undefined);
    this.files.clear();
  }

  /** @internal the setImmediate callback. */
  startDrain(): void {
    this.scheduled = false;
    if (this.draining !== null || this.size === 0) return;
    this.draining = this.drain().finally(() => {
      this.draining = null;
      if (this.size > 0 && !this.scheduled) {
        this.scheduled = true;
        setImmediate(drainSoon, this);
      }
    });
  }

  private async drain(): Promise<void> {
    const capacity = this.ring.length;
    const taken: PredictionLogItem[] = [];
    while (this.size > 0 && taken.length < batchLimit) {
      taken.push(this.ring[this.head]!);
      this.ring[this.head] = undefined;
      this.head = (this.head + 1) % capacity;
      this.size -= 1;
    }
    // One write per endpoint and batch, in arrival order within each.
    const byEndpoint = new Map<string, PredictionLogItem[]>();
    for (const item of taken) {
      const list = byEndpoint.get(item.endpoint);
      if (list === undefined) byEndpoint.set(item.endpoint, [item]);
      else list.push(item);
    }
    for (const [endpoint, items] of byEndpoint) await this.writeEndpoint(endpoint, items);
  }

  private async writeEndpoint(
    endpoint: string,
    items: readonly PredictionLogItem[],
  ): Promise<void> {
    const count = this.options.count;
    let file: EndpointFile | undefined;
    let done = 0;
    try {
      file = await this.fileOf(endpoint);
      let pending: string[] = [];
      let pendingBytes = 0;
      for (const item of items) {
        const line = this.lineOf(item);
        const bytes = Buffer.byteLength(line);
        const { maxFileBytes, maxFiles } = item.config;
        if (bytes > maxFileBytes) {
          count(endpoint, 'too-large');
          done += 1;
          continue;
        }
        if (file.size + pendingBytes + bytes > maxFileBytes) {
          await this.append(file, pending, pendingBytes);
          if (pending.length > 0) count(endpoint, 'written', pending.length);
          done += pending.length;
          pending = [];
          pendingBytes = 0;
          await this.rotate(file, maxFiles);
        }
        pending.push(line);
        pendingBytes += bytes;
      }
      await this.append(file, pending, pendingBytes);
      if (pending.length > 0) count(endpoint, 'written', pending.length);
    } catch (error) {
      // The rest of the batch is lost (counted); the next one tries again on a fresh handle.
      count(endpoint, 'failed', items.length - done);
      if (file !== undefined) {
        await file.handle?.close().catch(() => undefined);
        file.handle = null;
      }
      const warned = file?.warned ?? false;
      if (file !== undefined) file.warned = true;
      if (!warned) {
        this.options.warn(
          { endpoint, error: (error as Error).message },
          'prediction log write failed; later failures are counted, not logged',
        );
      }
    }
  }

  private lineOf(item: PredictionLogItem): string {
    const request = item.request === null ? null : parsed(item.request);
    const answer = item.answer === null ? null : parsed(item.answer);
    const parts = redactRecord(request, answer, item.config.redact, item.features);
    for (const field of parts.unmatched) this.options.unmatched(item.endpoint, field);
    const record: Record<string, unknown> = {
      time: new Date(item.timeMs).toISOString(),
      requestId: item.requestId,
      endpoint: item.endpoint,
      model: item.model,
      version: item.version,
      status: item.status,
      latencyMs: Math.round(item.latencyMs * 1000) / 1000,
    };
    if (item.slice !== null) record.slice = item.slice;
    record.inputs = parts.inputs;
    if (parts.inputsOmitted !== null) record.inputsOmitted = parts.inputsOmitted;
    if (parts.parameters !== null) record.parameters = parts.parameters;
    record.outputs = parts.outputs;
    return `${JSON.stringify(record)}\n`;
  }

  private async fileOf(endpoint: string): Promise<EndpointFile> {
    let file = this.files.get(endpoint);
    if (file === undefined) {
      const dir = join(this.options.dir, endpoint);
      await mkdir(dir, { recursive: true });
      const seqs = await fileSeqs(dir);
      const seq = seqs.at(-1) ?? 1;
      const size = seqs.length === 0 ? 0 : await sizeOf(join(dir, predictionLogFileName(seq)));
      file = { dir, seq, size, handle: null, warned: false };
      this.files.set(endpoint, file);
    }
    file.handle ??= await open(join(file.dir, predictionLogFileName(file.seq)), 'a');
    return file;
  }

  private async append(file: EndpointFile, lines: readonly string[], bytes: number): Promise<void> {
    if (lines.length === 0) return;
    file.handle ??= await open(join(file.dir, predictionLogFileName(file.seq)), 'a');
    await file.handle.write(lines.join(''));
    file.size += bytes;
  }

  /** Opens the next file and deletes those beyond `maxFiles` (the oldest). */
  private async rotate(file: EndpointFile, maxFiles: number): Promise<void> {
    await file.handle?.close();
    file.handle = null;
    file.seq += 1;
    file.size = 0;
    file.handle = await open(join(file.dir, predictionLogFileName(file.seq)), 'a');
    for (const seq of await fileSeqs(file.dir)) {
      if (seq > file.seq - maxFiles) break;
      await unlink(join(file.dir, predictionLogFileName(seq))).catch(() => undefined);
    }
  }
}

function drainSoon(writer: PredictionLogWriter): void {
  writer.startDrain();
}

function parsed(body: Buffer): unknown {
  const result = parseJsonLenient(body);
  return result.ok ? result.value : null;
}

/** The sequence numbers of an endpoint's log files, ascending. */
async function fileSeqs(dir: string): Promise<number[]> {
  const names = await readdir(dir).catch(() => [] as string[]);
  return names
    .map((name) => filePattern.exec(name)?.[1])
    .filter((seq): seq is string => seq !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}
