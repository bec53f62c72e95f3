// The per-request costs of observability measured in isolation, for `npm run bench --
// observability`: on a shared machine the end-to-end throughput swings by more than the 5 %
// being looked for, while the CPU one request's observability work takes is steady. Each
// figure is µs per request on this process's one thread, the same code the servers run:
//
//   sketch   ServingSketches.record (the worker, per answered request marked for drift):
//            one [1, 25] FP32 row and one output, into the overall and one slice's sketches
//   slice    the gateway finding a request's slice value at the drift config's slice path
//            (`$.parameters.country`): the path walked in the body the check parses anyway
//   trace    one traced request's seven spans as the gateway and the worker make them
//            (kiln.gateway + kiln.channel; kiln.worker, queue, batch, runtime, encode, with
//            their attributes) through the SDK's batch processor and the OTLP/HTTP exporter
//            to a local receiver, flushed every 256 requests: the export is in the figure
//
// The request's own CPU (gateway + worker, measured end to end) divides them into the share
// of throughput they cost when serving is CPU-bound.

import type { Tensor } from '../src/core/tensor.ts';
import { SpanKind, traceparentOf } from '../src/observability/tracing/kiln-tracer.ts';
import { startTracing } from '../src/observability/tracing/start-tracing.ts';
import { ServingSketches } from '../src/worker/drift/serving-sketches.ts';
import { parseJsonLenient } from '../src/protocol/v2/lenient-json.ts';
import { compileCallerKey, keyAtPath } from '../src/traffic/caller-key.ts';

/** Seeded standard normal rows (same every run), `count` × `width`. */
function rows(count: number, width: number): Float32Array[] {
  let state = 0x9e3779b9;
  const uniform = (): number => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return ((state >>> 0) + 0.5) / 4294967296;
  };
  return Array.from({ length: count }, () =>
    Float32Array.from(
      { length: width },
      () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform()),
    ),
  );
}

/** µs per call of `body(i)` over `calls` calls, after a warm-up of a tenth of them. */
export function microsPerCall(calls: number, body: (i: number) => void): number {
  for (let i = 0; i < Math.ceil(calls / 10); i++) body(i);
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) body(i);
  return Number(process.hrtime.bigint() - start) / 1000 / calls;
}

/**
 * µs per slice value read from `body` at `slicePath`, as the gateway does for drift: the path
 * walked in the parsed body. The parse itself is not the slice's cost: the gateway checks
 * the body it parsed for the slice rather than parsing it again (infer-exchange.ts).
 */
export function sliceFromBodyMicros(body: string, slicePath: string, calls = 1_000_000): number {
  const compiled = compileCallerKey(slicePath);
  if (!compiled.ok) throw new Error(compiled.problem);
  const segments = compiled.source.segments;
  const parsed = parseJsonLenient(Buffer.from(body));
  if (!parsed.ok) throw new Error(parsed.message);
  let found = 0;
  const micros = microsPerCall(calls, () => {
    if (keyAtPath(parsed.value, segments) !== null) found += 1;
  });
  if (found === 0) throw new Error(`no slice value at ${slicePath}`);
  return micros;
}

/** µs per ServingSketches.record of one `width`-feature row with a slice value. */
export function sketchRecordMicros(calls = 200_000, width = 25): number {
  const sketches = new ServingSketches(
    { replicaId: 'bench-0', endpoint: 'bench', model: 'bench', version: 1 },
    () => ({ featureNames: null }),
  );
  const inputs: Tensor[][] = rows(256, width).map((data) => [
    { name: 'input', datatype: 'FP32', shape: [1, width], data },
  ]);
  const outputs: Tensor[][] = rows(256, 1).map((data) => [
    {
      name: 'predict',
      datatype: 'FP32',
      shape: [1],
      data: data.map((x) => 1 / (1 + Math.exp(-x))),
    },
  ]);
  const slices = ['de', 'fr', 'us', 'jp'];
  return microsPerCall(calls, (i) => {
    sketches.record(slices[i & 3] ?? null, inputs[i & 255] ?? [], outputs[i & 255] ?? []);
    // The control plane takes the sketches every few seconds: start afresh now and then.
    if ((i & 0xffff) === 0xffff) sketches.take();
  });
}

/**
 * µs per traced request (seven spans, exported to `otlpUrl`), and the spans the SDK dropped
 * (its queue full) or could not export.
 */
export async function traceRequestMicros(
  otlpUrl: string,
  requests = 20_000,
): Promise<{ micros: number; exported: number; dropped: number }> {
  const tracing = await startTracing({ serviceName: 'kiln-bench', otlpUrl });
  const tracer = tracing.tracer;
  const one = (i: number): void => {
    const gateway = tracer.startRequest(
      'POST /v2/models/{model}/infer',
      SpanKind.SERVER,
      null,
      undefined,
      {
        'http.request.method': 'POST',
        'http.route': '/v2/models/{model}/infer',
        'url.path': '/v2/models/bench/infer',
        'kiln.endpoint': 'bench',
        'kiln.request_id': `req-${i}`,
      },
    );
    const attempt = tracer.child(gateway, 'kiln.channel', SpanKind.CLIENT, undefined, {
      'kiln.replica': 'bench-0',
      'kiln.version': '1',
      'kiln.model': 'bench',
      'kiln.transport': 'unix',
      'server.address': 'http://127.0.0.1:40000',
    });
    const worker = tracer.continueSampled('kiln.worker', traceparentOf(attempt), undefined, {
      'kiln.endpoint': 'bench',
      'kiln.model': 'bench',
      'kiln.version': '1',
      'kiln.replica': 'bench-0',
      'kiln.request_id': `req-${i}`,
    });
    if (worker !== null) {
      const batchAttributes = {
        'kiln.batch.size': 4,
        'kiln.batch.rows': 4,
        'kiln.request.rows': 1,
      };
      tracer.child(worker, 'kiln.queue').end();
      const batch = tracer.child(
        worker,
        'kiln.batch',
        SpanKind.INTERNAL,
        undefined,
        batchAttributes,
      );
      tracer
        .child(batch, 'kiln.runtime', SpanKind.INTERNAL, undefined, {
          'kiln.runtime': 'trees',
          ...batchAttributes,
        })
        .end();
      batch.end();
      tracer.child(worker, 'kiln.encode').end();
      worker.setAttribute('http.response.status_code', 200);
      worker.end();
    }
    attempt.setAttribute('http.response.status_code', 200);
    attempt.end();
    gateway.setAttribute('kiln.version', '1');
    gateway.setAttribute('http.response.status_code', 200);
    gateway.end();
  };
  for (let i = 0; i < 512; i++) {
    one(i); // warm up
    if ((i & 255) === 255) await tracing.forceFlush();
  }
  await tracing.forceFlush();
  const start = process.hrtime.bigint();
  for (let i = 0; i < requests; i++) {
    one(i);
    if ((i & 255) === 255) await tracing.forceFlush();
  }
  await tracing.forceFlush();
  const micros = Number(process.hrtime.bigint() - start) / 1000 / requests;
  const counts = { ...tracing.counts };
  await tracing.shutdown();
  return {
    micros,
    exported: counts.exported,
    dropped: counts.droppedQueueFull + counts.droppedExportFailed,
  };
}
