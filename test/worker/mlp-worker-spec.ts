// A worker spec serving fixtures/onnx/mlp.onnx from a fresh artifact store in a temp home,
// for tests that start a real worker (in process or as a child process).

import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ArtifactStore } from '../../src/registry/artifact-store.ts';
import type { WorkerSpec } from '../../src/worker/worker-spec.ts';
import { tempDir } from '../helpers/temp-dir.ts';

const mlp = fileURLToPath(new URL('../../fixtures/onnx/mlp.onnx', import.meta.url));

/** The spec, and the home it lives in (removed when the test file finishes). */
export async function mlpWorkerSpec(
  overrides: Partial<WorkerSpec> = {},
): Promise<{ spec: WorkerSpec; home: string }> {
  const home = await tempDir('kiln-worker-');
  const store = new ArtifactStore(join(home, 'artifacts'));
  await store.init();
  const blob = await store.ingest(createReadStream(mlp), null, { maxBytes: 1 << 30 });
  const spec: WorkerSpec = {
    replicaId: 'mlp-1',
    endpoint: 'mlp',
    model: 'mlp',
    version: 1,
    format: 'onnx',
    files: [{ path: 'mlp.onnx', size: blob.size, sha256: blob.sha256 }],
    schema: null,
    artifacts: store.locator,
    workDir: join(home, 'replica'),
    host: '127.0.0.1',
    port: 0,
    maxBodyBytes: 1_000_000,
    config: {},
    batching: null,
    defaultTimeoutMs: null,
    ...overrides,
  };
  return { spec, home };
}
