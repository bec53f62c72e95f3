// Zero-loss hot swap: under steady load from many concurrent clients, changing an
// endpoint's version and then its replica count loses no request, and every response is
// stamped with a version that exists.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, readArtifact, register, testPlatform } from '../helpers/platform.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;
const platform = await testPlatform({ gateway: true });

interface EndpointBody {
  status: { ready: boolean; readyReplicas: number; replicas: { version: number; state: string }[] };
}

async function endpoint(): Promise<EndpointBody> {
  return (await call(platform.url, 'GET', '/api/v1/endpoints/swap')).body as EndpointBody;
}

async function waitUntil(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('a version swap and a scale-down under load lose no request', async () => {
  const [file] = await readArtifact(`${fixtures}xgb-binary.json`);
  assert.ok(file !== undefined);
  // Version 2: the same model with different bytes (a trailing newline), so a new artifact.
  const data2 = Buffer.concat([file.data, Buffer.from('\n')]);
  const { createHash } = await import('node:crypto');
  const file2 = {
    ...file,
    data: data2,
    size: data2.length,
    sha256: createHash('sha256').update(data2).digest('hex'),
  };
  assert.equal((await register(platform.url, 'swap-model', 'xgboost', [file])).status, 201);
  assert.equal((await register(platform.url, 'swap-model', 'xgboost', [file2])).status, 201);
  await call(platform.url, 'PUT', '/api/v1/endpoints/swap', {
    model: 'swap-model',
    version: 1,
    replicas: 2,
  });
  await waitUntil('version 1 ready on both replicas', async () => {
    const ready = await fetch(`${platform.gatewayUrl}/v2/models/swap/ready`);
    await ready.arrayBuffer();
    return ready.status === 200 && (await endpoint()).status.readyReplicas === 2;
  });

  const body = JSON.stringify({
    inputs: [{ name: 'input', shape: [1, 5], datatype: 'FP32', data: [0.1, -0.2, 0.3, -0.4, 0.5] }],
  });
  const versions = new Map<string, number>();
  const failures: string[] = [];
  let stop = false;
  let sent = 0;
  const clients = Array.from({ length: 8 }, async () => {
    while (!stop) {
      sent++;
      try {
        const response = await fetch(`${platform.gatewayUrl}/v2/models/swap/infer`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        const json = (await response.json()) as { model_version?: string; error?: string };
        if (response.status !== 200) failures.push(`${response.status}: ${json.error ?? ''}`);
        else
          versions.set(
            json.model_version ?? '?',
            (versions.get(json.model_version ?? '?') ?? 0) + 1,
          );
      } catch (error) {
        failures.push(String(error));
      }
    }
  });

  // Each step waits for answers, not for a pause: the load is on when the swap starts, and
  // requests are answered after each change, however slow the machine.
  const answered = (version: string): number => versions.get(version) ?? 0;
  const moreAnswers = async (version: string): Promise<void> => {
    const before = answered(version);
    await waitUntil(`more answers from version ${version}`, () =>
      Promise.resolve(answered(version) >= before + 8),
    );
  };
  await moreAnswers('1');
  // The swap itself: no grace, so version 1 is not kept running warm for a rollback.
  await call(platform.url, 'PUT', '/api/v1/endpoints/swap', {
    model: 'swap-model',
    version: 2,
    replicas: 2,
    warmGraceMs: 0,
  });
  await waitUntil('only version 2 left', async () => {
    const s = await endpoint();
    return s.status.readyReplicas === 2 && s.status.replicas.every((r) => r.version === 2);
  });
  await moreAnswers('2');
  await call(platform.url, 'PUT', '/api/v1/endpoints/swap', {
    model: 'swap-model',
    version: 2,
    replicas: 1,
  });
  await waitUntil('one replica left', async () => (await endpoint()).status.replicas.length === 1);
  await moreAnswers('2');
  stop = true;
  await Promise.all(clients);

  assert.deepEqual(failures, [], `${failures.length} of ${sent} requests failed`);
  assert.deepEqual([...versions.keys()].sort(), ['1', '2']);
  assert.ok((versions.get('2') ?? 0) > 0 && (versions.get('1') ?? 0) > 0);
});
