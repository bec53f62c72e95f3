// The hf-llm worker as a process (src/worker/main.ts), as a platform starts it: listening,
// then ready with no tensor inputs or outputs, serving /v1/models and the v2 probes, and
// exiting 0 after a drain on SIGTERM.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { WorkerEvent } from '../../../src/worker/worker-spec.ts';
import { until } from '../../helpers/until.ts';
import { llmWorkerSpec } from './llm-worker-harness.ts';

const root = fileURLToPath(new URL('../../..', import.meta.url));

test('an hf-llm worker process becomes ready with inputs [] and serves the OpenAI routes', async () => {
  const spec = await llmWorkerSpec();
  assert.equal(spec.artifacts.kind, 'local');
  const path = join(spec.artifacts.kind === 'local' ? spec.artifacts.root : '', '..', 'spec.json');
  await writeFile(path, JSON.stringify(spec));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/worker/main.ts', '--spec', path], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const events: WorkerEvent[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    events.push(JSON.parse(line) as WorkerEvent);
  });
  try {
    await until(() => events.some((e) => e.event !== 'listening'), 'ready or failed', 20);
    const ready = events.find((e) => e.event === 'ready');
    assert.ok(ready?.event === 'ready', JSON.stringify(events));
    assert.deepEqual([ready.inputs, ready.outputs], [[], []]);
    // tiny-llama's 1,016,960 float32 parameters and the 8 MiB KV cache, one thread.
    assert.equal(ready.memoryBytes, 4 * 1_016_960 + 8 * 2 ** 20);
    const listening = events.find((e) => e.event === 'listening');
    assert.ok(listening?.event === 'listening');
    assert.equal((await fetch(`${listening.url}/v2/health/ready`)).status, 200);
    const models = (await (await fetch(`${listening.url}/v1/models`)).json()) as {
      data: { id: string }[];
    };
    assert.deepEqual(
      models.data.map((m) => m.id),
      ['tiny'],
    );
  } finally {
    child.kill('SIGTERM');
  }
  assert.equal(await exited, 0);
  assert.equal(existsSync(spec.workDir), false);
});
