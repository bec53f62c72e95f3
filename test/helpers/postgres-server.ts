// A real PostgreSQL server for tests: Debian's postgresql (15), started in a temporary data
// directory on a loopback port, stopped when the test file ends. Each `createDatabase()` is a
// fresh, empty database on it, so tests do not see each other's rows.
//
// Where the server binaries are missing the tests that need it are skipped with the reason
// printed — except under CI (CI=true) or KILN_TEST_POSTGRES=required, where a missing server
// fails: .ci/run installs postgresql, so a skip there would hide the contract suite.

import { after } from 'node:test';
import { launchPostgres, postgresBin, type PostgresServer } from './postgres-launch.ts';

export { postgresPassword, type PostgresServer } from './postgres-launch.ts';

/** Why PostgreSQL tests cannot run here, or null when they can. Throws where they must run. */
export function postgresUnavailable(): string | null {
  if (postgresBin() !== null) return null;
  const reason = 'PostgreSQL server binaries not found (apt-get install -y postgresql)';
  if (process.env['CI'] === 'true' || process.env['KILN_TEST_POSTGRES'] === 'required') {
    throw new Error(`${reason}; required under CI`);
  }
  return reason;
}

let shared: Promise<PostgresServer> | null = null;

// The shared server stops when the test file ends: this hook is registered when the file
// imports this module (its top level). One registered by the first test that starts the server
// would stop it when that test ends, under the tests after it.
after(async () => {
  if (shared !== null) await (await shared).stop();
});

/** One server per test file (started on first use). */
export function postgresServer(): Promise<PostgresServer> {
  shared ??= launchPostgres();
  return shared;
}

/** A server of its own, stopped when the current test (or the file, at top level) ends. */
export async function startPostgres(): Promise<PostgresServer> {
  const server = await launchPostgres();
  after(() => server.stop());
  return server;
}
