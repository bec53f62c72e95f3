// The locked control plane: outside --dev every call but health needs a bearer token.
// The token matrix — admin / deployer / reader × a target of the deployer's own team / of
// another team × every mutating route — gives exactly the allowed outcomes; a refused call
// (401 or 403) changes nothing; and every mutating call, allowed or refused, is in the audit
// log with who made it and how it ended.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { generateSigningKeyPair } from '../../src/registry/signing.ts';
import { call, errorCode, readArtifact, testPlatform } from '../helpers/platform.ts';
import { FakeClock } from '../helpers/temp-dir.ts';
import { until } from '../helpers/until.ts';

const fixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;
const [artifact] = await readArtifact(`${fixtures}xgb-binary.json`);
if (artifact === undefined) throw new Error('no fixture');
const manifest = {
  format: 'xgboost',
  files: [{ path: artifact.path, size: artifact.size, sha256: artifact.sha256 }],
};

const clock = new FakeClock();
const platform = await testPlatform({ dev: false, clock });
const { url, admin } = platform;

interface Made {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly who: string | null;
}
/** Every mutating call this file makes, in order: the audit log must hold exactly these. */
const made: Made[] = [];

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** One API call; a mutating one is noted (with the name of the token that made it). */
async function act(
  who: string | null,
  headers: Record<string, string>,
  method: string,
  path: string,
  body?: unknown,
): Promise<Awaited<ReturnType<typeof call>>> {
  const response = await call(url, method, path, body, headers);
  if (method !== 'GET' && method !== 'HEAD')
    made.push({ method, path, status: response.status, who });
  return response;
}

function expectStatus(response: { status: number; body: unknown }, status: number): void {
  assert.equal(response.status, status, JSON.stringify(response.body));
}

const asAdmin = (method: string, path: string, body?: unknown) =>
  act('local-admin', admin, method, path, body);

async function createToken(name: string, role: string, team?: string): Promise<string> {
  const created = await asAdmin('POST', '/api/v1/tokens', {
    name,
    role,
    ...(team === undefined ? {} : { team }),
  });
  expectStatus(created, 201);
  return (created.body as { token: string }).token;
}

/** Everything a mutating call could change, read as admin (GETs are not audited). */
async function fingerprint(blobs: readonly string[]): Promise<string> {
  const get = async (path: string): Promise<unknown> =>
    (await call(url, 'GET', path, undefined, admin)).body;
  const models = (await get('/api/v1/models?limit=500')) as { items: { name: string }[] };
  const perModel = await Promise.all(
    models.items.map(async ({ name }) => [
      await get(`/api/v1/models/${name}/versions?includeDeleted=true&limit=500`),
      await get(`/api/v1/models/${name}/aliases`),
    ]),
  );
  const endpoints = (await get('/api/v1/endpoints')) as { items: { status?: unknown }[] };
  const blobStates = await Promise.all(
    blobs.map(
      async (digest) =>
        (await call(url, 'HEAD', `/api/v1/blobs/${digest}`, undefined, admin)).status,
    ),
  );
  return JSON.stringify([
    models,
    perModel,
    endpoints.items.map(({ status: _status, ...endpoint }) => endpoint),
    await get('/api/v1/api-keys'),
    await get('/api/v1/trusted-keys'),
    await get('/api/v1/policy'),
    await get('/api/v1/teams/limits'),
    await get('/api/v1/tokens?includeRevoked=true'),
    blobStates,
  ]);
}

type Need = 'team' | 'upload' | 'admin';

interface Case {
  readonly name: string;
  readonly need: Need;
  readonly method: string;
  readonly path: string;
  readonly body?: unknown;
  /** Status when allowed. */
  readonly ok: number;
  /** Bytes for a blob upload. */
  readonly raw?: Buffer;
}

interface Fixture {
  readonly model: string;
  readonly endpoint: string;
  readonly apiKeyId: string;
  readonly trustedKeyId: string;
  readonly tokenId: string;
  readonly blob: Buffer;
}

