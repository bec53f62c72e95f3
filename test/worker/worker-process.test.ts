// The worker as a process (src/worker/main.ts): stdin that is not a pipe does not read as
// "the supervisor is gone"; a stop while loading, and a failed load, leave no model copy.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { WorkerSpec } from '../../src/worker/worker-spec.ts';
import { mlpWorkerSpec } from './mlp-worker-spec.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

async function specFile(
  overrides: Partial<WorkerSpec> = {},
): Promise<{ path: string; spec: WorkerSpec }> {
  const { spec, home } = await mlpWorkerSpec(overrides);
  const path = join(home, 'spec.json');
  await writeFile(path, JSON.stringify(spec));
  return { path, spec };
}

function startProcess(specPath: string, stdin: 'ignore' | 'pipe') {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/worker/main.ts', '--spec', specPath],
    {
      cwd: root,
      stdio: [stdin, 'pipe', 'pipe'],
    },
  );
  const events: { event?: string }[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      events.push(JSON.parse(line) as { event?: string });
    } catch {
      // not an event
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, events, exited };
}

const kindOf = (e: { event?: string }): string | undefined => e.event;

test('with stdin not a pipe (/dev/null), a ready worker keeps serving until SIGTERM', async () => {
  const { path, spec } = await specFile();
  const worker = startProcess(path, 'ignore');
  for (let i = 0; i < 2000 && !worker.events.some((e) => kindOf(e) === 'ready'); i++)
    await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(
    worker.events.some((e) => kindOf(e) === 'ready'),
    JSON.stringify(worker.events),
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(worker.child.exitCode, null, 'still running');
  worker.child.kill('SIGTERM');
  assert.equal(await worker.exited, 0);
  assert.equal(existsSync(spec.workDir), false);
});

test('a failed load exits 3 and leaves no copy of the model', async () => {
  // A file that is not the blob it claims: the re-hash refuses it after copying begins.
  const { path, spec } = await specFile({
    files: [{ path: 'mlp.onnx', size: 10, sha256: '0'.repeat(64) }],
  });
  const worker = startProcess(path, 'pipe');
  assert.equal(await worker.exited, 3);
  assert.ok(
    worker.events.some((e) => kindOf(e) === 'failed'),
    JSON.stringify(worker.events),
  );
  assert.equal(existsSync(spec.workDir), false);
});
