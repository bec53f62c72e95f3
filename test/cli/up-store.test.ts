// `kiln up --store` / KILN_STORE_URL (issue 17): anything but a PostgreSQL URL is a usage
// error before anything starts; a PostgreSQL that cannot be reached or used makes `kiln up`
// exit once with KILN_STORE_UNAVAILABLE naming the cause (no crash loop, home lock released).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Cli, freePort } from './cli-harness.ts';
import { postgresServer, postgresUnavailable } from '../helpers/postgres-server.ts';

const skipPostgres = postgresUnavailable() ?? false;
const server = skipPostgres === false ? await postgresServer() : null;

async function tempHome(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const home = join(await mkdtemp(join(tmpdir(), 'kiln-store-')), 'home');
  t.after(() => rm(join(home, '..'), { recursive: true, force: true }));
  return home;
}

const up = ['up', '--port', '0', '--gateway-port', '0', '--gateway-processes', '1'];

void test('kiln up refuses a store that is not a PostgreSQL URL, from the flag or the environment', async (t) => {
  const home = await tempHome(t);
  const cli = new Cli('http://127.0.0.1:9', home);
  const flag = await cli.fails([...up, '--store', 'mysql://db/kiln'], 2);
  assert.match(
    flag,
    /invalid --store "mysql:\/\/db\/kiln": only PostgreSQL \(postgres:\/\/…\) is supported/,
  );
  const notUrl = await cli.fails([...up, '--store', 'kiln.db'], 2);
  assert.match(notUrl, /invalid --store "kiln.db": expected a postgres:\/\//);
  const env = await cli.fails(up, 2, { KILN_STORE_URL: 'sqlite:///tmp/kiln.db' });
  assert.match(env, /invalid KILN_STORE_URL "sqlite:\/\/\/tmp\/kiln.db"/);
  const lease = await cli.fails([...up, '--store', 'postgres://127.0.0.1:1/kiln'], 2, {
    KILN_LEADER_LEASE_MS: '1000',
    KILN_LEADER_RENEW_MS: '900',
  });
  assert.match(lease, /KILN_LEADER_RENEW_MS 900 must be at most half of 1000/);
  assert.equal(existsSync(home), false, 'nothing was started');
});

void test('kiln up with a PostgreSQL nobody listens on exits with KILN_STORE_UNAVAILABLE naming the cause', async (t) => {
  const home = await tempHome(t);
  const cli = new Cli('http://127.0.0.1:9', home);
  const port = await freePort();
  const stderr = await cli.fails([...up, '--store', `postgres://kiln@127.0.0.1:${port}/kiln`], 1);
  assert.match(
    stderr,
    /the store cannot be reached: PostgreSQL: .*ECONNREFUSED.* \(KILN_STORE_UNAVAILABLE\)/,
  );
  // Exited once and let go of the home: the next start fails the same way, not "in use".
  const again = await cli.fails(up, 1, {
    KILN_STORE_URL: `postgres://kiln@127.0.0.1:${port}/kiln`,
  });
  assert.match(again, /ECONNREFUSED.*\(KILN_STORE_UNAVAILABLE\)/);
});

void test(
  'kiln up with a wrong password or a role without rights exits with KILN_STORE_UNAVAILABLE naming it',
  { skip: skipPostgres },
  async (t) => {
    const home = await tempHome(t);
    const cli = new Cli('http://127.0.0.1:9', home);
    const url = new URL(await server!.createDatabase());
    const wrong = new URL(url);
    wrong.password = 'not-the-password';
    const password = await cli.fails([...up, '--store', wrong.toString()], 1);
    assert.match(
      password,
      /PostgreSQL: password authentication failed for user "postgres" \(KILN_STORE_UNAVAILABLE\)/,
    );

    // A role that may log in but not create tables (PostgreSQL 15: public is not writable by all).
    const admin = new pg.Client({ connectionString: url.toString() });
    await admin.connect();
    try {
      await admin.query("CREATE ROLE kiln_reader LOGIN PASSWORD 'reader'");
      await admin.query('REVOKE CREATE ON SCHEMA public FROM PUBLIC');
    } finally {
      await admin.end();
    }
    const reader = new URL(url);
    reader.username = 'kiln_reader';
    reader.password = 'reader';
    const rights = await cli.fails([...up, '--store', reader.toString()], 1);
    assert.match(
      rights,
      /PostgreSQL: permission denied for schema public \(KILN_STORE_UNAVAILABLE\)/,
    );
  },
);
