// Several control planes on one PostgreSQL, as real processes (issue 17): three `kiln up
// --store postgres://…`, each on its own home and ports. Exactly one leads at every
// observation (their /metrics); an endpoint deployed through a follower is served through a
// follower's gateway (the routing the leader published, read from the store); the leader
// killed with SIGKILL: the follower's gateway keeps serving from its last snapshot while no
// one leads, another control plane takes over with a higher epoch and publishes, and the
// endpoint is served from the new leader's replicas.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import pg from 'pg';
import {
  Cli,
  fixtures,
  sha256,
  startPlatformProcess,
  type PlatformProcess,
} from '../cli/cli-harness.ts';
import { postgresServer, postgresUnavailable } from '../helpers/postgres-server.ts';

const skip = postgresUnavailable() ?? false;
const server = skip === false ? await postgresServer() : null;

interface Expected {
  xgboost: { inputs: Array<Array<number | null>>; probabilities: number[] };
}
const expected = JSON.parse(readFileSync(join(fixtures, 'expected.json'), 'utf8')) as Expected;
const rows = expected.xgboost.inputs;
const requestBody =
  `{"inputs": [{"name": "input", "datatype": "FP32", "shape": [${rows.length}, 5], ` +
  `"data": [${rows
    .flat()
    .map((v) => (v === null ? 'NaN' : String(v)))
    .join(', ')}]}]}`;

interface Plane {
  readonly home: string;
  readonly process: PlatformProcess;
  readonly cli: Cli;
  alive: boolean;
}

const planes: Plane[] = [];
const homes: string[] = [];
after(async () => {
  for (const p of planes) await p.process.kill('SIGTERM');
  // What a killed plane left serving (its gateway and workers outlive it).
  for (const home of homes) {
    await new Cli('', home).run(['down', '--home', home]);
    await rm(home, { recursive: true, force: true });
  }
});

async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 90_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** Each live plane's kiln_control_leader value; fails if two say they lead. */
async function leaders(among: readonly Plane[]): Promise<Plane[]> {
  const leading: Plane[] = [];
  for (const p of among) {
    if (!p.alive) continue;
    if ((await leaderGauge(p)) === 1) leading.push(p);
  }
  assert.ok(
    leading.length <= 1,
    `two control planes lead: ${leading.map((p) => p.home).join(', ')}`,
  );
  return leading;
}

/** A plane's kiln_control_leader (null while it does not answer: restarting). */
async function leaderGauge(p: Plane): Promise<number | null> {
  try {
    const text = await (await request(`${p.process.url}/metrics`)).body.text();
    const value = /^kiln_control_leader\{holder="[^"]+"\} (\d)$/m.exec(text)?.[1];
    return value === undefined ? null : Number(value);
  } catch {
    return null;
  }
}

async function infer(gatewayUrl: string): Promise<string | null> {
  try {
    const response = await request(`${gatewayUrl}/v2/models/churn/infer`, {
      method: 'POST',
      body: requestBody,
      headers: { 'content-type': 'application/json' },
    });
    const text = await response.body.text();
    if (response.statusCode !== 200) return `${response.statusCode}: ${text}`;
    const data = (JSON.parse(text) as { outputs: Array<{ data: number[] }> }).outputs[0]?.data;
    const wrong = expected.xgboost.probabilities.findIndex(
      (p, i) => !(Math.abs((data?.[i] ?? Number.NaN) - p) < 1e-6),
    );
    return wrong >= 0 ? `row ${wrong}: ${text}` : null;
  } catch (error) {
    return String(error);
  }
}

async function published(url: string): Promise<{ holder: string; epoch: number } | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query<{ holder: string; epoch: string }>(
      "SELECT holder, epoch FROM routing_snapshots WHERE name = 'gateways'",
    );
    const row = result.rows[0];
    return row === undefined ? null : { holder: row.holder, epoch: Number(row.epoch) };
  } finally {
    await client.end();
  }
}

