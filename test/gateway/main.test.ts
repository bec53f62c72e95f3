// The gateway as the control plane runs it: a child process that prints one JSON line.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/temp-dir.ts';
import { call, endpointRoute, snapshot } from './gateway-harness.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** `node src/gateway/main.ts` as the control plane starts it, on a free loopback port. */
function spawnGateway(stateDir: string, extra: readonly string[] = []) {
  return spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/gateway/main.ts',
      '--control-url',
      'http://127.0.0.1:9',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--state-dir',
      stateDir,
      ...extra,
    ],
    { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] },
  );
}

test('main.ts prints one listening line with the real port and exits 0 on SIGTERM', async () => {
  const stateDir = await tempDir('kiln-gateway-main-');
  await writeFile(
    join(stateDir, 'routing-snapshot.json'),
    JSON.stringify(snapshot(2, [endpointRoute({ replicas: [] })])),
  );
  const child = spawnGateway(stateDir);
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const firstLine = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      const end = stdout.indexOf('\n');
      if (end !== -1) resolve(stdout.slice(0, end));
    });
    child.on('exit', () => reject(new Error(`gateway exited early: ${stderr}`)));
  });
  const line = JSON.parse(firstLine) as { event: string; url: string };
  assert.equal(line.event, 'listening');
  assert.match(line.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.notEqual(line.url, 'http://127.0.0.1:0');
  assert.equal((await call(line.url, 'GET', '/v2/health/live')).status, 200);
  // Static stability: the persisted snapshot makes it ready with no control plane.
  assert.equal((await call(line.url, 'GET', '/v2/health/ready')).status, 200);

  child.kill('SIGTERM');
  assert.equal(await exited, 0);
  assert.equal(stdout.trim().split('\n').length, 1, 'exactly one line on stdout');
});

test('with --exit-with-parent, main.ts stops when its stdin pipe closes (its parent is gone)', async () => {
  const stateDir = await tempDir('kiln-gateway-main-');
  const child = spawnGateway(stateDir, ['--exit-with-parent']);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  child.stdin.end(); // what the kernel does for a parent killed with SIGKILL
  assert.equal(await exited, 0);
});
