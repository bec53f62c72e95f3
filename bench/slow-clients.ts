// `npm run bench -- slow-clients [--clients N] [--seconds S]`: do clients trickling their
// request bodies take the endpoint's concurrency bound from requests that arrive whole?
//
// The platform's `bench` endpoint (XGBoost, batching off) is deployed with no configured
// limit, so it runs under its derived bound (64 for one unbatched replica). Then:
// 1. Baseline: closed loop, 8 connections, `--seconds` (default 3), JavaScript client.
// 2. `--clients` (default 3,000) connections each send an infer request's headers and the
//    first bytes of its body, then one more byte a second (well within the gateway's 30 s
//    client timeout, so none is cut while we measure). The gateway counts them in flight.
// 3. The same closed loop again, while they trickle: statuses and latency.
// A request still uploading holds no slot (it takes one once its body is in), so step 3
// should look like step 1: no 429, the same few milliseconds.

import { connect, type Socket } from 'node:net';

import { closedLoop, type LoadTarget } from './_load.ts';
import { startBenchPlatform } from './_platform.ts';
import { goal, percentile, table } from './_report.ts';

function option(args: readonly string[], name: string, fallback: number): number {
  const i = args.indexOf(`--${name}`);
  const value = i >= 0 ? Number(args[i + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback;
}

async function gatewayGauge(gatewayUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${gatewayUrl}/metrics`)).text();
  const match = new RegExp(`^${name}\\{endpoint="bench"\\} (\\d+)$`, 'm').exec(text);
  return Number(match?.[1] ?? 0);
}

export async function run(args: readonly string[]): Promise<void> {
  const clients = option(args, 'clients', 3000);
  const seconds = option(args, 'seconds', 3);
  const bench = await startBenchPlatform({ tempPrefix: 'kiln-bench-slow-clients-' });
  const sockets: Socket[] = [];
  let trickle: NodeJS.Timeout | null = null;
  try {
    const metadata = (await (await fetch(`${bench.workerUrl}/v2/models/bench`)).json()) as {
      inputs: { name: string; shape: number[] }[];
    };
    const input = metadata.inputs[0];
    const width = input?.shape[1] ?? 32;
    const body = JSON.stringify({
      inputs: [
        {
          name: input?.name ?? 'input',
          shape: [1, width],
          datatype: 'FP32',
          data: Array.from({ length: width }, (_, i) => (i % 7) / 7),
        },
      ],
    });
    const target: LoadTarget = {
      origin: bench.gatewayUrl,
      path: '/v2/models/bench/infer',
      body,
    };
    const view = (await (await fetch(`${bench.platform.url}/api/v1/endpoints/bench`)).json()) as {
      status: { maxConcurrency: number | null; maxConcurrencySource: string | null };
    };
    console.log(
      `endpoint bench: max concurrency ${view.status.maxConcurrency} (${view.status.maxConcurrencySource})`,
    );

    await closedLoop(target, 8, 1000); // warm-up
    const before = await closedLoop(target, 8, seconds * 1000);

    const { hostname, port } = new URL(bench.gatewayUrl);
    const head =
      `POST ${target.path} HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\n\r\n`;
    for (let i = 0; i < clients; i++) {
      const socket = connect(Number(port), hostname);
      socket.on('error', () => undefined);
      socket.write(head + body.slice(0, 10));
      sockets.push(socket);
      if (i % 200 === 199) await new Promise((resolve) => setImmediate(resolve));
    }
    let sent = 10;
    trickle = setInterval(() => {
      if (sent >= body.length - 1) return; // never completes
      const byte = body.slice(sent, sent + 1);
      sent += 1;
      for (const socket of sockets) socket.write(byte);
    }, 1000);
    for (let i = 0; i < 600; i++) {
      if ((await gatewayGauge(bench.gatewayUrl, 'kiln_gateway_inflight_requests')) >= clients)
        break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const uploading = await gatewayGauge(bench.gatewayUrl, 'kiln_gateway_inflight_requests');
    const holding = await gatewayGauge(bench.gatewayUrl, 'kiln_gateway_admitted_requests');
    console.log(
      `${clients} clients trickling bodies: ${uploading} requests in flight at the gateway, ${holding} holding a slot`,
    );
    const during = await closedLoop(target, 8, seconds * 1000);

    const row = (label: string, r: typeof before): (string | number)[] => {
      const l = Array.from(r.latenciesMs);
      const other = Object.entries(r.statuses)
        .filter(([status]) => status !== '200')
        .map(([status, n]) => `${status}: ${n}`)
        .join(', ');
      return [label, r.rps, percentile(l, 50), percentile(l, 99), other || '0'];
    };
    console.log(`closed loop, 8 connections, ${seconds} s, JavaScript client, through the gateway`);
    console.log(
      table(
        ['', 'req/s', 'p50 ms', 'p99 ms', 'not 200'],
        [row('alone', before), row(`beside ${clients} slow uploads`, during)],
      ),
    );
    goal('slow_clients', 'not_200', during.errors, '<=', 0);
    goal('slow_clients', 'p50_ms', percentile(Array.from(during.latenciesMs), 50), '<=', 10);
  } finally {
    if (trickle !== null) clearInterval(trickle);
    for (const socket of sockets) socket.destroy();
    await bench.close();
  }
}
