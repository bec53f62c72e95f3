// Store contract, control-plane access (migration 4): tokens and the audit log, and the
// platform's own tokens settled in the home (control-tokens.ts), on SQLite and on PostgreSQL.

import assert from 'node:assert/strict';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  checkToken,
  ensureLocalToken,
  issueToken,
  tokenDigest,
} from '../../src/control/control-tokens.ts';
import { forEachStore } from '../helpers/store-kinds.ts';
import { tempDir } from '../helpers/temp-dir.ts';

forEachStore(
  'tokens: stored as digests, found by digest, listed live or all, revoked once',
  async ({ store, clock }) => {
    const { token, record } = await issueToken(store, clock, {
      name: 'ci',
      role: 'deployer',
      team: 'risk',
      expiresInSeconds: 60,
    });
    assert.equal(record.sha256, tokenDigest(token));
    assert.equal(record.expiresAt, new Date(clock.ms + 60_000).toISOString());
    assert.deepEqual(await store.findTokenByDigest(tokenDigest(token)), record);
    assert.equal(await store.findTokenByDigest(tokenDigest('other')), null);
    assert.deepEqual(await store.getToken(record.id), record);
    assert.equal(await store.getToken('nope'), null);

    assert.deepEqual(await checkToken(store, clock, token), { ok: true, record });
    clock.advance(60_000);
    assert.deepEqual(await checkToken(store, clock, token), {
      ok: false,
      reason: `expired (at ${record.expiresAt})`,
    });
    assert.deepEqual(await checkToken(store, clock, 'kiln_ct_nope'), {
      ok: false,
      reason: 'not known',
    });

    const reader = await issueToken(store, clock, { name: 'ci', role: 'reader', team: null });
    assert.deepEqual(
      (await store.listTokens()).map((t) => t.id),
      [record.id, reader.record.id],
      'names need not be unique',
    );
    assert.equal((await store.revokeToken(record.id))?.revokedAt, new Date(clock.ms).toISOString());
    assert.equal(await store.revokeToken(record.id), null, 'revoked once');
    assert.deepEqual(
      (await store.listTokens()).map((t) => t.id),
      [reader.record.id],
    );
    assert.equal((await store.listTokens({ includeRevoked: true })).length, 2);
    assert.equal((await checkToken(store, clock, reader.token)).ok, true);
    // A deployer without a team cannot even be stored.
    await assert.rejects(
      store.addToken({
        id: 'x',
        name: 'x',
        role: 'deployer',
        team: null,
        prefix: 'x',
        sha256: 'x',
        expiresAt: null,
      }),
    );
  },
);

forEachStore(
  'audit log: appended in order, read newest first, paged, since a time',
  async ({ store, clock }) => {
    for (let i = 0; i < 5; i += 1) {
      await store.appendAudit({
        at: new Date(clock.ms).toISOString(),
        tokenId: i === 0 ? null : 'abc',
        tokenName: i === 0 ? null : 'ci',
        role: i === 0 ? null : 'deployer',
        method: 'PUT',
        route: '/api/v1/endpoints/:name',
        target: `e${i}`,
        status: i === 0 ? 401 : 200,
        code: i === 0 ? 'KILN_TOKEN_MISSING' : null,
      });
      clock.advance(1000);
    }
    const first = await store.listAudit({ limit: 2 });
    assert.deepEqual(
      first.items.map((e) => e.target),
      ['e4', 'e3'],
    );
    assert.notEqual(first.nextPageToken, null);
    const rest = await store.listAudit({ limit: 10, pageToken: first.nextPageToken! });
    assert.deepEqual(
      rest.items.map((e) => e.target),
      ['e2', 'e1', 'e0'],
    );
    assert.deepEqual(rest.items[2], {
      id: 1,
      at: '2026-01-01T00:00:00.000Z',
      tokenId: null,
      tokenName: null,
      role: null,
      method: 'PUT',
      route: '/api/v1/endpoints/:name',
      target: 'e0',
      status: 401,
      code: 'KILN_TOKEN_MISSING',
    });
    const since = await store.listAudit({ limit: 10, since: '2026-01-01T00:00:03.000Z' });
    assert.deepEqual(
      since.items.map((e) => e.target),
      ['e4', 'e3'],
    );
  },
);

forEachStore(
  'the platform token in the home: made once (0600), reused while valid, replaced when revoked',
  async ({ store, clock }) => {
    const dir = await tempDir();
    const path = join(dir, 'home', 'admin.token');
    const spec = { name: 'local-admin', role: 'admin', team: null } as const;
    const first = await ensureLocalToken(store, clock, path, spec, { replaceInvalid: true });
    assert.equal((await readFile(path, 'utf8')).trim(), first);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.equal(await ensureLocalToken(store, clock, path, spec, { replaceInvalid: true }), first);
    // Opened up meanwhile (a copy, a restore): 0600 again when reused.
    await chmod(path, 0o644);
    assert.equal(await ensureLocalToken(store, clock, path, spec, { replaceInvalid: true }), first);
    assert.equal((await stat(path)).mode & 0o777, 0o600);

    // Two processes starting at once agree on one token; the loser revoked its own.
    const other = join(dir, 'home', 'gateway.token');
    const both = await Promise.all([
      ensureLocalToken(
        store,
        clock,
        other,
        { ...spec, role: 'gateway' },
        { replaceInvalid: false },
      ),
      ensureLocalToken(store, clock, other, { ...spec, role: 'gateway' }, { replaceInvalid: true }),
    ]);
    assert.equal(both[0], both[1]);
    const gateways = (await store.listTokens()).filter((t) => t.role === 'gateway');
    assert.equal(gateways.length, 1);

    const record = await store.findTokenByDigest(tokenDigest(first));
    await store.revokeToken(record!.id);
    // Without the home lock (--api-only) a file is left alone; the platform replaces it.
    assert.equal(
      await ensureLocalToken(store, clock, path, spec, { replaceInvalid: false }),
      first,
    );
    const second = await ensureLocalToken(store, clock, path, spec, { replaceInvalid: true });
    assert.notEqual(second, first);
    assert.equal((await checkToken(store, clock, second)).ok, true);
    await writeFile(path, '\n');
    const third = await ensureLocalToken(store, clock, path, spec, { replaceInvalid: true });
    assert.equal((await checkToken(store, clock, third)).ok, true);
  },
);
