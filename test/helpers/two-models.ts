// The registry the reconciler tests run on: models `a` and `b`, two versions each of the
// XGBoost fixture (the second a byte longer: another artifact, another revision).

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { ArtifactStore } from '../../src/registry/artifact-store.ts';
import type { Registry } from '../../src/registry/registry.ts';

const fixture = new URL('../../fixtures/registry/xgb-binary.json', import.meta.url).pathname;

export async function registerTwoModels(
  registry: Registry,
  artifacts: ArtifactStore,
): Promise<void> {
  const data = await readFile(fixture);
  for (const model of ['a', 'b']) {
    await registry.createModel(model);
    for (const bytes of [data, Buffer.concat([data, Buffer.from('\n')])]) {
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      await artifacts.ingest(Readable.from([bytes]), sha256, { maxBytes: 1e9 });
      await registry.registerVersion(model, {
        format: 'xgboost',
        files: [{ path: 'model.json', size: bytes.length, sha256 }],
      });
    }
  }
}