/** A fresh set of objects of team `team`, made by the admin, for one row of the matrix. */
async function fixture(key: string, team: string): Promise<Fixture> {
  const model = `m-${key}`;
  expectStatus(await asAdmin('POST', '/api/v1/models', { name: model, team }), 201);
  const upload = await act(
    'local-admin',
    { ...admin, 'content-type': 'application/octet-stream' },
    'PUT',
    `/api/v1/blobs/${artifact!.sha256}`,
    artifact!.data,
  );
  assert.ok(upload.status === 201 || upload.status === 200, JSON.stringify(upload.body));
  for (let i = 0; i < 2; i += 1)
    expectStatus(await asAdmin('POST', `/api/v1/models/${model}/versions`, manifest), 201);
  expectStatus(
    await asAdmin('PUT', `/api/v1/models/${model}/aliases/champion`, { version: 1 }),
    200,
  );
  const endpoint = `e-${key}`;
  expectStatus(
    await asAdmin('PUT', `/api/v1/endpoints/${endpoint}`, { model, version: 1, replicas: 0 }),
    201,
  );
  const apiKey = await asAdmin('POST', '/api/v1/api-keys', { name: `old-${key}`, team });
  expectStatus(apiKey, 201);
  const trusted = await asAdmin('POST', '/api/v1/trusted-keys', {
    name: `old-${key}`,
    publicKey: generateSigningKeyPair().publicKeyPem,
    team,
  });
  expectStatus(trusted, 201);
  expectStatus(
    await asAdmin('PUT', `/api/v1/teams/${team}/limits`, { requestsPerSecond: 100, burst: 10 }),
    200,
  );
  const token = await asAdmin('POST', '/api/v1/tokens', { name: `old-${key}`, role: 'reader' });
  expectStatus(token, 201);
  return {
    model,
    endpoint,
    apiKeyId: (apiKey.body as { id: string }).id,
    trustedKeyId: (trusted.body as { keyId: string }).keyId,
    tokenId: (token.body as { id: string }).id,
    blob: Buffer.from(`blob of ${key}`),
  };
}

/** Every mutating route, in an order in which each allowed call finds what it needs. */
function cases(key: string, team: string, f: Fixture): Case[] {
  const blob = createHash('sha256').update(f.blob).digest('hex');
  const m = `/api/v1/models/${f.model}`;
  return [
    {
      name: 'verify a version',
      need: 'team',
      method: 'POST',
      path: `${m}/versions/1/verify`,
      ok: 200,
    },
    {
      name: 'register a version',
      need: 'team',
      method: 'POST',
      path: `${m}/versions`,
      body: manifest,
      ok: 201,
    },
    { name: 'delete a version', need: 'team', method: 'DELETE', path: `${m}/versions/2`, ok: 200 },
    {
      name: 'set an alias',
      need: 'team',
      method: 'PUT',
      path: `${m}/aliases/prod`,
      body: { version: 1 },
      ok: 200,
    },
    {
      name: 'delete an alias',
      need: 'team',
      method: 'DELETE',
      path: `${m}/aliases/champion`,
      ok: 200,
    },
    {
      name: 'redeploy an endpoint',
      need: 'team',
      method: 'PUT',
      path: `/api/v1/endpoints/${f.endpoint}`,
      body: { model: f.model, version: 3, replicas: 0 },
      ok: 200,
    },
    {
      name: 'create an endpoint',
      need: 'team',
      method: 'PUT',
      path: `/api/v1/endpoints/n-${key}`,
      body: { model: f.model, replicas: 0 },
      ok: 201,
    },
    {
      name: 'delete an endpoint',
      need: 'team',
      method: 'DELETE',
      path: `/api/v1/endpoints/${f.endpoint}`,
      ok: 200,
    },
    {
      name: 'create a model',
      need: 'team',
      method: 'POST',
      path: '/api/v1/models',
      body: { name: `new-${key}`, team },
      ok: 201,
    },
    {
      name: 'upload a blob',
      need: 'upload',
      method: 'PUT',
      path: `/api/v1/blobs/${blob}`,
      raw: f.blob,
      ok: 201,
    },
    {
      name: 'create an API key',
      need: 'admin',
      method: 'POST',
      path: '/api/v1/api-keys',
      body: { name: `new-${key}`, team },
      ok: 201,
    },
    {
      name: 'revoke an API key',
      need: 'admin',
      method: 'DELETE',
      path: `/api/v1/api-keys/${f.apiKeyId}`,
      ok: 200,
    },
    {
      name: 'trust a key',
      need: 'admin',
      method: 'POST',
      path: '/api/v1/trusted-keys',
      body: { name: `new-${key}`, publicKey: generateSigningKeyPair().publicKeyPem, team },
      ok: 201,
    },
    {
      name: 'remove a trusted key',
      need: 'admin',
      method: 'DELETE',
      path: `/api/v1/trusted-keys/${f.trustedKeyId}`,
      ok: 200,
    },
    {
      name: 'set the signing policy',
      need: 'admin',
      method: 'PUT',
      path: '/api/v1/policy/signing',
      body: { requireSignature: false, team },
      ok: 200,
    },
    {
      name: 'collect garbage',
      need: 'admin',
      method: 'POST',
      path: '/api/v1/gc',
      body: { dryRun: true },
      ok: 200,
    },
    {
      name: 'set a team limit',
      need: 'admin',
      method: 'PUT',
      path: `/api/v1/teams/${team}/limits`,
      body: { requestsPerSecond: 5, burst: 1 },
      ok: 200,
    },
    {
      name: 'remove a team limit',
      need: 'admin',
      method: 'DELETE',
      path: `/api/v1/teams/${team}/limits`,
      ok: 200,
    },
    {
      name: 'create a token',
      need: 'admin',
      method: 'POST',
      path: '/api/v1/tokens',
      body: { name: `new-${key}`, role: 'reader' },
      ok: 201,
    },
    {
      name: 'revoke a token',
      need: 'admin',
      method: 'DELETE',
      path: `/api/v1/tokens/${f.tokenId}`,
      ok: 200,
    },
  ];
}

