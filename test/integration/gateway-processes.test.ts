// `kiln up --gateway-processes N` (issue 16): two gateway processes on one port, under real
// load from concurrent clients. Both serve (each process's count of answers is in the merged
// /metrics, and the merged count of an endpoint equals what the clients got); a version swap
// and a scale-down lose no request, because a replica is stopped only once BOTH processes
// acknowledged the snapshot without it; a process killed outright is replaced while the
// other serves, and only requests on its connections fail (at most one per client).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { join } from 'node:path';
import { call, readArtifact, register, testPlatform } from '../helpers/platform.ts';
import { readGatewayRecord } from '../../src/gateway/gateway-record.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;
const platform = await testPlatform({ gateway: true, gatewayProcesses: 2 });
const body = JSON.stringify({
  inputs: [{ name: 'input', shape: [1, 5], datatype: 'FP32', data: [0.1, -0.2, 0.3, -0.4, 0.5] }],
});

async function waitUntil(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`timed out waiting for ${what}`);
}

interface EndpointBody {
  status: { readyReplicas: number; replicas: { version: number; state: string }[] };
}

async function endpointStatus(name: string): Promise<EndpointBody['status']> {
  return ((await call(platform.url, 'GET', `/api/v1/endpoints/${name}`)).body as EndpointBody)
    .status;
}

async function deploy(name: string, model: string, version: number, replicas: number) {
  await call(platform.url, 'PUT', `/api/v1/endpoints/${name}`, {
    model,
    version,
    replicas,
    warmGraceMs: 0,
  });
}

/** Sum of a metric's samples whose labels contain every `key="value"` in `labels`. */
function sample(text: string, metric: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`) && !line.startsWith(`${metric} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

async function gatewayMetrics(): Promise<string> {
  const response = await fetch(`${platform.gatewayUrl}/metrics`);
  return response.text();
}

/** The supervisor's gateway processes (its node:cluster workers), by pid. */
function gatewayProcesses(): number[] {
  const record = readGatewayRecord(join(platform.home, 'gateway'));
  assert.ok(record !== null);
  const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(record.process.pid)], {
    encoding: 'utf8',
  });
  return out
    .split('\n')
    .filter((line) => line.includes('gateway/main.ts'))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

