// Control-plane bearer tokens: made here, shown once, kept as sha256 digests. A token is
// `kiln_ct_` + 32 random bytes (base64url), so a digest is as good as the token is secret and
// needs no salt or slow hash. The platform also keeps two tokens of its own in the home,
// reused across restarts while they stay valid:
//   <home>/admin.token            admin, for the CLI on the same machine (mode 0600)
//   <home>/gateway/control.token  gateway role, handed to the gateway process it spawns

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { adminTokenPath } from '../core/admin-token-file.ts';
import type { Clock } from '../core/clock.ts';
import type { TokenRecord, TokenRole } from '../store/access-records.ts';
import type { Store } from '../store/store.ts';
import { controlTokenFile } from '../gateway/gateway-record.ts';

const tokenPrefix = 'kiln_ct_';

export function tokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export interface TokenSpec {
  readonly name: string;
  readonly role: TokenRole;
  readonly team: string | null;
  /** Seconds from now; undefined = never expires. */
  readonly expiresInSeconds?: number | undefined;
}

/** Makes a token and records its digest; the token itself exists only in the return value. */
export async function issueToken(
  store: Store,
  clock: Clock,
  spec: TokenSpec,
): Promise<{ readonly token: string; readonly record: TokenRecord }> {
  const token = tokenPrefix + randomBytes(32).toString('base64url');
  const record = await store.addToken({
    id: randomBytes(6).toString('hex'),
    name: spec.name,
    role: spec.role,
    team: spec.team,
    prefix: token.slice(0, tokenPrefix.length + 4),
    sha256: tokenDigest(token),
    expiresAt:
      spec.expiresInSeconds === undefined
        ? null
        : new Date(clock.now() + spec.expiresInSeconds * 1000).toISOString(),
  });
  return { token, record };
}

export type TokenCheck =
  | { readonly ok: true; readonly record: TokenRecord }
  | { readonly ok: false; readonly reason: string };

/** Whether `presented` is a live token: known, not revoked, not expired. */
export async function checkToken(
  store: Store,
  clock: Clock,
  presented: string,
): Promise<TokenCheck> {
  const digest = tokenDigest(presented);
  const record = await store.findTokenByDigest(digest);
  // The lookup is by digest, so timing tells nothing about the token; compare the digests in
  // constant time anyway, so no store implementation's lookup can turn into an oracle.
  if (
    record === null ||
    !timingSafeEqual(Buffer.from(record.sha256, 'hex'), Buffer.from(digest, 'hex'))
  ) {
    return { ok: false, reason: 'not known' };
  }
  if (record.revokedAt !== null) return { ok: false, reason: `revoked (at ${record.revokedAt})` };
  if (record.expiresAt !== null && Date.parse(record.expiresAt) <= clock.now())
    return { ok: false, reason: `expired (at ${record.expiresAt})` };
  return { ok: true, record };
}

export function gatewayTokenPath(home: string): string {
  return controlTokenFile(join(home, 'gateway'));
}

/**
 * The token in `path` if it is live with `spec.role`; otherwise a new one, written there
 * (mode 0600). With `replaceInvalid` false (a process without the home lock, `--api-only`)
 * a file already there is left alone and only an absent one is created. Creation is
 * exclusive (link(2) of a complete temp file), so two processes starting on one home agree
 * on one token; the loser revokes its own.
 */
export async function ensureLocalToken(
  store: Store,
  clock: Clock,
  path: string,
  spec: TokenSpec,
  options: { readonly replaceInvalid: boolean },
): Promise<string> {
  await mkdir(dirname(path), { recursive: true });
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const existing = await readTokenFile(path);
    if (existing !== null) {
      const check = await checkToken(store, clock, existing);
      if (!options.replaceInvalid) return existing;
      if (check.ok && check.record.role === spec.role) {
        // Reused: made 0600 again if it was opened up (a copy, a restore), as a new one is.
        await chmod(path, 0o600);
        return existing;
      }
      const { token } = await issueToken(store, clock, spec);
      const temp = await writeTemp(path, token);
      await rename(temp, path);
      return token;
    }
    const { token, record } = await issueToken(store, clock, spec);
    const temp = await writeTemp(path, token);
    try {
      await link(temp, path);
      return token;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'EEXIST') throw error;
      await store.revokeToken(record.id);
    } finally {
      await unlink(temp).catch(() => undefined);
    }
  }
  throw new Error(`could not settle the token in ${path}`);
}

async function readTokenFile(path: string): Promise<string | null> {
  try {
    // An empty or damaged file reads as a token that does not check, so it is replaced.
    return (await readFile(path, 'utf8')).trim();
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return null;
    throw error;
  }
}

async function writeTemp(path: string, token: string): Promise<string> {
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temp, `${token}\n`, { mode: 0o600, flag: 'wx' });
  return temp;
}

/**
 * The platform's own tokens, settled at start outside --dev: the admin token for the CLI on
 * this machine, and (when it runs a gateway) the gateway's. A process without the home lock
 * (`--api-only`) only creates what is absent; the serving platform also replaces a token
 * that no longer checks (revoked, or from another database).
 */
export async function ensurePlatformTokens(
  store: Store,
  clock: Clock,
  home: string,
  options: { readonly holdsHome: boolean; readonly gateway: boolean },
): Promise<{ readonly gatewayToken: string | null }> {
  const settle = { replaceInvalid: options.holdsHome };
  await ensureLocalToken(
    store,
    clock,
    adminTokenPath(home),
    { name: 'local-admin', role: 'admin', team: null },
    settle,
  );
  const gatewayToken = options.gateway
    ? await ensureLocalToken(
        store,
        clock,
        gatewayTokenPath(home),
        { name: 'local-gateway', role: 'gateway', team: null },
        settle,
      )
    : null;
  return { gatewayToken };
}
