// `kiln tokens create | list | revoke` and `kiln audit`: the real CLI (one process per
// command) against an in-process platform outside --dev. The CLI on the platform's machine
// finds the admin token in the home by itself; --token / KILN_TOKEN choose another.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseDurationSeconds, sinceTime } from '../../src/cli/commands/tokens.ts';
import { resolveToken } from '../../src/cli/config.ts';
import { testPlatform } from '../helpers/platform.ts';
import { Cli, fixtures } from './cli-harness.ts';

interface Token {
  id: string;
  name: string;
  role: string;
  team: string | null;
  expiresAt: string | null;
  token?: string;
}
interface Entry {
  tokenName: string | null;
  method: string;
  route: string;
  target: string;
  status: number;
  code: string | null;
}

void test('tokens and audit, end to end: the home admin token, a deployer token, revocation', async () => {
  const platform = await testPlatform({ dev: false });
  const cli = new Cli(platform.url, platform.home);
  const noEnvToken = { KILN_TOKEN: '' };

  // The admin token `kiln up` wrote is found in the home: no flag needed.
  const created = await cli.json<Token>([
    'tokens',
    'create',
    'ci',
    '--role',
    'deployer',
    '--team',
    'risk',
  ]);
  assert.deepEqual(
    [created.name, created.role, created.team, created.expiresAt],
    ['ci', 'deployer', 'risk', null],
  );
  const ci = created.token ?? '';
  assert.match(ci, /^kiln_ct_/);
  const text = await cli.ok([
    'tokens',
    'create',
    'brief',
    '--role',
    'reader',
    '--expires-in',
    '12h',
  ]);
  assert.match(text, /^id: +[0-9a-f]{12}\nname: +brief\nrole: +reader\nexpires: +\d{4}-/);
  assert.match(text, /keep the token now: it is not shown again/);
  const table = await cli.ok(['tokens', 'list']);
  assert.match(table, /^ID +NAME +ROLE +TEAM +PREFIX +CREATED +EXPIRES +REVOKED\n/);
  assert.match(table, /\bci +deployer +risk +kiln_ct_/);
  assert.match(table, /\blocal-admin +admin +- +kiln_ct_/);

  // The deployer token registers in its team, not in another.
  const model = join(fixtures, 'xgb-binary.json');
  const register = ['models', 'register', model, '--format', 'xgboost', '--token', ci];
  await cli.ok([...register, '--name', 'churn', '--team', 'risk']);
  const refused = await cli.fails([...register, '--name', 'ads-churn', '--team', 'ads'], 1);
  assert.match(
    refused,
    /token "ci" \(deployer, team risk\) may not register versions of team ads \(KILN_PERMISSION_DENIED\)/,
  );
  // KILN_TOKEN works as --token does; a deployer may not manage tokens.
  const denied = await cli.fails(['tokens', 'list'], 1, { KILN_TOKEN: ci });
  assert.match(denied, /may not list tokens \(KILN_PERMISSION_DENIED\)/);

  // The audit log names who did what and how it ended.
  const audit = await cli.json<{ items: Entry[] }>(['audit', '--since', '1h']);
  const versions = audit.items.filter((e) => e.route === '/api/v1/models/:name/versions');
  assert.deepEqual(
    versions.map((e) => [e.tokenName, e.target, e.status, e.code]),
    [
      ['ci', 'ads-churn', 403, 'KILN_PERMISSION_DENIED'],
      ['ci', 'churn', 201, null],
    ],
  );
  assert.ok(audit.items.some((e) => e.route === '/api/v1/tokens' && e.tokenName === 'local-admin'));
  assert.match(
    await cli.ok(['audit', '--limit', '2']),
    /^TIME +WHO +CALL +TARGET +STATUS +CODE\n.+\n.+\n$/,
  );
  await cli.fails(['audit', '--since', 'yesterday-ish'], 2);

  // Revoked: refused from the next call on.
  assert.match(
    await cli.ok(['tokens', 'revoke', created.id]),
    new RegExp(`^revoked token ${created.id} \\(ci, deployer, team risk\\)\n$`),
  );
  const revoked = await cli.fails(['models', 'list', '--token', ci], 1);
  assert.match(revoked, /the control-plane token is revoked/);
  assert.match(await cli.fails(['tokens', 'revoke', created.id], 1), /KILN_TOKEN_NOT_FOUND/);

  // A home without a token (another machine, say): health answers, the rest asks for one.
  const elsewhere = new Cli(platform.url, join(platform.home, 'no-such-home'));
  assert.match(await elsewhere.ok(['health']), /^status: +ok\n/);
  const missing = await elsewhere.fails(['models', 'list'], 1, noEnvToken);
  assert.match(
    missing,
    /this call needs a control-plane token \(KILN_TOKEN_MISSING\)\nhint: .*--token/,
  );

  await cli.fails(['tokens', 'create', 'x', '--role', 'deployer'], 2);
  await cli.fails(['tokens', 'create', 'x', '--role', 'reader', '--team', 'risk'], 2);
  await cli.fails(['tokens', 'create', 'x', '--role', 'reader', '--expires-in', '3 weeks'], 2);
});

