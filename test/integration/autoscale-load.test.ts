// Autoscaling end to end on real workers: an endpoint with a policy scales up under a load
// sent through the gateway and back down to its minimum after it, with a bounded number of
// scale events and no failed request — on `concurrency` (measured by the gateway and
// reported every second) and on `queue-depth` (measured by the workers and polled by the
// control plane). CPU is tested on an LLM endpoint (autoscale-llm.test.ts): a tree
// worker on this shared machine is limited by everything but its CPU (~3 % of a core under
// this load, ~1 % idle: too close to tell apart).
//
// The load is made steady by the model's serving config, not by timing: an XGBoost endpoint
// with dynamic batching that waits 500 ms for a batch to fill (and it never fills: 64 rows,
// 8 one-row clients). So each of 8 closed-loop clients spends most of its time waiting in a
// worker's batcher, however slow the machine: the gateways see several requests in flight
// and the workers several queued (measured here: 3–5 of each with 3 replicas, more with
// fewer). With a target of 0.5 per replica that is well over the maximum of 3; once the
// load stops, the signal falls to 0 and the endpoint goes back to 1.
// (With 100 ms batches and a target of 2, a busy machine's slow clients left the signal
// hovering at the target, and the count followed it up and down: right for the signal, no
// test of a steady load.)

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { call, registerFixture, testPlatform } from '../helpers/platform.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;
const expected = JSON.parse(readFileSync(`${fixtures}expected.json`, 'utf8')) as {
  xgboost: { inputs: (number | null)[][]; probabilities: number[] };
};
// Rows without missing values (JSON has no NaN to send them as).
const rows = expected.xgboost.inputs
  .map((input, i) => ({ input, probability: expected.xgboost.probabilities[i]! }))
  .filter((row): row is { input: number[]; probability: number } =>
    row.input.every((v) => v !== null),
  );

const platform = await testPlatform({ gateway: true });
await registerFixture(platform.url, 'fraud', 'xgboost', 'xgb-binary.json');

interface EndpointStatus {
  status: { readyReplicas: number; replicas: { state: string }[] };
}

interface ScaleEventBody {
  kind: string;
  from: number;
  to: number;
  mode: string;
  reason: string;
}

async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

