// Loads one model of a pool worker's assignment the way a dedicated worker loads its own
// (start-worker.ts): copy the version's blobs into a private folder while re-hashing each
// (a blob that no longer matches its name fails the load), load the runtime, compile the
// schema with the gateway's policy, warm up. The result is a WorkerState the ordinary worker
// server (worker-server.ts) serves, so a pool answers exactly as a dedicated replica would.
// The control plane checked the signature policy when it put the model in the assignment.

import { rm } from 'node:fs/promises';
import { isKilnError } from '../../core/errors.ts';
import type { ArtifactLocator } from '../../registry/artifact-storage.ts';
import { openArtifactStorage } from '../../registry/open-artifact-storage.ts';
import { loadRuntime } from '../../runtimes/load-runtime.ts';
import { compileSchema } from '../../protocol/v2/schema.ts';
import { inputDatatypePolicy } from '../../protocol/v2/input-datatypes.ts';
import type { PoolModel } from '../../protocol/pool/pool-protocol.ts';
import { featureColumnLayout } from '../feature-columns.ts';
import type { WorkerState } from '../worker-server.ts';

export type PoolLoadOutcome =
  | { readonly ok: true; readonly state: WorkerState; readonly memoryBytes: number }
  | { readonly ok: false; readonly code: string; readonly message: string };

export async function loadPoolModel(
  model: PoolModel,
  artifacts: ArtifactLocator,
  modelDir: string,
): Promise<PoolLoadOutcome> {
  try {
    await rm(modelDir, { recursive: true, force: true });
    await (await openArtifactStorage(artifacts)).materialize(model.files, modelDir);
  } catch (error) {
    if (isKilnError(error)) return { ok: false, code: error.code, message: error.message };
    const message = `could not read the model's artifacts: ${(error as Error).message}`;
    return { ok: false, code: 'KILN_INTERNAL', message };
  }
  const columns = featureColumnLayout(model.format, model.schema);
  const outcome = await loadRuntime({
    modelDir,
    format: model.format,
    files: model.files.map((f) => f.path),
    schema: columns?.runtimeSchema ?? model.schema,
    config: model.config,
  });
  if (!outcome.ok) {
    await rm(modelDir, { recursive: true, force: true });
    return { ok: false, code: 'KILN_MODEL_LOAD_FAILED', message: outcome.reason };
  }
  const runtime = outcome.runtime;
  const schema = model.schema ?? { inputs: runtime.inputs, outputs: runtime.outputs };
  let compiled;
  try {
    compiled = compileSchema(schema, { inputDatatypes: inputDatatypePolicy(model.format) });
    await runtime.warmup();
  } catch (error) {
    await runtime.unload();
    await rm(modelDir, { recursive: true, force: true });
    const message = `warm-up failed: ${(error as Error).message}`;
    return { ok: false, code: 'KILN_MODEL_LOAD_FAILED', message };
  }
  return {
    ok: true,
    memoryBytes: runtime.memoryBytes(),
    state: {
      phase: 'ready',
      reason: null,
      runtime,
      schema: compiled,
      inflight: 0,
      // Pool models run request by request (the deploy refuses batching on a pool).
      batcher: null,
      columns,
    },
  };
}
