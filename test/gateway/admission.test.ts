// The concurrency bound's slots: taken only once a request's body is in (clients trickling
// bodies hold none), and given back on every ending — answer, bad request, worker error,
// client gone, upstream timeout, retry on another replica, no replica. Each case runs with
// a bound of 1, so a leaked slot shows as a 429 on the next request. Waits are on what the
// test can observe (metrics, sockets, replies), never on time alone.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import {
  endpointRoute,
  fakeWorker,
  infer,
  replicaRoute,
  snapshot,
  testGateway,
  validRequest,
  type Reply,
} from './gateway-harness.ts';
import { until } from '../helpers/until.ts';

const body = JSON.stringify(validRequest);
const head = (length: number): string =>
  `POST /v2/models/fraud/infer HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;

function codeOf(reply: Reply): string | undefined {
  return (reply.json as { code?: string } | undefined)?.code;
}

async function gauge(
  gateway: { metricsText(): Promise<string> },
  name: string,
): Promise<number | null> {
  const text = await gateway.metricsText();
  const match = new RegExp(`^${name}\\{endpoint="fraud"\\} (\\d+)$`, 'm').exec(text);
  return match === null ? null : Number(match[1]);
}

async function open(url: string): Promise<Socket> {
  const { port, hostname } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  return socket;
}

/** A port where nothing listens (a worker that died). */
async function deadUrl(): Promise<string> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

test(
  'clients trickling their bodies hold no slot; a body completed while the endpoint is full gets 429 + Retry-After',
  { timeout: 60_000 },
  async () => {
    const worker = await fakeWorker('ok');
    const gateway = await testGateway(
      snapshot(1, [endpointRoute({ maxConcurrency: 2, replicas: [replicaRoute(worker, 'r1')] })]),
    );
    assert.equal(await gauge(gateway, 'kiln_gateway_max_concurrency'), 2);
    // 40 clients, 20 times the bound, each with its headers and a few bytes of its body in.
    const slow = await Promise.all(Array.from({ length: 40 }, () => open(gateway.url)));
    const answers = slow.map(() => '');
    slow.forEach((socket, i) => {
      socket.on('data', (chunk: Buffer) => (answers[i] += chunk.toString()));
      socket.write(head(body.length) + body.slice(0, 5));
    });
    await until(async () => {
      const text = await gateway.metricsText();
      return /kiln_gateway_inflight_requests\{endpoint="fraud"\} 40\n/.test(text);
    }, 'all 40 uploads received');
    assert.equal(await gauge(gateway, 'kiln_gateway_admitted_requests'), 0);

    // Whole requests are served meanwhile, two at a time (the bound), round after round.
    for (let round = 0; round < 5; round++) {
      const replies = await Promise.all([infer(gateway.url), infer(gateway.url)]);
      assert.deepEqual(
        replies.map((r) => r.status),
        [200, 200],
      );
    }

    // Two requests held at the worker fill the bound; a slow body that completes now is
    // refused after all, with the door's answer.
    worker.behavior = 'hold';
    const held = [infer(gateway.url), infer(gateway.url)];
    await worker.waitForRequests(12);
    assert.equal(await gauge(gateway, 'kiln_gateway_admitted_requests'), 2);
    slow[0]!.write(body.slice(5));
    await until(() => /\r\n\r\n/.test(answers[0]!), 'the answer to the completed body');
    assert.match(answers[0]!, /^HTTP\/1\.1 429/);
    assert.match(answers[0]!, /^retry-after: 1\r$/im);
    assert.match(answers[0]!, /KILN_ENDPOINT_BUSY/);
    assert.equal(worker.received.length, 12);

    // Once the held ones are answered, the other slow bodies complete and are served.
    worker.behavior = 'ok';
    worker.release();
    for (const reply of await Promise.all(held)) assert.equal(reply.status, 200);
    for (const socket of slow.slice(1, 3)) socket.write(body.slice(5));
    await until(
      () => answers.slice(1, 3).every((a) => /\r\n\r\n/.test(a)),
      'the answers to two completed bodies',
    );
    for (const answer of answers.slice(1, 3)) assert.match(answer, /^HTTP\/1\.1 200/);
    for (const socket of slow) socket.destroy();
    await until(
      async () => (await gauge(gateway, 'kiln_gateway_admitted_requests')) === 0,
      'no slot held',
    );
    const metrics = await gateway.metricsText();
    assert.match(metrics, /kiln_gateway_rejected_total\{endpoint="fraud",reason="busy"\} 1\n/);
  },
);

test(
  'every ending gives the slot back: answer, bad request, worker error, client gone, timeout, retry, no replica',
  { timeout: 60_000 },
  async () => {
    let version = 1;
    const routes = (replicas: ReturnType<typeof replicaRoute>[]) =>
      snapshot(version++, [endpointRoute({ maxConcurrency: 1, replicas })]);
    const ok = await fakeWorker('ok');
    const gateway = await testGateway(routes([replicaRoute(ok, 'ok')]), {
      upstreamTimeoutMs: 300,
    });
    const use = (replicas: ReturnType<typeof replicaRoute>[]): void => {
      assert.equal(gateway.setSnapshot(routes(replicas)), true);
    };
    /** The slot is free again: nothing admitted, and a whole request is let in and served. */
    const slotFree = async (what: string): Promise<void> => {
      await until(
        async () => (await gauge(gateway, 'kiln_gateway_admitted_requests')) === 0,
        `${what}: slot given back`,
      );
      use([replicaRoute(ok, 'ok')]);
      const next = await infer(gateway.url);
      assert.equal(next.status, 200, `${what}: ${next.text}`);
    };

    assert.equal((await infer(gateway.url)).status, 200);
    await slotFree('answer');

    const bad = await infer(gateway.url, { inputs: [{ name: 'nope' }] });
    assert.equal(bad.status, 400);
    await slotFree('bad request');

    const failing = await fakeWorker('ok', { error: 'boom', code: 'KILN_INFERENCE_FAILED' }, 500);
    use([replicaRoute(failing, 'failing')]);
    assert.equal((await infer(gateway.url)).status, 500);
    await slotFree('worker error');

    for (const channel of [false, true]) {
      const holding = await fakeWorker('hold', undefined, 200, { channel });
      use([replicaRoute(holding, 'holding')]);
      const aborter = new AbortController();
      const gone = fetch(`${gateway.url}/v2/models/fraud/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        signal: aborter.signal,
      }).catch(() => null);
      await holding.waitForRequests(1);
      assert.equal(await gauge(gateway, 'kiln_gateway_admitted_requests'), 1);
      const busy = await infer(gateway.url);
      assert.equal(busy.status, 429);
      assert.equal(busy.headers.get('retry-after'), '1');
      aborter.abort();
      await gone;
      await slotFree(channel ? 'client gone (channel)' : 'client gone (HTTP)');
      holding.release();
    }

    const hanging = await fakeWorker('hang');
    use([replicaRoute(hanging, 'hanging')]);
    const late = await infer(gateway.url);
    assert.equal(late.status, 504);
    assert.equal(codeOf(late), 'KILN_UPSTREAM_TIMEOUT');
    await slotFree('upstream timeout');

    // The first replica tried is dead: the request is retried on the other and answered.
    const crashing = await fakeWorker('destroy');
    use([replicaRoute(crashing, 'crashing'), replicaRoute(ok, 'ok')]);
    for (let i = 0; i < 2; i++) assert.equal((await infer(gateway.url)).status, 200);
    await slotFree('retried on another replica');

    use([replicaRoute({ url: await deadUrl() }, 'dead1'), replicaRoute(crashing, 'dead2')]);
    const lost = await infer(gateway.url);
    assert.equal(lost.status, 503);
    assert.equal(lost.headers.get('retry-after'), '1');
    await slotFree('retry failed too');

    use([]);
    const none = await infer(gateway.url);
    assert.equal(none.status, 503);
    assert.equal(codeOf(none), 'KILN_NO_READY_REPLICA');
    await slotFree('no replica');
  },
);

