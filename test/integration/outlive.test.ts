// The data plane outlives its control plane, with real processes: `kiln up --dev` serving an
// XGBoost endpoint on two replicas under a steady closed-loop load (no client retries), the
// platform killed with SIGKILL and started again on the same home. Every request must be
// answered 200 with the reference probabilities, the restarted platform must adopt the same
// gateway and workers (same pids), and `kiln down` must leave no process of the home. Then:
// Ctrl-C (SIGINT) of `kiln up` still stops everything, and `kiln down` after a platform died
// stops what it left serving. The tests run in order and build on each other.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import {
  identifyProcess,
  isRunning,
  type ProcessIdentity,
} from '../../src/core/process-identity.ts';
import { Cli, fixtures, startPlatformProcess, type PlatformProcess } from '../cli/cli-harness.ts';

interface Endpoint {
  status: {
    readyReplicas: number;
    replicas: Array<{ id: string; state: string; pid: number | null }>;
  };
}

interface Expected {
  xgboost: {
    inputs: Array<Array<number | null>>;
    probabilities: number[];
    featureNames: string[];
  };
}

const expected = JSON.parse(readFileSync(join(fixtures, 'expected.json'), 'utf8')) as Expected;
// Every reference row in one request (missing values as NaN tokens, as Python sends them).
const rows = expected.xgboost.inputs;
const requestBody =
  `{"inputs": [{"name": "input", "datatype": "FP32", "shape": [${rows.length}, 5], ` +
  `"data": [${rows
    .flat()
    .map((v) => (v === null ? 'NaN' : String(v)))
    .join(', ')}]}]}`;

let home = '';
const platforms: PlatformProcess[] = [];

after(async () => {
  // Whatever a failed test left: the platform, or what it left serving.
  for (const platform of platforms) await platform.kill('SIGTERM');
  if (home !== '') {
    await new Cli('', home).run(['down', '--home', home]);
    await rm(home, { recursive: true, force: true });
  }
});

async function up(): Promise<{ platform: PlatformProcess; cli: Cli }> {
  const platform = await startPlatformProcess(home, {
    gateway: true,
    args: ['--dev', '--no-demo'],
  });
  platforms.push(platform);
  return { platform, cli: new Cli(platform.url, home) };
}

/** Resolves once `check` holds; fails naming `what` after `timeoutMs`. Polls, never sleeps for a state. */
async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** The endpoint's replicas once both are ready. */
async function readyReplicas(cli: Cli): Promise<Endpoint['status']['replicas']> {
  let endpoint: Endpoint | undefined;
  await until(async () => {
    endpoint = await cli.json<Endpoint>(['endpoints', 'show', 'churn']);
    return (
      endpoint.status.readyReplicas === 2 &&
      endpoint.status.replicas.every((r) => r.state === 'ready')
    );
  }, 'two ready replicas');
  return endpoint?.status.replicas ?? [];
}

/** The routing snapshot version the gateway serves (its metrics). */
async function snapshotVersion(gatewayUrl: string): Promise<number> {
  const response = await request(`${gatewayUrl}/metrics`);
  const text = await response.body.text();
  return Number(/^kiln_gateway_snapshot_version (\S+)$/m.exec(text)?.[1] ?? Number.NaN);
}

function gatewayRecord(): ProcessIdentity & { url: string } {
  return JSON.parse(
    readFileSync(join(home, 'gateway', 'gateway.json'), 'utf8'),
  ) as ProcessIdentity & {
    url: string;
  };
}

/** Identities (pid + start mark) of the given pids, so a recycled pid never passes for them. */
function identities(pids: ReadonlyArray<number | null>): ProcessIdentity[] {
  return pids.map((pid) => {
    assert.ok(pid !== null);
    const identity = identifyProcess(pid);
    assert.ok(identity !== null, `process ${pid} should be running`);
    return identity;
  });
}