void test('the home admin token goes only to a platform on this machine; --token and KILN_TOKEN win', async () => {
  const home = await mkdtemp(join(tmpdir(), 'kiln-token-home-'));
  try {
    await writeFile(join(home, 'admin.token'), 'kiln_ct_home\n', { mode: 0o600 });
    const local = 'http://127.0.0.1:8080';
    assert.equal(resolveToken(undefined, local, home, {}), 'kiln_ct_home');
    assert.equal(resolveToken(undefined, 'http://localhost:8080', home, {}), 'kiln_ct_home');
    assert.equal(resolveToken(undefined, 'http://[::1]:8080', home, {}), 'kiln_ct_home');
    assert.equal(resolveToken(undefined, 'http://10.0.0.5:8080', home, {}), undefined);
    assert.equal(resolveToken(undefined, 'https://kiln.example.com', home, {}), undefined);
    assert.equal(resolveToken(undefined, local, home, { KILN_TOKEN: 'from-env' }), 'from-env');
    assert.equal(resolveToken('from-flag', local, home, { KILN_TOKEN: 'from-env' }), 'from-flag');
    assert.equal(resolveToken(undefined, local, join(home, 'none'), {}), undefined);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
});

void test('kiln audit shows control characters from a caller as \\xNN, never as terminal escapes', async () => {
  const platform = await testPlatform({ dev: false });
  // Without any token: the path parameter is decoded, so the record holds an ESC.
  const response = await fetch(`${platform.url}/api/v1/endpoints/x%1b%5b2Jy%07`, {
    method: 'DELETE',
  });
  assert.equal(response.status, 401);
  await response.body?.cancel();
  const cli = new Cli(platform.url, platform.home);
  const table = await cli.ok(['audit']);
  assert.doesNotMatch(table, /\p{Cc}(?<!\n)/u);
  assert.match(table, /DELETE \/api\/v1\/endpoints\/:name +x\\x1b\[2Jy\\x07 +401/);
  const json = await cli.json<{ items: Entry[] }>(['audit']);
  assert.equal(json.items[0]?.target, 'x\u001b[2Jy\u0007', 'JSON keeps what was recorded');
});

void test('durations and --since', () => {
  assert.equal(parseDurationSeconds('90s'), 90);
  assert.equal(parseDurationSeconds('30m'), 1800);
  assert.equal(parseDurationSeconds('12h'), 43_200);
  assert.equal(parseDurationSeconds('7d'), 604_800);
  for (const bad of ['0s', '1w', '', 'h', '1.5h'])
    assert.throws(() => parseDurationSeconds(bad), bad);
  const now = Date.parse('2026-01-31T12:00:00Z');
  assert.equal(sinceTime('1h', now), '2026-01-31T11:00:00.000Z');
  assert.equal(sinceTime('2026-01-30T00:00:00+01:00', now), '2026-01-29T23:00:00.000Z');
  assert.throws(() => sinceTime('last week', now), /invalid --since/);
});
