// One serving platform per home: the lock is refused while another process holds it (or
// this one), names the holder's pid, and is free again once the holder releases it or dies
// however it dies (the OS drops the file lock: kill -9 leaves nothing stale).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { writeFile, mkdir } from 'node:fs/promises';
import { HomeInUseError, lockHome } from '../../src/control/home-lock.ts';
import { startPlatform } from '../../src/control/start-platform.ts';
import { StopHomeError, stopHome } from '../../src/control/stop-home.ts';
import { identifyProcess, isRunning } from '../../src/core/process-identity.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const moduleUrl = new URL('../../src/control/home-lock.ts', import.meta.url).href;

/** Another process holding the home's lock until killed; resolves once it holds it. */
async function otherHolder(home: string) {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e',
      `import(${JSON.stringify(moduleUrl)}).then((m) => { m.lockHome(${JSON.stringify(home)}); console.log('held'); setInterval(() => {}, 1000); });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', () => resolve());
    child.once('exit', (code) => reject(new Error(`the holder exited ${code}`)));
  });
  return { pid: child.pid ?? 0, kill: () => (child.kill('SIGKILL'), exited) };
}

const refusedBy = (pid: number) => (error: unknown) =>
  error instanceof HomeInUseError && error.code === 'KILN_HOME_IN_USE' && error.pid === pid;

test('another live holder keeps the home; killed with -9, it leaves nothing stale', async (t) => {
  const home = await tempDir();
  const other = await otherHolder(home);
  t.after(() => other.kill());
  assert.throws(() => lockHome(home), refusedBy(other.pid));
  await other.kill();
  const mine = lockHome(home);
  assert.ok(existsSync(join(home, 'run', 'platform.pid')));
  mine.release();
  assert.equal(existsSync(join(home, 'run', 'platform.pid')), false);
});

test('a second hold in the same process is refused too; release frees the home', async () => {
  const home = await tempDir();
  const first = lockHome(home);
  assert.throws(() => lockHome(home), refusedBy(process.pid));
  first.release();
  first.release(); // twice is harmless
  lockHome(home).release();
});

test('a platform that fails to start gives the home back', async () => {
  const home = await tempDir();
  // run/replicas is a file: the local backend cannot make its folder.
  await mkdir(join(home, 'run'), { recursive: true });
  await writeFile(join(home, 'run', 'replicas'), 'not a folder');
  await assert.rejects(
    startPlatform({ home, host: '127.0.0.1', port: 0, dev: true, gateway: false }),
    /EEXIST|ENOTDIR/,
  );
  lockHome(home).release();
});

test('kiln down holds the home without recording itself, and signals a recorded pid only while its start mark matches', async (t) => {
  const home = await tempDir();
  // A process that merely reuses the pid a dead platform recorded.
  const stranger = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
    stdio: 'ignore',
  });
  const strangerGone = new Promise<void>((resolve) => stranger.once('exit', () => resolve()));
  t.after(() => (stranger.kill('SIGKILL'), strangerGone));
  const strangerPid = stranger.pid ?? 0;
  const strangerIdentity = identifyProcess(strangerPid);
  assert.ok(strangerIdentity !== null);

  // What `kiln down` takes: the lock, and no platform.pid.
  const quiet = lockHome(home, { announce: false });
  assert.equal(existsSync(join(home, 'run', 'platform.pid')), false);
  assert.throws(
    () => lockHome(home),
    (error: unknown) => error instanceof HomeInUseError && error.holder === null,
  );
  // A dead platform's record, whose pid now names the stranger.
  await writeFile(
    join(home, 'run', 'platform.pid'),
    `${strangerPid} ${strangerIdentity.startMark}-of-the-dead-platform\n`,
  );
  await assert.rejects(stopHome(home, { timeoutMs: 200 }), StopHomeError);
  assert.ok(isRunning(strangerIdentity), 'the stranger was not signalled');
  quiet.release();
  // Once the lock is free, kiln down takes it and clears the stale record.
  assert.deepEqual(await stopHome(home), { kind: 'nothing' });
  assert.equal(existsSync(join(home, 'run', 'platform.pid')), false);
  assert.ok(isRunning(strangerIdentity));
});