type Role = 'admin' | 'deployer' | 'reader';

function allowed(role: Role, need: Need, ownTeam: boolean): boolean {
  if (role === 'admin') return true;
  if (role === 'reader') return false;
  return need === 'upload' || (need === 'team' && ownTeam);
}

async function send(who: string | null, headers: Record<string, string>, c: Case) {
  return c.raw === undefined
    ? act(who, headers, c.method, c.path, c.body)
    : act(who, { ...headers, 'content-type': 'application/octet-stream' }, c.method, c.path, c.raw);
}

test('the token matrix: admin / deployer / reader × own team / other team × every mutating route', async () => {
  const callers: Record<Role, { name: string; headers: Record<string, string> }> = {
    admin: { name: 'local-admin', headers: admin },
    deployer: {
      name: 'ci-risk',
      headers: bearer(await createToken('ci-risk', 'deployer', 'risk')),
    },
    reader: { name: 'dashboards', headers: bearer(await createToken('dashboards', 'reader')) },
  };
  let outcomes = 0;
  for (const role of ['admin', 'deployer', 'reader'] as const) {
    for (const team of ['risk', 'ads']) {
      const ownTeam = team === 'risk';
      const key = `${role}-${team}`;
      const f = await fixture(key, team);
      for (const c of cases(key, team, f)) {
        const caller = callers[role];
        const what = `${role} (${ownTeam ? 'own' : 'other'} team): ${c.name}`;
        if (allowed(role, c.need, ownTeam)) {
          const response = await send(caller.name, caller.headers, c);
          assert.equal(response.status, c.ok, `${what}: ${JSON.stringify(response.body)}`);
        } else {
          const blob =
            c.raw === undefined ? [] : [createHash('sha256').update(c.raw).digest('hex')];
          const before = await fingerprint(blob);
          const response = await send(caller.name, caller.headers, c);
          assert.equal(response.status, 403, `${what}: ${JSON.stringify(response.body)}`);
          assert.equal(errorCode(response), 'KILN_PERMISSION_DENIED', what);
          assert.equal(await fingerprint(blob), before, `${what} changed something`);
        }
        outcomes += 1;
      }
    }
  }
  assert.equal(outcomes, 3 * 2 * 20);

  // Spot-check the words of a refusal: who, and what it may not do.
  const refused = await send(callers.deployer.name, callers.deployer.headers, {
    name: '',
    need: 'team',
    method: 'POST',
    path: '/api/v1/models',
    body: { name: 'elsewhere', team: 'ads' },
    ok: 201,
  });
  assert.equal(
    (refused.body as { error: { message: string } }).error.message,
    'token "ci-risk" (deployer, team risk) may not create models of team ads',
  );
});