test(
  "a body refused as busy once it is in gives its team's token back, as a refusal at the door spends none",
  { timeout: 60_000 },
  async () => {
    const worker = await fakeWorker('hold');
    const gateway = await testGateway(
      snapshot(1, [endpointRoute({ maxConcurrency: 1, replicas: [replicaRoute(worker, 'r1')] })], {
        teamLimits: [{ team: 'risk', requestsPerSecond: 0.001, burst: 3 }],
      }),
    );
    // Token 1: a slow body passes the door; token 2: a whole request takes the slot.
    const slow = await open(gateway.url);
    let answer = '';
    slow.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    slow.write(head(body.length) + body.slice(0, 5));
    await until(
      async () => (await gauge(gateway, 'kiln_gateway_inflight_requests')) === 1,
      'the slow upload received',
    );
    const held = infer(gateway.url);
    await worker.waitForRequests(1);
    slow.write(body.slice(5));
    await until(() => /\r\n\r\n/.test(answer), 'the answer to the completed body');
    assert.match(answer, /^HTTP\/1\.1 429/);
    assert.match(answer, /KILN_ENDPOINT_BUSY/);
    slow.destroy();
    worker.behavior = 'ok';
    worker.release();
    assert.equal((await held).status, 200);
    // Token 1 came back: the burst of 3 still has two requests in it.
    const after = [await infer(gateway.url), await infer(gateway.url)];
    assert.deepEqual(
      after.map((r) => [r.status, codeOf(r)]),
      [
        [200, undefined],
        [200, undefined],
      ],
    );
    assert.equal(codeOf(await infer(gateway.url)), 'KILN_RATE_LIMITED');
  },
);
