// The store contract suite runs every test on each Store implementation: SQLite (a temp file)
// always, and PostgreSQL (a fresh database on a server started by the test file) where the
// server binaries exist — under CI they must (see postgres-server.ts).
//
//   forEachStore('creates a model', async ({ store, clock }) => { ... });
//
// registers one node:test test per kind, named "[sqlite] creates a model" / "[postgres] …".

import { test } from 'node:test';
import { join } from 'node:path';
import type { Store } from '../../src/store/store.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { PgStore } from '../../src/store/postgres/pg-store.ts';
import type { Migration } from '../../src/store/sqlite/migrations.ts';
import { FakeClock, tempDir } from './temp-dir.ts';
import { postgresServer, postgresUnavailable } from './postgres-server.ts';

export type StoreKind = 'sqlite' | 'postgres';

export interface StoreUnderTest {
  readonly kind: StoreKind;
  readonly store: Store;
  readonly clock: FakeClock;
  /**
   * Another Store on the same database (another control plane, or the same one reopened),
   * with its own clock unless one is given; closed when the test ends.
   */
  openAnother(options?: {
    readonly clock?: FakeClock;
    readonly migrations?: readonly Migration[];
  }): Promise<Store>;
  /** Where the database is: the SQLite file path or the PostgreSQL URL. */
  readonly location: string;
}

export const storeKinds: readonly StoreKind[] = ['sqlite', 'postgres'];

/** Opens a fresh, empty store of this kind. */
export async function openStoreUnderTest(
  kind: StoreKind,
  options: { readonly clock?: FakeClock; readonly migrations?: readonly Migration[] } = {},
): Promise<StoreUnderTest & { close(): Promise<void> }> {
  const clock = options.clock ?? new FakeClock();
  const opened: Store[] = [];
  let location: string;
  let open: (o: { clock?: FakeClock; migrations?: readonly Migration[] }) => Promise<Store>;
  if (kind === 'sqlite') {
    location = join(await tempDir(), 'kiln.db');
    open = (o) =>
      Promise.resolve(
        SqliteStore.open(location, {
          clock: o.clock ?? clock,
          ...(o.migrations === undefined ? {} : { migrations: o.migrations }),
        }),
      );
  } else {
    location = await (await postgresServer()).createDatabase();
    open = (o) =>
      PgStore.open(location, {
        clock: o.clock ?? clock,
        ...(o.migrations === undefined ? {} : { migrations: o.migrations }),
      });
  }
  const store = await open(options);
  opened.push(store);
  return {
    kind,
    store,
    clock,
    location,
    async openAnother(o = {}) {
      const another = await open({ clock: o.clock ?? new FakeClock(clock.ms), ...o });
      opened.push(another);
      return another;
    },
    async close() {
      for (const s of opened) await s.close().catch(() => undefined);
    },
  };
}

/** One test per store kind; PostgreSQL is skipped (reason printed) only off CI without a server. */
export function forEachStore(
  name: string,
  body: (subject: StoreUnderTest) => Promise<void>,
  options: { readonly kinds?: readonly StoreKind[] } = {},
): void {
  for (const kind of options.kinds ?? storeKinds) {
    const skip = kind === 'postgres' ? postgresUnavailable() : null;
    test(`[${kind}] ${name}`, skip === null ? {} : { skip }, async () => {
      const subject = await openStoreUnderTest(kind);
      try {
        await body(subject);
      } finally {
        await subject.close();
      }
    });
  }
}
