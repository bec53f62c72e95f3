// Where the CLI points: the platform URL (--url, KILN_URL, default loopback:8080), the
// gateway URL and API key for `kiln predict` (--gateway / KILN_GATEWAY_URL, --key /
// KILN_API_KEY) and the home folder (--home, KILN_HOME, default ./.kiln) used by `kiln up`
// and for signing keys, and the control-plane token (--token, KILN_TOKEN, else the admin
// token `kiln up` left in the home, for a platform on this machine).

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { adminTokenPath } from '../core/admin-token-file.ts';
import { usageError } from './errors.ts';

export const defaultUrl = 'http://127.0.0.1:8080';
export const defaultHome = './.kiln';

export type Env = Readonly<Record<string, string | undefined>>;

/** The platform's base URL, without a trailing slash. Invalid URLs are usage errors. */
export function resolveUrl(flag: string | undefined, env: Env = process.env): string {
  return parseBaseUrl(nonEmpty(flag) ?? nonEmpty(env.KILN_URL) ?? defaultUrl);
}

/**
 * The gateway's base URL from --gateway or KILN_GATEWAY_URL; undefined when neither is set
 * (then the control plane is asked: `GET /api/v1/health` → `gatewayUrl`).
 */
export function resolveGatewayUrl(
  flag: string | undefined,
  env: Env = process.env,
): string | undefined {
  const raw = nonEmpty(flag) ?? nonEmpty(env.KILN_GATEWAY_URL);
  return raw === undefined ? undefined : parseBaseUrl(raw);
}

/** The data-plane API key from --key or KILN_API_KEY; undefined when neither is set. */
export function resolveApiKey(
  flag: string | undefined,
  env: Env = process.env,
): string | undefined {
  return nonEmpty(flag) ?? nonEmpty(env.KILN_API_KEY);
}

/**
 * The control-plane bearer token: --token, else KILN_TOKEN, else — only for a platform on a
 * loopback address, so the home's admin token never leaves this machine — the token `kiln up`
 * wrote into the home. undefined when none applies (a --dev platform needs none).
 */
export function resolveToken(
  flag: string | undefined,
  url: string,
  home: string,
  env: Env = process.env,
): string | undefined {
  const explicit = nonEmpty(flag) ?? nonEmpty(env.KILN_TOKEN);
  if (explicit !== undefined) return explicit.trim();
  if (!isLoopback(url)) return undefined;
  try {
    return nonEmpty(readFileSync(adminTokenPath(home), 'utf8').trim());
  } catch {
    // No platform has run on this home (or it runs with --dev): call without a token.
    return undefined;
  }
}

function isLoopback(url: string): boolean {
  const host = new URL(url).hostname;
  return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** An http(s) URL without its trailing slashes; anything else is a usage error. */
export function parseBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw usageError(`invalid URL ${raw}`, 'use a URL like http://127.0.0.1:8080');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw usageError(`invalid URL ${raw}: only http and https are supported`);
  }
  return url.toString().replace(/\/+$/, '');
}

/** The home folder as an absolute path. */
export function resolveHome(flag: string | undefined, env: Env = process.env): string {
  return resolve(nonEmpty(flag) ?? nonEmpty(env.KILN_HOME) ?? defaultHome);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
