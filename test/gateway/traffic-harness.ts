// Test helpers for traffic management at the gateway: snapshot routes with a traffic policy,
// and a stub control plane that records the traffic reports gateways post to it.

import { createServer, type IncomingHttpHeaders } from 'node:http';
import type {
  EndpointRoute,
  ShadowRoute,
  VariantRoute,
} from '../../src/gateway/routing-snapshot.ts';
import type {
  TrafficReport,
  VersionTrafficReport,
  WindowCounts,
} from '../../src/protocol/traffic/traffic-report.ts';
import {
  endpointRoute,
  replicaRoute,
  serveOnLoopback,
  testSchema,
  type FakeWorker,
} from './gateway-harness.ts';

/** Canned v2 answers whose first output tells the versions apart. */
export function answerOf(value: number, rows = 1): unknown {
  return {
    model_name: 'fraud',
    outputs: [
      {
        name: 'y',
        datatype: 'FP32',
        shape: [rows, 1],
        data: Array.from({ length: rows }, () => value),
      },
    ],
  };
}

export function variant(
  worker: FakeWorker | null,
  version: number,
  weight: number,
  model = 'fraud-model',
): VariantRoute {
  return {
    model,
    version,
    weight,
    format: 'onnx',
    schema: testSchema,
    replicas:
      worker === null ? [] : [{ ...replicaRoute(worker, `v${version}-r1`, version), model }],
  };
}

export function shadowOf(
  worker: FakeWorker,
  version: number,
  sampleRate: number,
  model = 'fraud-model',
): ShadowRoute {
  return {
    model,
    version,
    sampleRate,
    format: 'onnx',
    schema: testSchema,
    replicas: [{ ...replicaRoute(worker, `s${version}-r1`, version), model }],
  };
}

/** The `fraud` endpoint (stable version = the first variant's) with a traffic policy. */
export function policyEndpoint(
  variants: readonly VariantRoute[],
  policy: {
    salt?: string;
    keyPath?: string | null;
    sliceKey?: string | null;
    slicePath?: string | null;
    shadows?: readonly ShadowRoute[];
  } = {},
): EndpointRoute {
  const stable = variants[0]!;
  return endpointRoute({
    version: stable.version,
    replicas: stable.replicas,
    traffic: {
      salt: policy.salt ?? 'salt-1',
      keyPath: policy.keyPath ?? null,
      sliceKey: policy.sliceKey ?? null,
      slicePath: policy.slicePath ?? null,
      variants,
      shadows: policy.shadows ?? [],
    },
  });
}

export interface StubControlPlane {
  readonly url: string;
  readonly reports: TrafficReport[];
  readonly headers: IncomingHttpHeaders[];
  /** Answer reports with this status (default 204). */
  status: number;
  /** Resolves once `done(reports)` holds (polled on every report). */
  waitFor(done: (reports: readonly TrafficReport[]) => boolean): Promise<void>;
  close(): Promise<void>;
}

export async function stubControlPlane(): Promise<StubControlPlane> {
  const reports: TrafficReport[] = [];
  const headers: IncomingHttpHeaders[] = [];
  const waiters: Array<{ done: (r: readonly TrafficReport[]) => boolean; resolve: () => void }> =
    [];
  const stub = {
    url: '',
    reports,
    headers,
    status: 204,
    waitFor(done: (r: readonly TrafficReport[]) => boolean): Promise<void> {
      if (done(reports)) return Promise.resolve();
      return new Promise<void>((resolve) => waiters.push({ done, resolve }));
    },
    close: () => Promise.resolve(),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/api/v1/traffic/reports') {
        reports.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as TrafficReport);
        headers.push(req.headers);
        for (const waiter of waiters.filter((w) => w.done(reports))) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
      res.writeHead(stub.status);
      res.end();
    });
  });
  const served = await serveOnLoopback(server);
  return Object.assign(stub, { url: served.url, close: served.close });
}

/** Sums of the reports for one endpoint: per 'model:version', overall and per slice. */
export interface VersionTotals {
  requests: number;
  errors: number;
  latencies: number;
  outputs: number;
  slices: Map<string, { requests: number; errors: number; outputs: number }>;
}

export function totals(
  reports: readonly TrafficReport[],
  endpoint = 'fraud',
): Map<string, VersionTotals> {
  const byVersion = new Map<string, VersionTotals>();
  for (const report of reports) {
    for (const e of report.endpoints) {
      if (e.endpoint !== endpoint) continue;
      for (const v of e.versions) addVersion(byVersion, v);
    }
  }
  return byVersion;
}

function addVersion(byVersion: Map<string, VersionTotals>, v: VersionTrafficReport): void {
  const key = `${v.model}:${v.version}`;
  let t = byVersion.get(key);
  if (t === undefined) {
    t = { requests: 0, errors: 0, latencies: 0, outputs: 0, slices: new Map() };
    byVersion.set(key, t);
  }
  t.requests += v.overall.requests;
  t.errors += v.overall.errors;
  t.latencies += sketchCount(v.overall.latencyMs);
  t.outputs += sketchCount(v.overall.outputs);
  for (const [value, counts] of Object.entries(v.slices)) {
    const s = t.slices.get(value) ?? { requests: 0, errors: 0, outputs: 0 };
    s.requests += counts.requests;
    s.errors += counts.errors;
    s.outputs += sketchCount(counts.outputs);
    t.slices.set(value, s);
  }
}

export function sketchCount(sketch: WindowCounts['outputs']): number {
  let count = sketch.zeroCount;
  for (const [, n] of sketch.positive) count += n;
  for (const [, n] of sketch.negative) count += n;
  return count;
}

/** Requests counted for one endpoint over all reports. */
export function requestsCounted(reports: readonly TrafficReport[], endpoint = 'fraud'): number {
  let sum = 0;
  for (const t of totals(reports, endpoint).values()) sum += t.requests;
  return sum;
}
