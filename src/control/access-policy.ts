// Who may call what on the control-plane API: a pure decision over the caller (a token's
// role and team) and what the route needs. Routes declare their need in their Fastify config
// (`config: { access }`); src/control/api/access-control.ts authenticates and asks here.
//
//   need      reader  deployer            admin  gateway
//   open        ✓       ✓                   ✓      ✓       (health; no token needed)
//   read        ✓       ✓                   ✓      ✗       (every GET/HEAD of the registry)
//   upload      ✗       ✓                   ✓      ✗       (blobs: content-addressed, no team)
//   team        ✗       ✓ own team only     ✓      ✗       (register, deploy, delete, aliases)
//   admin       ✗       ✗                   ✓      ✗       (keys, policies, limits, gc, tokens, audit)
//   routing     ✗       ✗                   ✓      ✓       (the gateway's snapshot long-poll)

import type { FastifyRequest } from 'fastify';
import type { TokenRole } from '../store/access-records.ts';

export interface Principal {
  /** null in --dev mode, where no token is needed. */
  readonly tokenId: string | null;
  readonly name: string;
  readonly role: TokenRole;
  readonly team: string | null;
}

/** The caller in --dev mode: no authentication, everything allowed. */
export const devPrincipal: Principal = { tokenId: null, name: '(dev)', role: 'admin', team: null };

export type Access =
  | { readonly kind: 'open' }
  | { readonly kind: 'read' }
  | { readonly kind: 'upload' }
  | { readonly kind: 'routing' }
  | { readonly kind: 'admin'; readonly action: string }
  | {
      readonly kind: 'team';
      readonly action: string;
      /**
       * The teams the call would touch (e.g. the model's, the endpoint's, the one asked
       * for). Empty when the object does not exist: the handler then answers 404.
       */
      readonly teams: (request: FastifyRequest) => Promise<readonly string[]>;
    };

export const openAccess: Access = { kind: 'open' };
export const readAccess: Access = { kind: 'read' };
export const uploadAccess: Access = { kind: 'upload' };
export const routingAccess: Access = { kind: 'routing' };

export function adminAccess(action: string): Access {
  return { kind: 'admin', action };
}

export function teamAccess(
  action: string,
  teams: (request: FastifyRequest) => Promise<readonly string[]>,
): Access {
  return { kind: 'team', action, teams };
}

/** What a route without an `access` config needs: reads need a token, anything else admin. */
export function defaultAccess(method: string): Access {
  return method === 'GET' || method === 'HEAD' ? readAccess : adminAccess('make this call');
}

export type Decision = { readonly ok: true } | { readonly ok: false; readonly action: string };

const allowed: Decision = { ok: true };

/**
 * `teams`: for a 'team' need, the teams the call touches (ignored otherwise). Exhaustive over
 * needs and roles, so a new role or need does not compile until it is decided here.
 */
export function decide(principal: Principal, access: Access, teams: readonly string[]): Decision {
  const role = principal.role;
  switch (access.kind) {
    case 'open':
      return allowed;
    case 'read':
      return role === 'gateway' ? { ok: false, action: 'read the registry' } : allowed;
    case 'upload':
      return role === 'admin' || role === 'deployer'
        ? allowed
        : { ok: false, action: 'upload artifacts' };
    case 'routing':
      return role === 'admin' || role === 'gateway'
        ? allowed
        : { ok: false, action: 'read the routing snapshot' };
    case 'admin':
      return role === 'admin' ? allowed : { ok: false, action: access.action };
    case 'team': {
      if (role === 'admin') return allowed;
      if (role !== 'deployer') return { ok: false, action: access.action };
      const other = teams.find((team) => team !== principal.team);
      return other === undefined
        ? allowed
        : { ok: false, action: `${access.action} of team ${other}` };
    }
  }
}

/** `token "ci" (deployer, team risk)`: the caller, as error messages name it. */
export function describePrincipal(principal: Principal): string {
  const team = principal.team === null ? '' : `, team ${principal.team}`;
  return `token "${principal.name}" (${principal.role}${team})`;
}