test('a deployer deploys only its own models into its own endpoints, and names its team', async () => {
  const ci = bearer(await createToken('ci-risk-2', 'deployer', 'risk'));
  const own = await fixture('cross-risk', 'risk');
  const other = await fixture('cross-ads', 'ads');
  const refusals: [string, unknown][] = [
    // its model into another team's endpoint
    [`/api/v1/endpoints/${other.endpoint}`, { model: own.model, replicas: 0 }],
    // a new endpoint of another team
    ['/api/v1/endpoints/x-ads', { model: own.model, team: 'ads', replicas: 0 }],
    // another team's model into a new endpoint of its own
    ['/api/v1/endpoints/x-risk', { model: other.model, team: 'risk', replicas: 0 }],
  ];
  const before = await fingerprint([]);
  for (const [path, body] of refusals) {
    const response = await act('ci-risk-2', ci, 'PUT', path, body);
    assert.equal(response.status, 403, `${path} ${JSON.stringify(body)}`);
  }
  // A model without a team goes to team "default": not this deployer's.
  expectStatus(await act('ci-risk-2', ci, 'POST', '/api/v1/models', { name: 'teamless' }), 403);
  assert.equal(await fingerprint([]), before);
  expectStatus(
    await act('ci-risk-2', ci, 'PUT', '/api/v1/endpoints/x-risk', {
      model: own.model,
      replicas: 0,
    }),
    201,
  );
});

test('a missing, wrong, expired or revoked token is 401 on every mutating route, and changes nothing', async () => {
  const f = await fixture('bad', 'risk');
  const revoked = await createToken('gone', 'admin');
  const revokedId = (
    (await call(url, 'GET', '/api/v1/tokens', undefined, admin)).body as {
      items: { id: string; name: string }[];
    }
  ).items.find((t) => t.name === 'gone')!.id;
  expectStatus(await asAdmin('DELETE', `/api/v1/tokens/${revokedId}`), 200);
  const expiring = await asAdmin('POST', '/api/v1/tokens', {
    name: 'brief',
    role: 'admin',
    expiresInSeconds: 60,
  });
  expectStatus(expiring, 201);
  const expired = (expiring.body as { token: string }).token;
  // Valid until its time comes (the platform's clock is this test's).
  expectStatus(await call(url, 'GET', '/api/v1/models', undefined, bearer(expired)), 200);
  clock.advance(60_000);

  const badCallers: [string, Record<string, string>, RegExp][] = [
    ['missing', {}, /needs a control-plane token/],
    ['wrong', bearer('kiln_ct_not-a-real-token'), /is not known/],
    ['not bearer', { authorization: 'Basic YWRtaW46YWRtaW4=' }, /is not known/],
    ['expired', bearer(expired), /is expired/],
    ['revoked', bearer(revoked), /is revoked/],
  ];
  const list = cases('bad', 'risk', f);
  const blob = createHash('sha256').update(f.blob).digest('hex');
  const before = await fingerprint([blob]);
  for (const [kind, headers, message] of badCallers) {
    for (const c of list) {
      const response = await send(null, headers, c);
      assert.equal(response.status, 401, `${kind} token: ${c.name}`);
      assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="kiln"');
      assert.match(errorCode(response) ?? '', /^KILN_TOKEN_(MISSING|INVALID)$/);
      assert.match((response.body as { error: { message: string } }).error.message, message);
    }
    // Reads too.
    const read = await call(url, 'GET', '/api/v1/models', undefined, headers);
    assert.equal(read.status, 401, kind);
  }
  assert.equal(await fingerprint([blob]), before, 'a refused call changed something');
});

