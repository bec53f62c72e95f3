// Two real platform processes on one home register versions of the same model at the same
// time: every request succeeds and the versions are exactly 1..N, no duplicate, no gap. The
// second runs `--api-only` beside the first: one platform serves a home's endpoints, and a
// second plain `kiln up` there is refused.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { adminTokenPath } from '../../src/core/admin-token-file.ts';
import { call, readArtifact, register } from '../helpers/platform.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const root = new URL('../../', import.meta.url).pathname;
const fixtures = `${root}fixtures/registry/`;

async function startProcess(
  home: string,
  extra: readonly string[] = [],
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    ['bin/kiln.js', 'up', '--port', '0', '--gateway-port', '0', '--home', home, ...extra],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise<string>((resolve, reject) => {
    lines.on('line', (line) => {
      const match = /Kiln API listening on (http:\/\/\S+)/.exec(line);
      if (match) resolve(match[1]!);
    });
    child.on('exit', (code) => reject(new Error(`kiln up exited ${code}: ${stderr}`)));
  });
  return { url, child };
}

/** The admin token `kiln up` left in the home (both processes accept it: one store). */
function adminOf(home: string): Record<string, string> {
  return { authorization: `Bearer ${readFileSync(adminTokenPath(home), 'utf8').trim()}` };
}

test('two processes registering versions of one model concurrently get distinct consecutive numbers', async (t) => {
  const home = await tempDir('kiln-concurrent-');
  const [a, b] = await Promise.all([startProcess(home), startProcess(home, ['--api-only'])]);
  t.after(() => {
    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
  });
  assert.notEqual(a.url, b.url);
  const admin = adminOf(home);
  const files = await readArtifact(`${fixtures}xgb-binary.json`);
  await call(a.url, 'POST', '/api/v1/models', { name: 'shared' }, admin);
  // Warm both servers up so the race below is between registrations, not startups.
  assert.equal((await register(a.url, 'shared', 'xgboost', files, {}, admin)).status, 201);
  assert.equal((await register(b.url, 'shared', 'xgboost', files, {}, admin)).status, 201);

  const perProcess = 25;
  const results = await Promise.all(
    Array.from({ length: perProcess * 2 }, (_, i) =>
      register(i % 2 === 0 ? a.url : b.url, 'shared', 'xgboost', files, {}, admin),
    ),
  );
  for (const r of results) assert.equal(r.status, 201, JSON.stringify(r.body));
  const numbers = results.map((r) => (r.body as { version: number }).version).sort((x, y) => x - y);
  assert.deepEqual(
    numbers,
    Array.from({ length: perProcess * 2 }, (_, i) => i + 3),
  );
  const model = (await call(b.url, 'GET', '/api/v1/models/shared', undefined, admin)).body as {
    latestVersion: number;
    versionCount: number;
  };
  assert.deepEqual(
    [model.latestVersion, model.versionCount],
    [perProcess * 2 + 2, perProcess * 2 + 2],
  );
});

test('a second kiln up on a served home is refused, naming the holder; --api-only has no endpoints', async (t) => {
  const home = await tempDir('kiln-one-home-');
  const a = await startProcess(home);
  t.after(() => a.child.kill('SIGTERM'));
  const second = spawn(
    process.execPath,
    ['bin/kiln.js', 'up', '--port', '0', '--gateway-port', '0', '--home', home],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  second.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // Refused at start; were it not, it would serve until killed.
  const timer = setTimeout(() => second.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((resolve) => second.on('exit', resolve));
  clearTimeout(timer);
  assert.equal(code, 1, stderr);
  assert.match(
    stderr,
    new RegExp(`served by another platform \\(pid ${a.child.pid}\\) \\(KILN_HOME_IN_USE\\)`),
  );
  assert.match(stderr, /hint: stop it \(kill \d+\), use another --home, or add --api-only/);

  const b = await startProcess(home, ['--api-only']);
  t.after(() => b.child.kill('SIGTERM'));
  const admin = adminOf(home);
  assert.equal((await call(b.url, 'GET', '/api/v1/models', undefined, admin)).status, 200);
  assert.equal((await call(b.url, 'GET', '/api/v1/endpoints', undefined, admin)).status, 404);
  assert.equal((await call(a.url, 'GET', '/api/v1/endpoints', undefined, admin)).status, 200);
});
