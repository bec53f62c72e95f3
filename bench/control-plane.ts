// `npm run bench -- control-plane [registrations] [rounds]`: the control plane on its two
// stores, side by side in one run (issue 17). Each store kind gets real `kiln up` processes
// (compiled, as users run them), and three figures are printed:
//
//   1. registrations/s: 8 clients register versions of one model through the API at once
//      (the blob uploaded once; each registration re-validates the artifact and takes the
//      store's write lock for its version number), p50/p95/p99 of each call;
//   2. snapshot publication latency: an API write that changes the routing (a new API key)
//      until a long-poll of the routing snapshot returns it — on SQLite on the one control
//      plane; on PostgreSQL through the leader, and through a follower (the write lands on
//      the follower, the leader's reconciler publishes, the follower serves what it reads
//      back from the store);
//   3. leader failover: three control planes on one PostgreSQL, the leader killed with
//      SIGKILL, until another control plane leads and has published its routing (the lease
//      and renewal periods are the defaults a user gets unless KILN_LEADER_LEASE_MS /
//      KILN_LEADER_RENEW_MS are set).
//
// PostgreSQL runs with its default durability (fsync on, synchronous commit) in a temporary
// data directory on loopback; SQLite is the store's own settings (WAL). The issue sets no
// goal for these figures: they are printed, not judged.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { request } from 'undici';
import { percentile, table } from './_report.ts';
import { Cli, startPlatformProcess, type PlatformProcess } from '../test/cli/cli-harness.ts';
import {
  launchPostgres,
  postgresBin,
  type PostgresServer,
} from '../test/helpers/postgres-launch.ts';

const root = new URL('../', import.meta.url).pathname;
const modelFile = join(root, 'fixtures', 'registry', 'xgb-binary.json');
const clients = 8;

interface Plane {
  readonly home: string;
  readonly process: PlatformProcess;
  alive: boolean;
}

const planes: Plane[] = [];

async function startPlane(env: NodeJS.ProcessEnv): Promise<Plane> {
  const home = await mkdtemp(join(tmpdir(), 'kiln-bench-cp-'));
  const process = await startPlatformProcess(home, {
    args: ['--dev', '--no-demo', '--gateway-processes', '1'],
    env,
  });
  const plane = { home, process, alive: true };
  planes.push(plane);
  return plane;
}

async function stopAll(): Promise<void> {
  for (const plane of planes.splice(0)) {
    if (plane.alive) await plane.process.kill('SIGTERM');
    // What a killed plane left running (its gateway outlives it).
    await new Cli('', plane.home).run(['down', '--home', plane.home]);
    await rm(plane.home, { recursive: true, force: true });
  }
}

async function call(
  url: string,
  method: 'GET' | 'POST' | 'PUT',
  body?: string | Buffer,
): Promise<{ status: number; json: unknown }> {
  const response = await request(url, {
    method,
    ...(body === undefined ? {} : { body }),
    headers:
      body === undefined
        ? {}
        : {
            'content-type':
              typeof body === 'string' ? 'application/json' : 'application/octet-stream',
          },
  });
  const text = await response.body.text();
  return { status: response.statusCode, json: text === '' ? null : (JSON.parse(text) as unknown) };
}

async function uploadModel(apiUrl: string, bytes: Buffer, sha256: string): Promise<void> {
  const put = await call(`${apiUrl}/api/v1/blobs/${sha256}`, 'PUT', bytes);
  if (put.status >= 300) throw new Error(`blob upload: ${put.status} ${JSON.stringify(put.json)}`);
}

interface RegistrationRun {
  readonly total: number;
  readonly seconds: number;
  readonly latenciesMs: number[];
  readonly failed: number;
}