test('reads: every token reads the registry but only admins read tokens and the audit log; routing is for gateways', async () => {
  const reader = bearer(await createToken('reader-2', 'reader'));
  const deployer = bearer(await createToken('ci-ads', 'deployer', 'ads'));
  const gateway = bearer(await createToken('edge', 'gateway'));
  for (const headers of [admin, reader, deployer]) {
    expectStatus(await call(url, 'GET', '/api/v1/models', undefined, headers), 200);
    expectStatus(await call(url, 'GET', '/api/v1/endpoints', undefined, headers), 200);
  }
  for (const headers of [reader, deployer, gateway]) {
    for (const path of ['/api/v1/tokens', '/api/v1/audit']) {
      const response = await call(url, 'GET', path, undefined, headers);
      assert.equal(response.status, 403, path);
      assert.equal(errorCode(response), 'KILN_PERMISSION_DENIED');
    }
  }
  expectStatus(await call(url, 'GET', '/api/v1/models', undefined, gateway), 403);
  // A reader is refused before its body is even looked at (403, not a 400 for the body).
  expectStatus(await act('reader-2', reader, 'POST', '/api/v1/models', { nonsense: true }), 403);
  const snapshot = '/api/v1/routing/snapshot?waitMs=0';
  expectStatus(await call(url, 'GET', snapshot, undefined, gateway), 200);
  expectStatus(await call(url, 'GET', snapshot, undefined, admin), 200);
  expectStatus(await call(url, 'GET', snapshot, undefined, reader), 403);
  expectStatus(await call(url, 'GET', snapshot, undefined, {}), 401);

  // Health stays open for probes; where the home is, only for a known caller.
  const open = await call(url, 'GET', '/api/v1/health');
  assert.equal(open.status, 200);
  assert.equal((open.body as { home?: string }).home, undefined);
  const known = await call(url, 'GET', '/api/v1/health', undefined, reader);
  assert.equal((known.body as { home?: string }).home, platform.home);
  // An unknown route is not a way to probe without a token.
  expectStatus(await call(url, 'GET', '/api/v1/nothing-here'), 401);
});

test('token rules: deployers need a team, others take none; listed without secrets; revoking twice is 404', async () => {
  const refuse = async (body: unknown, code: string): Promise<void> => {
    const response = await asAdmin('POST', '/api/v1/tokens', body);
    assert.equal(errorCode(response), code, JSON.stringify(body));
  };
  await refuse({ name: 'x', role: 'deployer' }, 'KILN_VALIDATION_FAILED');
  await refuse({ name: 'x', role: 'reader', team: 'risk' }, 'KILN_VALIDATION_FAILED');
  await refuse({ name: 'x', role: 'root' }, 'KILN_VALIDATION_FAILED');
  await refuse({ name: 'Bad Name', role: 'reader' }, 'KILN_INVALID_NAME');
  await refuse({ name: 'x', role: 'deployer', team: 'Bad Team' }, 'KILN_INVALID_NAME');
  const created = await asAdmin('POST', '/api/v1/tokens', {
    name: 'ci',
    role: 'deployer',
    team: 'risk',
  });
  const token = created.body as { id: string; token: string; prefix: string; team: string };
  assert.match(token.token, /^kiln_ct_[A-Za-z0-9_-]{43}$/);
  assert.equal(token.prefix, token.token.slice(0, 12));
  const listed = (await call(url, 'GET', '/api/v1/tokens', undefined, admin)).body as {
    items: Record<string, unknown>[];
  };
  assert.ok(
    listed.items.every((t) => !('token' in t) && !('sha256' in t)),
    'no secrets listed',
  );
  assert.ok(listed.items.some((t) => t.id === token.id && t.team === 'risk'));
  expectStatus(await asAdmin('DELETE', `/api/v1/tokens/${token.id}`), 200);
  const again = await asAdmin('DELETE', `/api/v1/tokens/${token.id}`);
  assert.equal(errorCode(again), 'KILN_TOKEN_NOT_FOUND');
  // Stored as a digest: the database never holds the token.
  const stored = await platform.registry.store.getToken(token.id);
  assert.equal(stored?.sha256, createHash('sha256').update(token.token).digest('hex'));
});