async function status(endpoint: string): Promise<EndpointStatus['status']> {
  const response = await call(platform.url, 'GET', `/api/v1/endpoints/${endpoint}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return (response.body as EndpointStatus).status;
}

async function scaleEvents(endpoint: string): Promise<ScaleEventBody[]> {
  const response = await call(platform.url, 'GET', `/api/v1/endpoints/${endpoint}/scale/events`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  // Newest first: returned oldest first.
  return (response.body as { items: ScaleEventBody[] }).items.reverse();
}

/**
 * 8 closed-loop clients through the gateway, each request `rowsPerRequest` fixture rows;
 * every answer checked against XGBoost's probabilities.
 */
class Load {
  answered = 0;
  sent = 0;
  readonly failures: string[] = [];
  private stopped = false;
  private readonly clients: Promise<void>[];

  constructor(endpoint: string, rowsPerRequest: number, clients = 8) {
    const url = `${platform.gatewayUrl}/v2/models/${endpoint}/infer`;
    this.clients = Array.from({ length: clients }, async (_, c) => {
      for (let i = c; !this.stopped; i += clients) {
        const sent = Array.from({ length: rowsPerRequest }, (_, r) => rows[(i + r) % rows.length]!);
        this.sent++;
        try {
          const response = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              inputs: [
                {
                  name: 'input',
                  datatype: 'FP32',
                  shape: [rowsPerRequest, 5],
                  data: sent.flatMap((row) => row.input),
                },
              ],
            }),
          });
          const body = (await response.json()) as {
            outputs?: { data: number[] }[];
            error?: string;
          };
          const got = body.outputs?.[0]?.data ?? [];
          const wrong = sent.findIndex(
            (row, r) => !(Math.abs((got[r] ?? Number.NaN) - row.probability) <= 1e-5),
          );
          if (response.status !== 200) this.failures.push(`${response.status}: ${body.error}`);
          else if (got.length !== rowsPerRequest || wrong >= 0)
            this.failures.push(`request ${i}, row ${wrong}: ${got[wrong]}`);
          else this.answered++;
        } catch (error) {
          this.failures.push(String(error));
        }
      }
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.clients);
  }
}

/**
 * Every request waits half a second in its worker's batcher (64 rows never fill with 8
 * one-row clients): so long that whatever time a client takes between requests on a busy
 * machine, the requests spend most of their life in flight at the gateway and queued at a
 * worker.
 */
const slowBatches = { maxBatchSize: 64, maxDelayMicros: 500_000, maxQueue: 1000 };

async function scalesUpAndDown(
  endpoint: string,
  autoscale: Record<string, unknown>,
  { maxReplicas = 3, batching = slowBatches }: { maxReplicas?: number; batching?: unknown } = {},
): Promise<void> {
  const target = Number(autoscale.target ?? 0.5);
  const deployed = await call(platform.url, 'PUT', `/api/v1/endpoints/${endpoint}`, {
    model: 'fraud',
    replicas: 1,
    config: {
      batching,
      autoscale: {
        minReplicas: 1,
        maxReplicas,
        target: 0.5,
        stableWindowMs: 6_000,
        panicWindowMs: 2_000,
        scaleDownDelayMs: 3_000,
        ...autoscale,
      },
    },
  });
  assert.ok(deployed.status === 200 || deployed.status === 201, JSON.stringify(deployed.body));
  await waitUntil(`${endpoint} ready at the gateway`, async () => {
    const ready = await fetch(`${platform.gatewayUrl}/v2/models/${endpoint}/ready`);
    await ready.arrayBuffer();
    return ready.status === 200 && (await status(endpoint)).readyReplicas === 1;
  });

  // The autoscaler sees the idle endpoint's signal below its target before any load (a
  // worker signal too: the poller reaches the ready worker, whose loading CPU is not
  // counted), and has not scaled: what follows is the load's doing.
  const key = { concurrency: 'concurrency', 'queue-depth': 'queueDepth', cpu: 'cpu' }[
    autoscale.signal as string
  ]!;
  let idle = Number.NaN;
  await waitUntil(`the idle endpoint's ${key} measured below the target`, async () => {
    const scale = await call(platform.url, 'GET', `/api/v1/endpoints/${endpoint}/scale`);
    const signals = (scale.body as { signals: Record<string, unknown> | null }).signals;
    idle = signals?.readyReplicas === 1 ? Number(signals[key] ?? Number.NaN) : Number.NaN;
    return idle < target;
  });
  console.log(`${endpoint} idle: ${key} ${idle}`);
  assert.deepEqual(
    (await scaleEvents(endpoint)).filter((e) => e.kind !== 'manual'),
    [],
    'no scaling before the load',
  );
  const load = new Load(endpoint, 1);
  try {
    await waitUntil(`${maxReplicas} replicas ready under the load`, async () => {
      return (await status(endpoint)).readyReplicas === maxReplicas;
    });
    // All three answer: the load goes on through the new replicas for a while.
    const before = load.answered;
    await waitUntil('answers from the scaled-up endpoint', () =>
      Promise.resolve(load.answered >= before + 30),
    );
  } finally {
    await load.stop();
  }
  await waitUntil('back to 1 replica after the load', async () => {
    const now = await status(endpoint);
    return now.readyReplicas === 1 && now.replicas.length === 1;
  });

  assert.deepEqual(load.failures, [], `${load.failures.length} of ${load.sent} requests failed`);
  const events = await scaleEvents(endpoint);
  const changes = events.filter((e) => e.kind === 'scale-up' || e.kind === 'scale-down');
  console.log(
    `${endpoint}: ${load.answered} answers, scale events: ${changes
      .map((e) => `${e.from}→${e.to} (${e.mode}: ${e.reason})`)
      .join('; ')}`,
  );
  const ups = changes.filter((e) => e.kind === 'scale-up');
  const downs = changes.filter((e) => e.kind === 'scale-down');
  // Up to the maximum in at most two steps and down to the minimum in at most two (the
  // scale-down rate halves at most per decision): no flapping in between.
  assert.ok(ups.length >= 1 && ups.length <= 2, `${ups.length} scale-ups`);
  assert.ok(downs.length >= 1 && downs.length <= 2, `${downs.length} scale-downs`);
  assert.ok(
    changes.every((e) => e.to >= 1 && e.to <= maxReplicas),
    'always within min and max',
  );
  assert.equal(ups.at(-1)?.to, maxReplicas);
  assert.equal(downs.at(-1)?.to, 1);
  // Every scale-up came before every scale-down: one rise, one fall.
  const lastUp = changes.lastIndexOf(ups.at(-1)!);
  const firstDown = changes.indexOf(downs[0]!);
  assert.ok(lastUp < firstDown, 'up, then down');
}

