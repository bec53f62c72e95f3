// Authentication, authorization and the audit log of the control-plane API, as three steps
// of Fastify's request lifecycle:
//
//   onRequest   bearer token → caller (401 KILN_TOKEN_MISSING / KILN_TOKEN_INVALID), and the
//               route's need checked as far as it does not depend on the body (403) — before
//               a byte of an upload is read
//   preHandler  team-scoped needs, once params and body are parsed and validated: the teams
//               the call would touch, resolved from the store (403 KILN_PERMISSION_DENIED)
//   onSend      every call that is not a GET/HEAD, allowed or refused, appended to the audit
//               log with who, what, when and the outcome, before its answer goes out
//               (onRequestAbort: 499, the client left before its whole call arrived)
//
// In --dev mode nobody authenticates (every caller is `devPrincipal`), but calls are still
// audited. Refusals throw before the handler runs, so a refused call changes nothing.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isoAt, type Clock } from '../../core/clock.ts';
import { kilnError, type KilnError } from '../../core/errors.ts';
import type { TokenRecord } from '../../store/access-records.ts';
import type { Store } from '../../store/store.ts';
import {
  decide,
  defaultAccess,
  describePrincipal,
  devPrincipal,
  type Access,
  type Principal,
} from '../access-policy.ts';
import { checkToken } from '../control-tokens.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What the route needs of its caller; see access-policy.ts. */
    access?: Access;
    /**
     * false: calls are not audited (a gateway's traffic report every second is telemetry,
     * not a change anyone made; it would drown the log).
     */
    audit?: boolean;
  }
  interface FastifyRequest {
    /** The authenticated caller; null when no valid token came (open routes only). */
    principal: Principal | null;
  }
}

export interface AccessControlOptions {
  /** 'dev': no authentication; 'tokens': a bearer token on every call but open ones. */
  readonly mode: 'dev' | 'tokens';
  readonly store: Store;
  readonly clock: Clock;
}

export function installAccessControl(app: FastifyInstance, options: AccessControlOptions): void {
  const { store, clock } = options;
  app.decorateRequest('principal', null);

  app.addHook('onRequest', async (request, reply) => {
    if (options.mode === 'dev') {
      request.principal = devPrincipal;
      return;
    }
    const access = accessOf(request);
    const presented = bearerToken(request);
    if (presented !== null) {
      const check = await checkToken(store, clock, presented);
      if (check.ok) request.principal = principalOf(check.record);
      else if (access.kind !== 'open')
        throw refusal(request, reply, kilnError('KILN_TOKEN_INVALID', { reason: check.reason }));
    } else if (access.kind !== 'open') {
      throw refusal(request, reply, kilnError('KILN_TOKEN_MISSING'));
    }
    if (request.principal === null) return;
    // For a team need, with no team yet: refuses the roles no team would help (readers),
    // before the body is read; a deployer's teams are checked in preHandler.
    const decision = decide(request.principal, access, []);
    if (!decision.ok) throw refusal(request, reply, denied(request.principal, decision.action));
  });

  app.addHook('preHandler', async (request) => {
    const access = accessOf(request);
    const principal = request.principal;
    if (access.kind !== 'team' || principal?.role !== 'deployer') return;
    const decision = decide(principal, access, await access.teams(request));
    if (!decision.ok) throw denied(principal, decision.action);
  });

  // Each call is recorded once: when its answer is made (onSend, not onResponse: a client
  // that leaves after its whole call arrived does not stop the call, but Fastify then skips
  // onResponse), or as status 499 when the client went away before its call had arrived (an
  // upload cut off half-way: nothing was done).
  const audited = new WeakSet<FastifyRequest>();
  const audit = async (request: FastifyRequest, status: number, code: string | null) => {
    if (request.method === 'GET' || request.method === 'HEAD' || audited.has(request)) return;
    if (request.routeOptions.config.audit === false) return;
    audited.add(request);
    const principal = request.principal;
    try {
      await store.appendAudit({
        at: isoAt(clock),
        tokenId: principal?.tokenId ?? null,
        tokenName: principal?.name ?? null,
        role: principal?.role ?? null,
        method: request.method,
        route: request.routeOptions.url ?? pathOf(request),
        target: targetOf(request),
        status,
        code,
      });
    } catch (error) {
      // The call itself is done; losing its record must be loud, not fatal.
      request.log.error({ err: error }, 'could not append to the audit log');
    }
  };
  app.addHook('onSend', async (request, reply, payload) => {
    await audit(request, reply.statusCode, request.errorCode);
    return payload;
  });
  app.addHook('onRequestAbort', (request) => audit(request, clientClosedStatus, null));
}

/** nginx's "client closed request": the caller left before the answer. */
const clientClosedStatus = 499;

/**
 * For a handler whose store write re-reads what it touches (in the write's transaction): the
 * same team decision as preHandler's, on the teams as they are now. Throws 403; a no-op for
 * every caller but a deployer.
 */
export function recheckTeams(request: FastifyRequest, teams: readonly string[]): void {
  const access = accessOf(request);
  const principal = request.principal;
  if (access.kind !== 'team' || principal?.role !== 'deployer') return;
  const decision = decide(principal, access, teams);
  if (!decision.ok) throw denied(principal, decision.action);
}

function accessOf(request: FastifyRequest): Access {
  return request.routeOptions.config.access ?? defaultAccess(request.method);
}

function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (header === undefined) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  // Anything else in the header is a token that does not check, not a missing one.
  return match?.[1] ?? header;
}

function principalOf(record: TokenRecord): Principal {
  return { tokenId: record.id, name: record.name, role: record.role, team: record.team };
}

function denied(principal: Principal, action: string): KilnError {
  return kilnError('KILN_PERMISSION_DENIED', { who: describePrincipal(principal), action });
}

/**
 * The error to throw from onRequest. The body is not read then (an upload may be gigabytes):
 * close the connection rather than drain it.
 */
function refusal(request: FastifyRequest, reply: FastifyReply, error: KilnError): KilnError {
  const length = request.headers['content-length'];
  if (
    request.headers['transfer-encoding'] !== undefined ||
    (length !== undefined && length !== '0')
  )
    reply.header('connection', 'close');
  if (error.status === 401) reply.header('www-authenticate', 'Bearer realm="kiln"');
  return error;
}

function pathOf(request: FastifyRequest): string {
  return request.url.split('?')[0] ?? request.url;
}

/** The object a call names: its path parameters, then the `name` of a create body. */
function targetOf(request: FastifyRequest): string {
  const params = request.params;
  const parts =
    params !== null && typeof params === 'object'
      ? Object.values(params as Record<string, unknown>).filter(
          (value): value is string => typeof value === 'string',
        )
      : [];
  const body = request.body;
  if (
    body !== null &&
    typeof body === 'object' &&
    Object.getPrototypeOf(body) === Object.prototype &&
    typeof (body as { name?: unknown }).name === 'string'
  )
    parts.push((body as { name: string }).name);
  return parts.join('/');
}