test('every mutating call made above is in the audit log: who, what, when, outcome', async () => {
  interface Entry {
    at: string;
    tokenName: string | null;
    method: string;
    route: string;
    target: string;
    status: number;
    code: string | null;
  }
  const readAll = async (): Promise<Entry[]> => {
    const entries: Entry[] = [];
    let pageToken: string | undefined;
    do {
      const query = pageToken === undefined ? '' : `&pageToken=${pageToken}`;
      const page = (await call(url, 'GET', `/api/v1/audit?limit=500${query}`, undefined, admin))
        .body as { items: Entry[]; nextPageToken: string | null };
      entries.push(...page.items);
      pageToken = page.nextPageToken ?? undefined;
    } while (pageToken !== undefined);
    return entries.reverse(); // oldest first, as `made`
  };
  // Written once each response has gone out: wait for the last ones to land.
  await until(async () => (await readAll()).length >= made.length, 'the audit log to catch up');
  const entries = await readAll();
  assert.equal(entries.length, made.length);
  for (const [i, call_] of made.entries()) {
    const entry = entries[i]!;
    const where = `${call_.method} ${call_.path} (#${i})`;
    assert.equal(entry.method, call_.method, where);
    assert.equal(entry.status, call_.status, where);
    assert.equal(entry.tokenName, call_.who, where);
    // The route pattern matches the path, and the target names the objects in it.
    const pattern = new RegExp(`^${entry.route.replace(/:[a-zA-Z0-9]+/g, '[^/]+')}$`);
    assert.match(call_.path, pattern, where);
    const params = entry.route.match(/:/g)?.length ?? 0;
    for (const part of entry.target.split('/').slice(0, params))
      assert.ok(call_.path.includes(part), `${where}: target ${entry.target}`);
    assert.equal(entry.code === null, call_.status < 400, where);
    assert.match(entry.at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, where);
  }
  const denied = entries.filter((e) => e.status === 403);
  assert.ok(denied.length > 0 && denied.every((e) => e.code === 'KILN_PERMISSION_DENIED'));
  const anonymous = entries.filter((e) => e.status === 401);
  assert.ok(anonymous.length > 0 && anonymous.every((e) => e.tokenName === null));
  // --since keeps the newer entries only.
  const since = new Date(clock.ms).toISOString();
  const recent = (
    await call(url, 'GET', `/api/v1/audit?since=${since}&limit=500`, undefined, admin)
  ).body as { items: Entry[] };
  assert.ok(recent.items.length > 0 && recent.items.every((e) => e.at >= since));
  assert.ok(recent.items.length < entries.length);
});

test('an upload the client abandons half-way is audited too (499), with who sent it', async () => {
  const { request } = await import('node:http');
  const digest = createHash('sha256').update('never finished').digest('hex');
  const target = new URL(`${url}/api/v1/blobs/${digest}`);
  const upload = request({
    host: target.hostname,
    port: target.port,
    path: target.pathname,
    method: 'PUT',
    headers: { ...admin, 'content-type': 'application/octet-stream', 'content-length': '1000000' },
  });
  upload.on('error', () => undefined);
  // Once the headers and some bytes are out, the server has the request before the cut.
  await new Promise<void>((resolve) => upload.write(Buffer.alloc(1000), () => resolve()));
  const entryOf = async (): Promise<{ status: number; tokenName: string | null } | undefined> => {
    const page = (await call(url, 'GET', '/api/v1/audit?limit=5', undefined, admin)).body as {
      items: { target: string; status: number; tokenName: string | null }[];
    };
    return page.items.find((e) => e.target === digest);
  };
  upload.destroy();
  await until(async () => (await entryOf()) !== undefined, 'the abandoned upload in the audit log');
  assert.deepEqual(await entryOf(), {
    ...(await entryOf()),
    status: 499,
    tokenName: 'local-admin',
  });
  const head = await call(url, 'HEAD', `/api/v1/blobs/${digest}`, undefined, admin);
  assert.equal(head.status, 404, 'nothing kept');
});