/** Live processes whose command line names the home (workers: their spec; the gateway: its state folder). */
function processesOfHome(): string[] {
  if (process.platform !== 'linux') return [];
  const found: string[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmdline.includes(home) && identifyProcess(Number(name)) !== null)
        found.push(`${name}: ${cmdline}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

async function assertNothingRuns(processes: readonly ProcessIdentity[]): Promise<void> {
  await until(
    () => processes.every((p) => !isRunning(p)),
    'the platform, gateway and workers to be gone',
    30_000,
  );
  assert.deepEqual(processesOfHome(), []);
}

/**
 * A closed loop of `clients` clients, each sending its next request when the last one is
 * answered, with no retries; every answer is checked against the reference probabilities.
 */
function steadyLoad(gatewayUrl: string, clients: number) {
  const agent = new Agent({ connections: clients });
  const failures: string[] = [];
  /** The replicas that answered (the gateway's `kiln-replica` header), since the last reset. */
  let servedBy = new Set<string>();
  let answered = 0;
  let running = true;
  let stopped: Promise<void> = Promise.resolve();
  const client = async (): Promise<void> => {
    while (running) {
      try {
        const response = await request(`${gatewayUrl}/v2/models/churn/infer`, {
          method: 'POST',
          body: requestBody,
          headers: { 'content-type': 'application/json' },
          dispatcher: agent,
        });
        const text = await response.body.text();
        servedBy.add(String(response.headers['kiln-replica']));
        if (response.statusCode !== 200) {
          failures.push(`${response.statusCode}: ${text}`);
        } else {
          const data = (JSON.parse(text) as { outputs: Array<{ data: number[] }> }).outputs[0]
            ?.data;
          const wrong = expected.xgboost.probabilities.findIndex(
            (p, i) => !(Math.abs((data?.[i] ?? Number.NaN) - p) < 1e-6),
          );
          if (wrong >= 0) failures.push(`row ${wrong}: ${text}`);
        }
      } catch (error) {
        failures.push(String(error));
      }
      answered += 1;
    }
  };
  const loops = Array.from({ length: clients }, client);
  return {
    failures,
    answered: () => answered,
    /** The replicas that answered since the last call. */
    servedBy: (): string[] => {
      const served = [...servedBy].sort();
      servedBy = new Set();
      return served;
    },
    /** Waits until `n` more requests were answered. */
    more: (n: number, what: string) => {
      const target = answered + n;
      return until(() => answered >= target, `${n} more answers ${what}`);
    },
    /** Ends the loops (at once if called again). */
    stop(): Promise<void> {
      if (!running) return stopped;
      running = false;
      stopped = Promise.all(loops).then(() => agent.close());
      return stopped;
    },
  };
}

void test('kill -9 of kiln up under load: no request lost, the restart adopts, kiln down stops all', async (t) => {
  home = await mkdtemp(join(tmpdir(), 'kiln-outlive-'));
  const first = await up();
  await first.cli.ok([
    'models',
    'register',
    join(fixtures, 'xgb-binary.json'),
    '--name',
    'churn-xgb',
    '--format',
    'xgboost',
  ]);
  await first.cli.ok(['deploy', 'churn-xgb', '--endpoint', 'churn', '--replicas', '2', '--wait']);
  const workers = await readyReplicas(first.cli);
  const gatewayUrl = first.platform.gatewayUrl ?? '';
  // The gateway serves once it holds the snapshot with both replicas.
  await until(async () => {
    const response = await request(`${gatewayUrl}/v2/models/churn/infer`, {
      method: 'POST',
      body: requestBody,
      headers: { 'content-type': 'application/json' },
    });
    await response.body.dump();
    return response.statusCode === 200;
  }, 'the gateway to serve the endpoint');
  const gateway = gatewayRecord();
  const dataPlane = identities([gateway.pid, ...workers.map((r) => r.pid)]);

  const versionBefore = await snapshotVersion(gatewayUrl);
  const load = steadyLoad(gatewayUrl, 4);
  // A failed assertion must not leave the loops spinning against a stopped gateway.
  t.after(() => load.stop());
  await load.more(50, 'before the kill');
  const atKill = load.answered();
  assert.equal(await first.platform.kill('SIGKILL'), 'SIGKILL');
  await load.more(100, 'with the control plane dead');
  assert.ok(dataPlane.every(isRunning), 'the gateway and workers outlive kill -9 of kiln up');

  const second = await up();
  const atRestart = load.answered();
  // The same gateway (pid, port) and the same workers, adopted.
  assert.equal(second.platform.gatewayUrl, gatewayUrl);
  assert.equal(gatewayRecord().pid, gateway.pid);
  const adopted = await readyReplicas(second.cli);
  assert.deepEqual(
    adopted.map((r) => [r.id, r.pid]),
    workers.map((r) => [r.id, r.pid]),
  );
  // The gateway found the new control plane (on another port): it holds its snapshot, whose
  // version is past every one of the first platform's.
  await until(
    async () => (await snapshotVersion(gatewayUrl)) > versionBefore,
    'the gateway to poll the restarted control plane',
  );
  load.servedBy();
  await load.more(100, 'after the restart');
  // The adopted workers serve: the replicas that answer are those two, by id.
  assert.deepEqual(load.servedBy(), workers.map((r) => r.id).sort());
  // What the first platform learnt from its workers at ready (the model's feature names, for
  // named-feature requests) the second learnt from the adopted ones.
  const named = await request(`${gatewayUrl}/v2/models/churn/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      inputs: expected.xgboost.featureNames.map((name, column) => ({
        name,
        datatype: 'FP32',
        shape: [rows.length],
        data: rows.map((row) => row[column] ?? null),
      })),
    }),
  });
  const namedText = await named.body.text();
  assert.equal(named.statusCode, 200, namedText);
  const namedData = (JSON.parse(namedText) as { outputs: Array<{ data: number[] }> }).outputs[0]
    ?.data;
  expected.xgboost.probabilities.forEach((p, i) =>
    assert.ok(Math.abs((namedData?.[i] ?? Number.NaN) - p) < 1e-6, `named features, row ${i}`),
  );
  await load.stop();
  t.diagnostic(
    `${load.answered()} requests, ${atRestart - atKill} of them while no control plane ran; ` +
      `${load.failures.length} failed`,
  );
  assert.deepEqual(load.failures, [], `${load.failures.length} of ${load.answered()} failed`);
  assert.ok(dataPlane.every(isRunning));

  const down = await second.cli.run(['down', '--home', home]);
  assert.equal(down.code, 0, down.stderr);
  assert.equal(down.stdout, `stopped the platform serving ${home} (pid ${second.platform.pid})\n`);
  assert.equal(await second.platform.ended, 0);
  await assertNothingRuns(dataPlane);
  // Twice is fine.
  assert.equal(
    (await second.cli.ok(['down', '--home', home])).trim(),
    `no platform serves ${home}`,
  );
});

void test('Ctrl-C of kiln up stops its gateway and workers', async () => {
  const { platform, cli } = await up();
  const workers = await readyReplicas(cli);
  const running = identities([gatewayRecord().pid, ...workers.map((r) => r.pid)]);
  assert.equal(await platform.kill('SIGINT'), 0);
  await assertNothingRuns(running);
});

void test('kiln down after kill -9 stops the gateway and workers left serving', async () => {
  const { platform, cli } = await up();
  const workers = await readyReplicas(cli);
  const running = identities([gatewayRecord().pid, ...workers.map((r) => r.pid)]);
  assert.equal(await platform.kill('SIGKILL'), 'SIGKILL');
  assert.ok(running.every(isRunning));
  const down = await cli.ok(['down', '--home', home]);
  assert.equal(
    down,
    `stopped what a platform that died left serving ${home}: the gateway and 2 workers\n`,
  );
  await assertNothingRuns(running);
});
