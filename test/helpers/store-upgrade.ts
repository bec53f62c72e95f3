// Upgrade tests on every store kind: a database made by the first `applied` migrations is
// written through the old schema, then reopened by the current code, which migrates it.
//
//   forEachStoreUpgrade('migration 6 keeps endpoints', 5, async (old, upgrade) => { ... });

import { test } from 'node:test';
import type { Store } from '../../src/store/store.ts';
import { sqliteMigrations } from '../../src/store/sqlite/migrations.ts';
import { postgresMigrations } from '../../src/store/postgres/pg-migrations.ts';
import { openStoreUnderTest, storeKinds } from './store-kinds.ts';
import { postgresUnavailable } from './postgres-server.ts';

export function forEachStoreUpgrade(
  name: string,
  applied: number,
  body: (old: Store, upgrade: () => Promise<Store>) => Promise<void>,
): void {
  for (const kind of storeKinds) {
    const skip = kind === 'postgres' ? postgresUnavailable() : null;
    test(`[${kind}] ${name}`, skip === null ? {} : { skip }, async () => {
      const migrations = kind === 'sqlite' ? sqliteMigrations : postgresMigrations;
      const subject = await openStoreUnderTest(kind, { migrations: migrations.slice(0, applied) });
      try {
        await body(subject.store, async () => {
          await subject.store.close();
          return subject.openAnother();
        });
      } finally {
        await subject.close();
      }
    });
  }
}
