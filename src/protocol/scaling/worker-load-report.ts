// The load a worker reports for autoscaling (issue 14): the JSON body of `GET /kiln/v1/load`
// on every worker (trees, ONNX, LLM). The worker writes it (worker/worker-load.ts) and the
// control plane's poller reads it (control/autoscale/worker-load-poller.ts): declared once
// so the two sides cannot drift apart. An hf-llm worker's body also carries the router's
// fields (protocol/llm/llm-load-report.ts: running, waiting, KV blocks, `inflight`), which
// the gateway's LLM router reads; the two sets of names do not overlap but for case
// (`inflight` there, `inFlight` here, both the same count).

export const workerLoadPath = '/kiln/v1/load';

export interface WorkerLoadReport {
  /** Requests the worker holds now: being read, queued, running or being written out. */
  readonly inFlight: number;
  /** Of those, waiting to run: the batcher's queues, the LLM engine's waiting requests. */
  readonly queueDepth: number;
  /** Process CPU time over about the last second, in cores (0..threads; GC threads included). */
  readonly cpu: number;
  /** Cores the worker computes on at once: `cpu / threads` is its utilization (0..1). */
  readonly threads: number;
  /** Accelerator utilization 0..1; null: the worker has none. */
  readonly accelerator: number | null;
  /** Worker-specific metrics by name, e.g. an LLM's `tokens_per_second`, `kv_blocks_used`. */
  readonly custom: Readonly<Record<string, number>>;
}

/**
 * Reads a report (the parsed JSON body of `/kiln/v1/load`); null when it is none: a field
 * missing, negative or not a finite number. Unknown fields are ignored (an LLM worker's
 * router fields), and so are custom entries that are not finite numbers.
 */
export function parseWorkerLoadReport(value: unknown): WorkerLoadReport | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const record = value as Record<string, unknown>;
  const inFlight = amount(record.inFlight);
  const queueDepth = amount(record.queueDepth);
  const cpu = amount(record.cpu);
  const threads = amount(record.threads);
  if (inFlight === null || queueDepth === null || cpu === null || threads === null) return null;
  if (threads === 0) return null;
  let accelerator: number | null = null;
  if (record.accelerator !== null && record.accelerator !== undefined) {
    accelerator = amount(record.accelerator);
    if (accelerator === null) return null;
  }
  const custom: Record<string, number> = {};
  const given = record.custom;
  if (typeof given === 'object' && given !== null && !Array.isArray(given)) {
    for (const [name, entry] of Object.entries(given as Record<string, unknown>)) {
      if (typeof entry === 'number' && Number.isFinite(entry)) custom[name] = entry;
    }
  }
  return { inFlight, queueDepth, cpu, threads, accelerator, custom };
}

function amount(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : null;
}
