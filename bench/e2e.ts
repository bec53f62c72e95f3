// `npm run bench -- e2e`: Open Inference Protocol v2 infer on an XGBoost endpoint, through
// the gateway vs straight to the worker, on this machine's loopback.
//
// 1. closed loop at fixed concurrency → each path's maximum throughput, p50/p99;
// 2. open loop at half the gateway's maximum throughput, on both paths → the gateway's
//    added p99 (gateway p99 − worker p99). Goal: ≤ 1 ms.

import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startPlatform } from '../src/control/start-platform.ts';
import { readArtifact, register, call } from '../test/helpers/platform.ts';
import { closedLoop, openLoop, type LoadResult, type LoadTarget } from './_load.ts';
import { goal, percentile, table } from './_report.ts';

const root = new URL('../', import.meta.url).pathname;

function option(args: readonly string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

function row(label: string, r: LoadResult): (string | number)[] {
  const l = r.latenciesMs;
  return [
    label,
    r.rps,
    percentile(Array.from(l), 50),
    percentile(Array.from(l), 95),
    percentile(Array.from(l), 99),
    r.errors,
  ];
}

export async function run(args: readonly string[]): Promise<void> {
  const concurrency = option(args, 'concurrency', 16);
  const seconds = option(args, 'seconds', 5);
  const home = await mkdtemp(join(tmpdir(), 'kiln-bench-e2e-'));
  const platform = await startPlatform({
    home,
    host: '127.0.0.1',
    port: 0,
    gatewayPort: 0,
    dev: true,
  });
  try {
    const benchModel = `${root}fixtures/trees/bench-fraud.ubj`;
    const modelPath = existsSync(benchModel)
      ? benchModel
      : `${root}fixtures/registry/xgb-binary.json`;
    const files = await readArtifact(modelPath);
    const registered = await register(platform.url, 'bench', 'xgboost', files);
    if (registered.status !== 201) throw new Error(JSON.stringify(registered.body));
    await call(platform.url, 'PUT', '/api/v1/endpoints/bench', { model: 'bench' });
    let workerUrl = '';
    for (let i = 0; i < 600 && workerUrl === ''; i++) {
      const status = (await call(platform.url, 'GET', '/api/v1/endpoints/bench')).body as {
        status: { ready: boolean; replicas: { url: string | null; state: string }[] };
      };
      const ready = status.status.replicas.find((r) => r.state === 'ready');
      if (status.status.ready && ready?.url) {
        const gw = await fetch(`${platform.gatewayUrl}/v2/models/bench/ready`);
        await gw.arrayBuffer();
        if (gw.status === 200) workerUrl = ready.url;
      }
      if (workerUrl === '') await new Promise((r) => setTimeout(r, 100));
    }
    if (workerUrl === '') throw new Error('the bench endpoint never became ready');
    const metadata = (await (await fetch(`${workerUrl}/v2/models/bench`)).json()) as {
      inputs: { name: string; shape: number[] }[];
    };
    const input = metadata.inputs[0];
    const features = input?.shape[1] ?? 5;
    const rowValues = Array.from({ length: features }, (_, i) => (i % 3 === 0 ? 0.5 : -0.25 * i));
    const body = JSON.stringify({
      inputs: [
        { name: input?.name ?? 'input', shape: [1, features], datatype: 'FP32', data: rowValues },
      ],
    });
    const gateway: LoadTarget = {
      origin: platform.gatewayUrl,
      path: '/v2/models/bench/infer',
      body,
    };
    const direct: LoadTarget = { origin: workerUrl, path: '/v2/models/bench/infer', body };

    console.log(`model ${modelPath.replace(root, '')}: ${features} features; one row per request`);
    console.log(`warming up…`);
    await closedLoop(gateway, concurrency, 1000);
    await closedLoop(direct, concurrency, 1000);

    console.log(`\nmaximum throughput, closed loop, concurrency ${concurrency}, ${seconds} s each`);
    const maxGateway = await closedLoop(gateway, concurrency, seconds * 1000);
    const maxDirect = await closedLoop(direct, concurrency, seconds * 1000);
    console.log(
      table(
        ['path', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'errors'],
        [row('gateway → worker', maxGateway), row('worker directly', maxDirect)],
      ),
    );
    console.log(`gateway throughput / direct: ${(maxGateway.rps / maxDirect.rps).toFixed(2)}×`);

    const rate = Math.max(50, Math.floor(maxGateway.rps / 2));
    console.log(
      `\nhalf of the gateway's maximum: open loop at ${rate} req/s, ${seconds * 2} s each`,
    );
    const halfGateway = await openLoop(gateway, rate, seconds * 2000);
    const halfDirect = await openLoop(direct, rate, seconds * 2000);
    console.log(
      table(
        ['path', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'errors'],
        [row('gateway → worker', halfGateway), row('worker directly', halfDirect)],
      ),
    );
    const addedP50 =
      percentile(Array.from(halfGateway.latenciesMs), 50) -
      percentile(Array.from(halfDirect.latenciesMs), 50);
    const addedP99 =
      percentile(Array.from(halfGateway.latenciesMs), 99) -
      percentile(Array.from(halfDirect.latenciesMs), 99);
    console.log(
      `gateway added latency at ${rate} req/s: p50 ${addedP50.toFixed(3)} ms, p99 ${addedP99.toFixed(3)} ms`,
    );
    console.log("(load generator, gateway and worker share this machine's 2 cores)");
    const sweep = args.includes('--sweep') ? [0.1, 0.2, 0.3, 0.4] : [];
    if (sweep.length > 0) {
      const rows: (string | number)[][] = [];
      for (const fraction of sweep) {
        const r = Math.floor(maxGateway.rps * fraction);
        const g = await openLoop(gateway, r, seconds * 1000);
        const d = await openLoop(direct, r, seconds * 1000);
        const p99g = percentile(Array.from(g.latenciesMs), 99);
        const p99d = percentile(Array.from(d.latenciesMs), 99);
        rows.push([`${Math.round(fraction * 100)}% (${r}/s)`, p99g, p99d, p99g - p99d]);
      }
      console.log('\nadded p99 by offered load (fraction of the gateway maximum)');
      console.log(table(['load', 'gateway p99', 'direct p99', 'added p99 ms'], rows));
    }
    goal('e2e', 'gateway_added_p99_ms', addedP99, '<=', 1);
  } finally {
    await platform.close();
    await rm(home, { recursive: true, force: true });
  }
}