async function registrations(apiUrl: string, count: number): Promise<RegistrationRun> {
  const bytes = await readFile(modelFile);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  await uploadModel(apiUrl, bytes, sha256);
  const body = JSON.stringify({
    format: 'xgboost',
    files: [{ path: 'model.json', size: bytes.length, sha256 }],
    createModel: { team: 'default' },
  });
  const register = async (): Promise<boolean> =>
    (await call(`${apiUrl}/api/v1/models/bench/versions`, 'POST', body)).status === 201;
  for (let i = 0; i < 20; i += 1) await register(); // warm-up: JIT, connections, caches
  const latenciesMs: number[] = [];
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < count) {
        next += 1;
        const t0 = performance.now();
        if (!(await register())) failed += 1;
        latenciesMs.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { total: count, seconds, latenciesMs: latenciesMs.sort((a, b) => a - b), failed };
}

async function snapshotVersion(apiUrl: string): Promise<number> {
  const now = await call(`${apiUrl}/api/v1/routing/snapshot?after=0&waitMs=0`, 'GET');
  return (now.json as { version: number } | null)?.version ?? 0;
}

/** Adds an API key on `writeUrl`; ms until a long-poll of `readUrl`'s snapshot carries it. */
async function publication(writeUrl: string, readUrl: string): Promise<number> {
  let after = await snapshotVersion(readUrl);
  const t0 = performance.now();
  const created = await call(
    `${writeUrl}/api/v1/api-keys`,
    'POST',
    JSON.stringify({ name: 'bench', team: 'default' }),
  );
  if (created.status !== 201)
    throw new Error(`api key: ${created.status} ${JSON.stringify(created.json)}`);
  const id = (created.json as { id: string }).id;
  for (;;) {
    const polled = await call(
      `${readUrl}/api/v1/routing/snapshot?after=${after}&waitMs=5000`,
      'GET',
    );
    const snapshot = polled.json as { version: number; apiKeys: Array<{ id: string }> } | null;
    if (snapshot === null) continue;
    if (snapshot.apiKeys.some((key) => key.id === id)) return performance.now() - t0;
    after = snapshot.version;
    if (performance.now() - t0 > 60_000) throw new Error('the key was not published within 60 s');
  }
}

async function publications(writeUrl: string, readUrl: string, rounds: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < rounds; i += 1) out.push(await publication(writeUrl, readUrl));
  return out.sort((a, b) => a - b);
}

async function leaderGauge(plane: Plane): Promise<number | null> {
  try {
    const text = await (await request(`${plane.process.url}/metrics`)).body.text();
    const value = /^kiln_control_leader\{holder="[^"]+"\} (\d)$/m.exec(text)?.[1];
    return value === undefined ? null : Number(value);
  } catch {
    return null;
  }
}

async function leaderOf(among: readonly Plane[], timeoutMs = 120_000): Promise<Plane> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    for (const plane of among) if (plane.alive && (await leaderGauge(plane)) === 1) return plane;
    if (performance.now() > deadline) throw new Error('no control plane leads');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function publishedEpoch(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query<{ epoch: string }>(
      "SELECT epoch FROM routing_snapshots WHERE name = 'gateways'",
    );
    return Number(result.rows[0]?.epoch ?? 0);
  } finally {
    await client.end();
  }
}

