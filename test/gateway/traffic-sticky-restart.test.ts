// Stickiness across a gateway restart (issue 13): the same caller key gets the same variant
// from a fresh gateway process — nothing about the assignment lives in the process.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileTrafficSplit } from '../../src/traffic/traffic-split.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { fakeWorker, infer, snapshot, validRequest } from './gateway-harness.ts';
import { answerOf, policyEndpoint, variant } from './traffic-harness.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** A gateway process on the persisted snapshot in `stateDir`; resolves with its URL and a stop. */
async function gatewayProcess(
  stateDir: string,
): Promise<{ url: string; stop: () => Promise<number | null> }> {
  const child = spawn(
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
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let stdout = '';
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      const end = stdout.indexOf('\n');
      if (end !== -1) resolve(stdout.slice(0, end));
    });
    child.on('exit', () => reject(new Error(`gateway exited early: ${stderr}`)));
  });
  const { url } = JSON.parse(line) as { url: string };
  return {
    url,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

test('every caller keeps its variant across a gateway restart (a fresh process), as the control plane computes it', async () => {
  const stable = await fakeWorker('ok', answerOf(0.25));
  const canary = await fakeWorker('ok', answerOf(0.75));
  const stateDir = await tempDir('kiln-gateway-sticky-');
  const route = policyEndpoint([variant(stable, 3, 60), variant(canary, 4, 40)], {
    salt: 'experiment-7',
    keyPath: '$.parameters.user_id',
  });
  await writeFile(join(stateDir, 'routing-snapshot.json'), JSON.stringify(snapshot(5, [route])));
  const compiled = compileTrafficSplit({
    endpoint: 'fraud',
    salt: 'experiment-7',
    versions: [
      { model: 'fraud-model', version: 3, weight: 60 },
      { model: 'fraud-model', version: 4, weight: 40 },
    ],
  });
  assert.ok(compiled.ok);
  const users = Array.from({ length: 120 }, (_, i) => `customer-${i * 7919}`);

  const assignments = async (url: string): Promise<string[]> => {
    const versions: string[] = [];
    for (const [i, user] of users.entries()) {
      // Half name themselves in the header, half in the body.
      const reply =
        i % 2 === 0
          ? await infer(url, validRequest, { 'kiln-user': user })
          : await infer(url, { ...validRequest, parameters: { user_id: user } });
      assert.equal(reply.status, 200);
      versions.push(reply.headers.get('kiln-model-version') ?? '');
    }
    return versions;
  };

  const first = await gatewayProcess(stateDir);
  const before = await assignments(first.url);
  assert.equal(await first.stop(), 0);
  const second = await gatewayProcess(stateDir);
  const after = await assignments(second.url);
  assert.equal(await second.stop(), 0);

  assert.deepEqual(after, before, 'the same variant for every user');
  assert.deepEqual(
    before,
    users.map((user) => String(compiled.split.pick(user).version)),
  );
  assert.ok(before.includes('3') && before.includes('4'), 'both variants have users');
});