void test(
  'three kiln up on one PostgreSQL: one leader; followers serve its routing; kill -9 of the leader: another takes over',
  { skip },
  async () => {
    const url = await server!.createDatabase();
    const env = {
      ...process.env,
      KILN_STORE_URL: url,
      KILN_LEADER_LEASE_MS: '3000',
      KILN_LEADER_RENEW_MS: '500',
    };
    for (let i = 0; i < 3; i += 1) {
      const home = await mkdtemp(join(tmpdir(), `kiln-plane-${i}-`));
      homes.push(home);
      const process = await startPlatformProcess(home, {
        gateway: true,
        args: ['--dev', '--no-demo', '--gateway-processes', '1'],
        env,
      });
      planes.push({ home, process, cli: new Cli(process.url, home), alive: true });
    }
    let leader: Plane | undefined;
    await until(async () => (leader = (await leaders(planes))[0]) !== undefined, 'a leader');
    assert.ok(leader !== undefined);
    const followers = planes.filter((p) => p !== leader);
    const [follower, other] = followers as [Plane, Plane];

    // Register through a follower (the store is shared). Artifacts are per home until an object
    // store is configured: put the blob in every home, as a shared bucket would hold it.
    const modelFile = join(fixtures, 'xgb-binary.json');
    await follower.cli.ok([
      'models',
      'register',
      modelFile,
      '--name',
      'churn-xgb',
      '--format',
      'xgboost',
    ]);
    const bytes = readFileSync(modelFile);
    for (const p of planes) {
      const response = await request(`${p.process.url}/api/v1/blobs/${sha256(bytes)}`, {
        method: 'PUT',
        body: bytes,
        headers: { 'content-type': 'application/octet-stream' },
      });
      await response.body.dump();
      assert.ok(response.statusCode < 300, `blob upload to ${p.home}: ${response.statusCode}`);
    }
    await other.cli.ok(['deploy', 'churn-xgb', '--endpoint', 'churn', '--replicas', '1']);
    // Served through a follower's gateway: the leader's replicas, from the routing it published.
    const gatewayUrl = follower.process.gatewayUrl ?? '';
    await until(async () => (await infer(gatewayUrl)) === null, "the follower's gateway to serve");
    const before = await published(url);
    assert.ok(before !== null);

    // Kill -9 the leader under load. Its worker outlives it (detached), so while no one leads
    // the follower's gateway keeps its last snapshot and keeps serving.
    const failures: string[] = [];
    let answered = 0;
    let loading = true;
    const load = (async () => {
      while (loading) {
        const failure = await infer(gatewayUrl);
        answered += 1;
        if (failure !== null) failures.push(failure);
      }
    })();
    await until(() => answered >= 20, 'load before the kill');
    await leader.process.kill('SIGKILL');
    leader.alive = false;
    assert.equal(await infer(gatewayUrl), null, 'served with no leader');
    let next: Plane | undefined;
    await until(async () => (next = (await leaders(planes))[0]) !== undefined, 'a new leader');
    assert.ok(next !== undefined && next !== leader);
    await until(async () => {
      const now = await published(url);
      return now !== null && now.epoch > before.epoch;
    }, 'the new leader to publish');
    // Served throughout: from the old leader's replica (its worker outlives it), then from
    // the new leader's.
    const target = answered + 50;
    await until(() => answered >= target, 'load after the takeover');
    loading = false;
    await load;
    assert.deepEqual(failures.slice(0, 3), [], `${failures.length} of ${answered} failed`);
    await leaders(planes);
  },
);

void test(
  'a paused leader (SIGSTOP past its lease) resumes as a follower: its controllers stopped, then kiln up starts it afresh',
  { skip },
  async () => {
    const url = await server!.createDatabase();
    const env = {
      ...process.env,
      KILN_STORE_URL: url,
      KILN_LEADER_LEASE_MS: '1500',
      KILN_LEADER_RENEW_MS: '300',
    };
    const started: Plane[] = [];
    for (let i = 0; i < 2; i += 1) {
      const home = await mkdtemp(join(tmpdir(), `kiln-plane-paused-${i}-`));
      homes.push(home);
      const process = await startPlatformProcess(home, {
        args: ['--dev', '--no-demo', '--gateway-processes', '1'],
        env,
      });
      const plane = { home, process, cli: new Cli(process.url, home), alive: true };
      planes.push(plane);
      started.push(plane);
    }
    let paused: Plane | undefined;
    await until(async () => (paused = (await leaders(started))[0]) !== undefined, 'a leader');
    assert.ok(paused !== undefined);
    const other = started.find((p) => p !== paused)!;
    const before = await published(url);
    // Paused: it cannot renew; the other takes over once the database says the lease expired.
    process.kill(paused.process.pid, 'SIGSTOP');
    paused.alive = false;
    try {
      await until(async () => (await leaders(started))[0] === other, 'the other to lead');
    } finally {
      process.kill(paused.process.pid, 'SIGCONT');
    }
    paused.alive = true;
    await until(async () => {
      const now = await published(url);
      return now !== null && now.epoch > (before?.epoch ?? 0);
    }, 'the new leader to publish');
    // Resumed: it knows it lost (its deadline passed while stopped), stops its controllers and
    // is started afresh on the same port as a follower; one leader at every observation.
    await until(
      () =>
        paused!.process
          .stderr()
          .includes('lost the controllers lease; restarting it as a follower'),
      'the paused plane to notice',
    );
    // The old server answers (as a follower already) until it is closed for the restart: wait
    // for the restarted one, or a request can land on a connection the close resets.
    await until(
      () => paused!.process.stderr().includes('kiln: restarted as a follower; API on'),
      'the paused plane to restart',
    );
    await until(
      async () => (await leaderGauge(paused!)) === 0,
      'the paused plane to serve again, as a follower',
    );
    assert.deepEqual(await leaders(started), [other]);
    assert.equal((await request(`${paused.process.url}/api/v1/health`)).statusCode, 200);
  },
);
