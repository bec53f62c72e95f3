// What the store tests of traffic and scaling start from: model `iris` with placeholder
// versions and endpoints serving its version 1, written through the Store interface so the
// same seed works on every store kind.

import type { Store } from '../../src/store/store.ts';
import { placeholderVersion } from './stored-version.ts';

export async function seedEndpoints(
  store: Store,
  options: {
    readonly versions: number;
    readonly endpoints: readonly string[];
    readonly replicas?: number;
  },
): Promise<void> {
  await store.createModel({ name: 'iris', team: 'default', description: '' });
  for (let i = 0; i < options.versions; i++)
    await store.createVersion('iris', placeholderVersion());
  for (const name of options.endpoints) {
    await store.putEndpoint({
      name,
      team: 'default',
      model: 'iris',
      version: 1,
      ref: '1',
      replicas: options.replicas ?? 1,
      config: {},
    });
  }
}