/** Kills the leader; ms until another leads and has published its routing under its epoch. */
async function failover(storeUrl: string): Promise<{ ms: number; epoch: number }> {
  const leader = await leaderOf(planes);
  const before = await publishedEpoch(storeUrl);
  const t0 = performance.now();
  leader.alive = false;
  await leader.process.kill('SIGKILL');
  const next = await leaderOf(planes.filter((p) => p !== leader));
  for (;;) {
    const epoch = await publishedEpoch(storeUrl);
    if (epoch > before) {
      void next;
      return { ms: performance.now() - t0, epoch };
    }
    if (performance.now() - t0 > 120_000) throw new Error('the new leader did not publish');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function row(label: string, sorted: readonly number[]): (string | number)[] {
  return [
    label,
    String(sorted.length),
    percentile(sorted, 50),
    percentile(sorted, 95),
    percentile(sorted, 99),
  ];
}

export async function run(args: readonly string[]): Promise<void> {
  const count = Number(args[0] ?? 400);
  const rounds = Number(args[1] ?? 20);
  const built = spawnSync(process.execPath, ['scripts/build.js', '--if-stale'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (built.status !== 0) throw new Error('npm run build failed');
  console.log(
    `control-plane bench — CPU: ${cpus()[0]?.model ?? 'unknown'}, ${cpus().length} cores; ` +
      `${count} registrations by ${clients} clients; ${rounds} publication rounds`,
  );
  const env = { ...process.env, KILN_URL: '' };
  let server: PostgresServer | null = null;
  const regRows: (string | number)[][] = [];
  const pubRows: (string | number)[][] = [];
  const failRows: (string | number)[][] = [];
  const ratePerKind = new Map<string, number>();
  try {
    // SQLite: the embedded default, one control plane.
    const solo = await startPlane(env);
    const sqliteRun = await registrations(solo.process.url, count);
    ratePerKind.set('sqlite', sqliteRun.total / sqliteRun.seconds);
    regRows.push(registrationRow('SQLite', sqliteRun));
    pubRows.push(
      row(
        'SQLite (one control plane)',
        await publications(solo.process.url, solo.process.url, rounds),
      ),
    );
    await stopAll();

    if (postgresBin() === null) {
      console.log(
        'PostgreSQL: server binaries missing (apt-get install -y postgresql): its rows are left out',
      );
    } else {
      server = await launchPostgres({ durable: true });
      const url = await server.createDatabase();
      const pgEnv = { ...env, KILN_STORE_URL: url };
      const first = await startPlane(pgEnv);
      const pgRun = await registrations(first.process.url, count);
      ratePerKind.set('postgres', pgRun.total / pgRun.seconds);
      regRows.push(registrationRow('PostgreSQL', pgRun));
      const second = await startPlane(pgEnv);
      const third = await startPlane(pgEnv);
      const leader = await leaderOf([first, second, third]);
      const follower = [first, second, third].find((p) => p !== leader)!;
      pubRows.push(
        row(
          'PostgreSQL, written and read on the leader',
          await publications(leader.process.url, leader.process.url, rounds),
        ),
      );
      pubRows.push(
        row(
          'PostgreSQL, written and read on a follower',
          await publications(follower.process.url, follower.process.url, rounds),
        ),
      );
      const lease = process.env.KILN_LEADER_LEASE_MS ?? 'default';
      for (let i = 0; i < 2; i += 1) {
        const { ms, epoch } = await failover(url);
        failRows.push([`kill -9 of leader ${i + 1} (lease ${lease})`, ms, String(epoch)]);
      }
      await stopAll();
    }
  } finally {
    await stopAll();
    await server?.stop();
  }
  console.log('\nregistrations through the API (ms per call)');
  console.log(table(['store', 'registrations', 'failed', 'per s', 'p50', 'p95', 'p99'], regRows));
  const sqliteRate = ratePerKind.get('sqlite');
  const pgRate = ratePerKind.get('postgres');
  if (sqliteRate !== undefined && pgRate !== undefined) {
    console.log(
      `PostgreSQL / SQLite registrations per second: ${(pgRate / sqliteRate).toFixed(2)}×`,
    );
  }
  console.log('\nrouting snapshot publication: API write → long-poll returns it (ms)');
  console.log(table(['path', 'rounds', 'p50', 'p95', 'p99'], pubRows));
  if (failRows.length > 0) {
    console.log('\nleader failover: SIGKILL → another control plane leads and has published (ms)');
    console.log(table(['event', 'ms', 'new epoch'], failRows));
  }
}

function registrationRow(label: string, r: RegistrationRun): (string | number)[] {
  return [
    label,
    String(r.total),
    String(r.failed),
    r.total / r.seconds,
    percentile(r.latenciesMs, 50),
    percentile(r.latenciesMs, 95),
    percentile(r.latenciesMs, 99),
  ];
}