test('concurrency: scales up under load through the gateway and back down after it', async () => {
  await scalesUpAndDown('conc', { signal: 'concurrency' });
});

test('queue-depth (worker-reported): scales up under load and back down after it', async () => {
  await scalesUpAndDown('queue', { signal: 'queue-depth' });
});

test('slo: sized from the service time the workers measure (busy CPU per answer)', async () => {
  // Real workers: the gateways report arrivals and answers, the poller the workers' CPU and
  // threads; the decision names the service time it sized with. At this load the answer is a
  // replica or two, whatever the machine: this checks that the measurement reaches the
  // decision and is a real one, not the count (autoscaler.test.ts has exact counts).
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/slo', {
    model: 'fraud',
    replicas: 1,
    config: {
      autoscale: {
        minReplicas: 1,
        maxReplicas: 3,
        signal: 'slo',
        slo: { latencyMs: 1000 },
        stableWindowMs: 6_000,
        panicWindowMs: 2_000,
      },
    },
  });
  assert.ok(deployed.status === 200 || deployed.status === 201, JSON.stringify(deployed.body));
  await waitUntil('slo ready at the gateway', async () => {
    const ready = await fetch(`${platform.gatewayUrl}/v2/models/slo/ready`);
    await ready.arrayBuffer();
    return ready.status === 200;
  });
  const load = new Load('slo', 1);
  const startedMs = Date.now();
  let sized: RegExpExecArray | null = null;
  try {
    await waitUntil('a decision sized from a measured service time', async () => {
      const scale = await call(platform.url, 'GET', '/api/v1/endpoints/slo/scale');
      const reason = (scale.body as { lastDecision: { reason: string } | null }).lastDecision
        ?.reason;
      sized =
        /([\d.]+) requests\/s \(6 s mean\) × ([\d.]+) ms service → (\d+) for 99\.90 % within 1000 ms/.exec(
          reason ?? '',
        );
      return sized !== null && load.answered >= 200;
    });
  } finally {
    await load.stop();
  }
  const elapsedMs = Date.now() - startedMs;
  const [, rate, serviceMs, replicas] = sized!;
  console.log(`slo: ${rate} requests/s × ${serviceMs} ms service → ${replicas} replicas`);
  assert.deepEqual(load.failures, [], `${load.failures.length} of ${load.sent} requests failed`);
  // A request holds its worker's CPU for part of its round trip: more than nothing, less than
  // the clients' mean latency (8 closed-loop clients: 8 × elapsed ÷ answers).
  const meanLatencyMs = (8 * elapsedMs) / load.answered;
  assert.ok(Number(serviceMs) > 0, `service ${serviceMs} ms`);
  assert.ok(
    Number(serviceMs) < meanLatencyMs,
    `service ${serviceMs} ms, latency ${meanLatencyMs} ms`,
  );
  assert.ok(Number(rate) > 0);
  assert.ok(Number(replicas) >= 1 && Number(replicas) <= 3);
});
