// The local backend's replica folders: two platforms on one home never share one (replica
// ids are unique only within a platform), and folders left by a platform that died, or by
// an earlier platform with this pid, are removed at the next start; a running one's are kept.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LocalBackend, replicaFolder } from '../../src/control/backends/local/local-backend.ts';
import { tempDir } from '../helpers/temp-dir.ts';

test('the same replica id started by two platforms gets two folders', () => {
  assert.notEqual(
    replicaFolder('/h/run', 'fraud-v1-r0-1', 100),
    replicaFolder('/h/run', 'fraud-v1-r0-1', 200),
  );
  assert.equal(replicaFolder('/h/run', 'fraud-v1-r0-1', 100), '/h/run/replicas/fraud-v1-r0-1.100');
});

test('init removes the folders of platforms that are gone and keeps the others', async (t) => {
  const runDir = join(await tempDir(), 'run');
  // A platform still running (a live process), one that died (a pid that exited), this one.
  const live = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  t.after(() => live.kill('SIGKILL'));
  const dead = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => dead.once('exit', resolve));
  const folders = {
    live: replicaFolder(runDir, 'a-v1-r0-1', live.pid ?? 0),
    dead: replicaFolder(runDir, 'a-v1-r0-1', dead.pid ?? 0),
    mine: replicaFolder(runDir, 'b-v2-r0-3', process.pid),
    unnamed: join(runDir, 'replicas', 'from-an-older-kiln'),
  };
  for (const folder of Object.values(folders)) {
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, 'spec.json'), '{}');
  }
  await new LocalBackend({ runDir }).init();
  assert.equal(existsSync(folders.dead), false);
  // This platform's own pid from an earlier life (a container's platform is always pid 1):
  // nothing of this one has started yet, so it is left over too.
  assert.equal(existsSync(folders.mine), false);
  assert.ok(existsSync(folders.live));
  assert.ok(existsSync(folders.unnamed));
});
