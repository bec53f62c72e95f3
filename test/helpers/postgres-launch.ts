// Starts a real PostgreSQL server (Debian's postgresql) in a temporary data directory on a
// loopback port: for tests (through postgres-server.ts, which stops it with the test file) and
// for benchmarks (which stop it themselves). No node:test import here, so a benchmark process
// can use it. Tests run it without fsync (their data is thrown away); `durable: true` keeps
// PostgreSQL's default durability, for benchmarks that compare commit costs.

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, chownSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const binCandidates = [
  '/usr/lib/postgresql/17/bin',
  '/usr/lib/postgresql/16/bin',
  '/usr/lib/postgresql/15/bin',
];

export const postgresPassword = 'kiln-test';

export interface PostgresServer {
  readonly port: number;
  /** postgres://postgres:…@127.0.0.1:port/<database> */
  url(database: string): string;
  /** A new empty database; returns its URL. */
  createDatabase(): Promise<string>;
  /** Stops the server (also done when the test file ends). */
  stop(): Promise<void>;
}

export function postgresBin(): string | null {
  for (const dir of binCandidates) if (existsSync(join(dir, 'initdb'))) return dir;
  return null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function launchPostgres(
  options: { readonly durable?: boolean } = {},
): Promise<PostgresServer> {
  const bin = postgresBin();
  if (bin === null) throw new Error('PostgreSQL server binaries not found');
  const dir = await mkdtemp(join(tmpdir(), 'kiln-pg-'));
  const data = join(dir, 'data');
  const pwfile = join(dir, 'pw');
  writeFileSync(pwfile, postgresPassword);
  mkdirSync(data);
  // initdb and the server refuse to run as root: run them as the postgres user then.
  const asRoot = userInfo().uid === 0;
  const run = (cmd: string, args: string[]): void => {
    const argv = asRoot ? ['-u', 'postgres', '--', cmd, ...args] : args;
    const result = spawnSync(asRoot ? 'runuser' : cmd, argv, { encoding: 'utf8' });
    if (result.status !== 0) {
      throw new Error(`${cmd} failed (${result.status}): ${result.stderr}${result.stdout}`);
    }
  };
  if (asRoot) {
    const ids = execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim();
    const gid = execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim();
    for (const path of [dir, data, pwfile]) chownSync(path, Number(ids), Number(gid));
  }
  run(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '--auth-local=trust',
    '--auth-host=scram-sha-256',
    `--pwfile=${pwfile}`,
    '--no-sync',
    '-E',
    'UTF8',
    '--locale=C',
  ]);
  let port = 0;
  for (let attempt = 0; ; attempt += 1) {
    port = await freePort();
    try {
      run(join(bin, 'pg_ctl'), [
        '-D',
        data,
        '-w',
        '-l',
        join(dir, 'log'),
        '-o',
        `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c max_connections=200` +
          (options.durable === true
            ? ''
            : ' -c fsync=off -c synchronous_commit=off -c full_page_writes=off'),
        'start',
      ]);
      break;
    } catch (error) {
      if (attempt >= 2) throw error; // the port was taken between the probe and the start
    }
  }
  let stopped = false;
  let counter = 0;
  const url = (database: string): string =>
    `postgres://postgres:${postgresPassword}@127.0.0.1:${port}/${database}`;
  const server: PostgresServer = {
    port,
    url,
    async createDatabase() {
      counter += 1;
      const name = `kiln_test_${process.pid}_${counter}`;
      const client = new pg.Client({ connectionString: url('postgres') });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        run(join(bin, 'pg_ctl'), ['-D', data, '-w', '-m', 'immediate', 'stop']);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
  return server;
}
