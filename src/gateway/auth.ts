// API-key authentication and scope checks for the data plane. The control plane stores only
// sha256(hex) of each key; the route table indexes the grants by that digest once per
// snapshot, so a request costs one hash and one Map lookup.

import { hash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { ApiKeyGrant } from './routing-snapshot.ts';

/** The key from `Authorization: Bearer <key>`, else `x-api-key`, else null. */
export function apiKeyFromHeaders(headers: IncomingHttpHeaders): string | null {
  const authorization = headers.authorization;
  if (authorization !== undefined) {
    // Scheme names are case-insensitive (RFC 9110 §11.1).
    if (authorization.length > 7 && authorization.slice(0, 7).toLowerCase() === 'bearer ') {
      const key = authorization.slice(7).trim();
      if (key.length > 0) return key;
    }
  }
  const header = headers['x-api-key'];
  const key = typeof header === 'string' ? header.trim() : undefined;
  return key !== undefined && key.length > 0 ? key : null;
}

export function indexApiKeys(grants: readonly ApiKeyGrant[]): ReadonlyMap<string, ApiKeyGrant> {
  const bySha256 = new Map<string, ApiKeyGrant>();
  for (const grant of grants) bySha256.set(grant.sha256.toLowerCase(), grant);
  return bySha256;
}

/** The grant for the request's key, or null when the key is missing or unknown (→ 401). */
export function authenticate(
  keys: ReadonlyMap<string, ApiKeyGrant>,
  headers: IncomingHttpHeaders,
): ApiKeyGrant | null {
  const key = apiKeyFromHeaders(headers);
  if (key === null) return null;
  return keys.get(hash('sha256', key, 'hex')) ?? null;
}

/** A key is scoped to one endpoint or to every endpoint of one team (→ 403 otherwise). */
export function grantCovers(
  grant: ApiKeyGrant,
  endpoint: { readonly name: string; readonly team: string },
): boolean {
  if (grant.endpoint !== null) return grant.endpoint === endpoint.name;
  if (grant.team !== null) return grant.team === endpoint.team;
  return false;
}
