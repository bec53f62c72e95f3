// Where the CLI points: the platform URL (--url, KILN_URL, default loopback:8080) and the
// home folder (--home, KILN_HOME, default ./.kiln) used by `kiln up` and for signing keys.

import { resolve } from 'node:path';
import { usageError } from './errors.ts';

export const defaultUrl = 'http://127.0.0.1:8080';
export const defaultHome = './.kiln';

export type Env = Readonly<Record<string, string | undefined>>;

/** The platform's base URL, without a trailing slash. Invalid URLs are usage errors. */
export function resolveUrl(flag: string | undefined, env: Env = process.env): string {
  const raw = nonEmpty(flag) ?? nonEmpty(env.KILN_URL) ?? defaultUrl;
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
