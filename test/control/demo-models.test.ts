// `kiln up --dev` (npm start) on a fresh home registers the demo models and serves them; a
// first start that fails half-way must not leave the home with demo models and no endpoints.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { startPlatform } from '../../src/control/start-platform.ts';
import { demoMeasurements, demoPendingMarker } from '../../src/control/demo-models.ts';
import { tempDir } from '../helpers/temp-dir.ts';

test('a first start that fails after registering the demo models deploys them on the next', async () => {
  const home = await tempDir();
  // The API port is taken: the start fails after the demo models are registered.
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const { port } = taken.address() as AddressInfo;
  const options = { home, host: '127.0.0.1', gateway: false, dev: true, demo: true } as const;
  await assert.rejects(startPlatform({ ...options, port }));
  taken.close();
  assert.ok(existsSync(demoPendingMarker(home)), 'the demo is marked as not served yet');

  const platform = await startPlatform({ ...options, port: 0 });
  try {
    assert.ok(platform.demoModels.length > 0);
    const endpoints = await platform.registry.store.listEndpoints();
    assert.deepEqual(
      endpoints.map((e) => e.name).sort(),
      [...platform.demoModels].filter((name) => endpoints.some((e) => e.name === name)).sort(),
    );
    assert.ok(endpoints.length > 0, 'the demo endpoints are deployed');
    // Every demo model is served, the LLM too (on a small KV budget, so it starts at once).
    assert.deepEqual(endpoints.map((e) => e.name).sort(), ['digits-cnn', 'fraud-xgb', 'tiny-llm']);
    const llm = endpoints.find((e) => e.name === 'tiny-llm');
    assert.deepEqual(llm?.config, { llm: { kvCacheBytes: 4 * 2 ** 20 } });
    assert.equal(llm.replicas, 1);
    // It is the engine's tiny Llama, with its tokenizer and chat template (not the PyTorch
    // reference outputs the tests keep beside it).
    const version = await platform.registry.store.getVersion('tiny-llm', 1);
    assert.equal(version?.format, 'hf-llm');
    assert.deepEqual(version.files.map((f) => f.path).sort(), [
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    const folder = new URL('../../fixtures/llm/tiny-llama/', import.meta.url).pathname;
    for (const file of version.files) {
      const data = await readFile(join(folder, file.path));
      assert.equal(createHash('sha256').update(data).digest('hex'), file.sha256, file.path);
    }
    const tokenizerConfig = JSON.parse(
      await readFile(join(folder, 'tokenizer_config.json'), 'utf8'),
    ) as { chat_template?: string };
    assert.match(tokenizerConfig.chat_template ?? '', /add_generation_prompt/);
    assert.equal(existsSync(demoPendingMarker(home)), false);
    // Registered metrics are the measured ones (measure_demo_metrics.py), with how.
    const measurements = demoMeasurements();
    assert.deepEqual(Object.keys(measurements).sort(), ['digits-cnn', 'fraud-xgb']);
    for (const [name, measurement] of Object.entries(measurements)) {
      const version = await platform.registry.store.getVersion(name, 1);
      assert.ok(version !== null, name);
      assert.deepEqual(version.metadata.metrics, measurement.metrics, name);
      assert.equal(version.metadata.extra?.evaluation, measurement.evaluation, name);
    }
  } finally {
    await platform.close();
  }
  // A third start has nothing pending: no demo registration, no redeploy.
  const again = await startPlatform({ ...options, port: 0 });
  try {
    assert.deepEqual(again.demoModels, []);
  } finally {
    await again.close();
  }
});