/** Clients sending infer requests back to back until stopped; what they got, counted. */
function load(endpoint: string, clients: number) {
  const state = {
    stop: false,
    ok: 0,
    failures: [] as string[],
    versions: new Map<string, number>(),
  };
  const running = Array.from({ length: clients }, async () => {
    while (!state.stop) {
      try {
        const response = await fetch(`${platform.gatewayUrl}/v2/models/${endpoint}/infer`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        const json = (await response.json()) as { model_version?: string; error?: unknown };
        if (response.status !== 200) {
          state.failures.push(`HTTP ${response.status}: ${JSON.stringify(json.error)}`);
          continue;
        }
        state.ok += 1;
        const version = json.model_version ?? '?';
        state.versions.set(version, (state.versions.get(version) ?? 0) + 1);
      } catch (error) {
        state.failures.push(`network: ${String((error as Error).cause ?? error)}`);
      }
    }
  });
  const moreAnswers = async (count: number): Promise<void> => {
    const before = state.ok;
    await waitUntil(`${count} more answers`, () => Promise.resolve(state.ok >= before + count));
  };
  const finish = async (): Promise<void> => {
    state.stop = true;
    await Promise.all(running);
  };
  return { state, moreAnswers, finish };
}

/** One request on a connection of its own (the cluster hands each new one to the next process). */
function inferOnNewConnection(endpoint: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${platform.gatewayUrl}/v2/models/${endpoint}/infer`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const [file] = await readArtifact(`${fixtures}xgb-binary.json`);
assert.ok(file !== undefined);
assert.equal((await register(platform.url, 'mp-model', 'xgboost', [file])).status, 201);
// Version 2: the same model with other bytes (a trailing newline), so a new artifact.
const data2 = Buffer.concat([file.data, Buffer.from('\n')]);
const file2 = {
  ...file,
  data: data2,
  size: data2.length,
  sha256: createHash('sha256').update(data2).digest('hex'),
};
assert.equal((await register(platform.url, 'mp-model', 'xgboost', [file2])).status, 201);

test('two gateway processes both serve, and /metrics sees the endpoint whole', async () => {
  await deploy('whole', 'mp-model', 1, 1);
  await waitUntil(
    'the endpoint ready',
    async () => (await endpointStatus('whole')).readyReplicas === 1,
  );
  assert.equal(gatewayProcesses().length, 2);
  const traffic = load('whole', 8);
  await traffic.moreAnswers(200);
  await traffic.finish();
  assert.deepEqual(traffic.state.failures, []);

  // A scrape lands on one process; what it answers counts both processes' requests.
  const text = await gatewayMetrics();
  const served = sample(text, 'kiln_gateway_requests_total', { endpoint: 'whole', code: '200' });
  assert.equal(served, traffic.state.ok, 'the merged count is every answer the clients got');
  const perProcess = [0, 1].map((index) =>
    sample(text, 'kiln_gateway_process_requests_total', { process: String(index) }),
  );
  assert.ok(
    perProcess.every((count) => count > 0),
    `both processes served: ${perProcess.join(', ')}`,
  );
  assert.ok(perProcess[0]! + perProcess[1]! >= served);

  // Each process follows the routing snapshot itself: the control plane counts both.
  const control = await (await fetch(`${platform.url}/metrics`)).text();
  const record = readGatewayRecord(join(platform.home, 'gateway'));
  for (const index of [0, 1]) {
    const gateway = `${record?.process.pid}/${index}`;
    assert.ok(
      sample(control, 'kiln_control_routing_acks_total', { gateway }) > 0,
      `acks of gateway ${gateway}`,
    );
  }
});

test('a version swap and a scale-down under load with two gateway processes lose no request', async () => {
  await deploy('swap', 'mp-model', 1, 2);
  await waitUntil(
    'version 1 on both replicas',
    async () => (await endpointStatus('swap')).readyReplicas === 2,
  );
  const traffic = load('swap', 8);
  await traffic.moreAnswers(16);
  await deploy('swap', 'mp-model', 2, 2);
  await waitUntil('only version 2 left', async () => {
    const status = await endpointStatus('swap');
    return status.readyReplicas === 2 && status.replicas.every((r) => r.version === 2);
  });
  await traffic.moreAnswers(16);
  await deploy('swap', 'mp-model', 2, 1);
  await waitUntil(
    'one replica left',
    async () => (await endpointStatus('swap')).replicas.length === 1,
  );
  await traffic.moreAnswers(16);
  await traffic.finish();
  assert.deepEqual(traffic.state.failures, [], `of ${traffic.state.ok} answered`);
  assert.deepEqual([...traffic.state.versions.keys()].sort(), ['1', '2']);
});

test('a gateway process killed under load is replaced while the other serves', async () => {
  await deploy('kill', 'mp-model', 1, 1);
  await waitUntil(
    'the endpoint ready',
    async () => (await endpointStatus('kill')).readyReplicas === 1,
  );
  const clients = 8;
  const traffic = load('kill', clients);
  await traffic.moreAnswers(50);
  const [victim, survivor] = gatewayProcesses();
  assert.ok(victim !== undefined && survivor !== undefined);
  process.kill(victim, 'SIGKILL');
  // The other process goes on answering while the killed one is gone.
  await traffic.moreAnswers(50);
  await waitUntil('a replacement process', () => {
    const now = gatewayProcesses();
    return Promise.resolve(now.length === 2 && !now.includes(victim) && now.includes(survivor));
  });
  await traffic.moreAnswers(50);
  await traffic.finish();
  // Only requests on the killed process's connections failed: at most one per client (each
  // has one in flight), all of them connection errors, none an HTTP error.
  assert.ok(
    traffic.state.failures.length <= clients,
    `${traffic.state.failures.length} failures: ${traffic.state.failures.join('; ')}`,
  );
  for (const failure of traffic.state.failures) assert.match(failure, /^network: /);

  // The replacement serves once it listens: new connections go to each process in turn,
  // and every one is answered.
  const before = sample(await gatewayMetrics(), 'kiln_gateway_process_requests_total');
  let sent = 0;
  await waitUntil('both processes answering', async () => {
    assert.equal(await inferOnNewConnection('kill'), 200);
    sent += 1;
    const text = await gatewayMetrics();
    return [0, 1].every(
      (index) =>
        sample(text, 'kiln_gateway_process_requests_total', { process: String(index) }) > 0,
    );
  });
  const text = await gatewayMetrics();
  assert.equal(sample(text, 'kiln_gateway_process_requests_total'), before + sent);
});
