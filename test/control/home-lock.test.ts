// One serving platform per home: the lock refuses while its holder lives, takes over a lock
// whose holder died, and is released only by its holder.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HomeInUseError, lockHome } from '../../src/control/home-lock.ts';
import { tempDir } from '../helpers/temp-dir.ts';

/** A process that lives until killed: another platform, as far as the lock can tell. */
function otherProcess() {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { pid: child.pid ?? 0, stop: () => (child.kill('SIGKILL'), exited) };
}

test('a live holder keeps the home; a dead one’s lock is taken over', async (t) => {
  const home = await tempDir();
  const path = join(home, 'run', 'platform.lock');
  const other = otherProcess();
  t.after(() => other.stop());
  const held = lockHome(home, other.pid);
  assert.equal(readFileSync(path, 'utf8').trim(), String(other.pid));
  assert.throws(
    () => lockHome(home),
    (error: unknown) =>
      error instanceof HomeInUseError &&
      error.code === 'KILN_HOME_IN_USE' &&
      error.pid === other.pid &&
      error.message.includes(home),
  );

  await other.stop(); // it dies without releasing
  const mine = lockHome(home);
  assert.equal(readFileSync(path, 'utf8').trim(), String(process.pid));
  held.release(); // the dead holder's handle: the lock is no longer its, so it stays
  assert.ok(existsSync(path));
  mine.release();
  assert.equal(existsSync(path), false);
});

test('an unreadable lock (a crash mid-write) is taken over', async () => {
  const home = await tempDir();
  lockHome(home).release();
  writeFileSync(join(home, 'run', 'platform.lock'), '');
  const lock = lockHome(home);
  assert.equal(readFileSync(lock.path, 'utf8').trim(), String(process.pid));
  lock.release();
});
