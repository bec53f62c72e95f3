// Traffic management in the SQLite store, what is SQLite's own: writers in several processes
// on one file serialised by its lock. Store behaviour on both kinds is in
// contract-traffic.test.ts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';
import { seedEndpoints } from '../helpers/seed-endpoints.ts';

const root = new URL('../../', import.meta.url).pathname;

/** A store with model iris v1..v3 and endpoint `iris` serving v1. */
async function openStore(): Promise<{ store: SqliteStore; path: string; clock: FakeClock }> {
  const dir = await tempDir();
  const clock = new FakeClock();
  const path = join(dir, 'kiln.db');
  const store = SqliteStore.open(path, { clock });
  await seedEndpoints(store, { versions: 3, endpoints: ['iris'] });
  return { store, path, clock };
}

test('rollouts started at once from several processes: exactly one is created, the others are told which', async () => {
  const { store, path } = await openStore();
  await store.close();
  const goFile = `${path}.go`;
  const ids = ['p-1', 'p-2', 'p-3', 'p-4'];
  const children = ids.map((id) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'test/store/rollout-race-child.ts', path, goFile, id],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const lines: unknown[] = [];
    createInterface({ input: child.stdout }).on('line', (line) => lines.push(JSON.parse(line)));
    const exited = new Promise<void>((resolve, reject) =>
      child.on('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`child ${id} exited ${code}: ${stderr}`)),
      ),
    );
    return { child, lines, exited };
  });
  // Every child has opened the store before the go: the writes race, not the startups.
  // Spawning under load is slow, so the wait is generous; a child that never gets ready is
  // killed rather than left waiting for the go.
  const deadline = Date.now() + 120_000;
  while (!children.every((c) => c.lines.length >= 1)) {
    if (Date.now() > deadline || children.some((c) => c.child.exitCode !== null)) {
      for (const c of children) c.child.kill('SIGKILL');
      assert.fail('every child should have opened the store');
    }
    await delay(10);
  }
  await writeFile(goFile, 'go');
  await Promise.all(children.map((c) => c.exited));
  const results = children.map((c) => c.lines[1] as { id: string; ok: boolean; code?: string });
  const winners = results.filter((r) => r.ok);
  assert.equal(winners.length, 1, JSON.stringify(results));
  for (const r of results.filter((x) => !x.ok)) assert.equal(r.code, 'KILN_ROLLOUT_IN_PROGRESS');

  const again = SqliteStore.open(path);
  assert.equal((await again.getActiveRollout('iris'))?.id, winners[0]?.id);
  assert.equal((await again.listRollouts({ endpoint: 'iris' })).length, 1);
  const traffic = await again.getEndpointTraffic('iris');
  assert.equal(traffic?.revision, 1);
  assert.equal((await again.listTrafficEvents('iris', { limit: 10 })).items.length, 1);
  await again.close();
});
