// Shape check for routing snapshots read from the control plane or from disk. The gateway
// trusts the control plane's content but not the transport or the file system: a truncated
// or foreign document must be refused, never half-applied. Fields added later may be
// absent (or null) in a snapshot from an older control plane or file: `teamLimits` then
// means no team limits, and a missing `maxConcurrency` is derived here from the replicas
// as for workers without batching (admission-bound.ts), so no endpoint is ever unbounded.

import { derivedMaxConcurrency, replicaBound } from './admission-bound.ts';
import type { RoutingSnapshot } from './routing-snapshot.ts';
import { splitProblems } from '../traffic/traffic-split.ts';

export type SnapshotCheck =
  | { readonly ok: true; readonly snapshot: RoutingSnapshot }
  | { readonly ok: false; readonly reason: string };

type Fields = Record<string, unknown>;

function isObject(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isString(value: unknown): value is string {
  return typeof value === 'string';
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isNullableString(value: unknown): boolean {
  return value === null || typeof value === 'string';
}

function tensorListReason(value: unknown, where: string): string | null {
  if (!Array.isArray(value)) return `${where} is not an array`;
  for (const spec of value) {
    if (!isObject(spec) || !isString(spec.name) || !isString(spec.datatype)) {
      return `${where} has an entry without name/datatype`;
    }
    if (!Array.isArray(spec.shape) || !spec.shape.every((d) => Number.isInteger(d))) {
      return `${where} entry ${spec.name} has a bad shape`;
    }
  }
  return null;
}

/** `inputNaming` is optional (added later); when present it must be well formed. */
function inputNamingReason(value: unknown, where: string): string | null {
  if (value === undefined) return null;
  if (!isObject(value) || typeof value.declared !== 'boolean') {
    return `${where}.inputNaming is not an object with a boolean 'declared'`;
  }
  const names = value.featureNames;
  if (names !== null && !(Array.isArray(names) && names.every(isString))) {
    return `${where}.inputNaming.featureNames is neither null nor a list of strings`;
  }
  return null;
}

function endpointReason(value: unknown, index: number): string | null {
  const where = `endpoints[${index}]`;
  if (!isObject(value)) return `${where} is not an object`;
  if (!isString(value.name) || !isString(value.team) || !isString(value.model)) {
    return `${where} lacks name/team/model`;
  }
  if (!isCount(value.version)) return `${where}.version is not a count`;
  if (!isString(value.format)) return `${where}.format is not a string`;
  if (!isCount(value.maxBodyBytes) || value.maxBodyBytes === 0) {
    return `${where}.maxBodyBytes is not a positive integer`;
  }
  if (value.schema !== null) {
    if (!isObject(value.schema)) return `${where}.schema is neither null nor an object`;
    const reason =
      tensorListReason(value.schema.inputs, `${where}.schema.inputs`) ??
      tensorListReason(value.schema.outputs, `${where}.schema.outputs`);
    if (reason !== null) return reason;
  }
  const naming = inputNamingReason(value.inputNaming, where);
  if (naming !== null) return naming;
  const limit = value.maxConcurrency;
  if (limit !== undefined && limit !== null && (!isCount(limit) || limit === 0)) {
    return `${where}.maxConcurrency is neither null nor a positive integer`;
  }
  const source = value.maxConcurrencySource;
  if (source !== undefined && source !== 'configured' && source !== 'derived') {
    return `${where}.maxConcurrencySource is neither "configured" nor "derived"`;
  }
  const traffic = value.traffic;
  if (traffic !== undefined && traffic !== null) {
    const reason = trafficReason(traffic, value.name, `${where}.traffic`);
    if (reason !== null) return reason;
  }
  const activation = activationReason(value.activation, `${where}.activation`);
  if (activation !== null) return activation;
  const pool = poolReason(value.pool, `${where}.pool`);
  if (pool !== null) return pool;
  const drift = driftReason(value.drift, `${where}.drift`);
  if (drift !== null) return drift;
  const tracing = tracingReason(value.tracing, `${where}.tracing`);
  if (tracing !== null) return tracing;
  return replicasReason(value.replicas, where);
}

/** Scale-to-zero (optional, issue 14): the activator's bounds, each a positive count. */
function activationReason(value: unknown, where: string): string | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) return `${where} is not an object`;
  for (const field of ['queueLimit', 'timeoutMs', 'coldStartBudgetMs'] as const) {
    const count = value[field];
    if (!isCount(count) || count === 0) return `${where}.${field} is not a positive integer`;
  }
  return null;
}

/** Drift sketches (optional, issue 15): the slice key and path, each a string or null. */
function driftReason(value: unknown, where: string): string | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) return `${where} is not an object`;
  for (const field of ['sliceKey', 'slicePath'] as const) {
    const text = value[field];
    if (text !== null && !isString(text)) return `${where}.${field} is neither null nor a string`;
  }
  const rate = value.sampleRate;
  if (rate !== undefined && (typeof rate !== 'number' || !(rate > 0 && rate <= 1)))
    return `${where}.sampleRate is not a number in (0, 1]`;
  const max = value.maxRequestsPerSecond;
  if (max !== undefined && max !== null && (typeof max !== 'number' || !(max >= 1)))
    return `${where}.maxRequestsPerSecond is neither null nor a number >= 1`;
  return null;
}

/** A shared worker pool (optional, issue 14): its name and the revision its workers load. */
function poolReason(value: unknown, where: string): string | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) return `${where} is not an object`;
  if (!isString(value.name) || value.name === '') return `${where}.name is not a name`;
  if (!isString(value.revision)) return `${where}.revision is not a string`;
  return null;
}

/** Trace sampling (optional, issue 15): a rate from 0 to 1. */
function tracingReason(value: unknown, where: string): string | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) return `${where} is not an object`;
  const rate = value.sampleRate;
  if (typeof rate !== 'number' || !(rate >= 0 && rate <= 1)) {
    return `${where}.sampleRate is not a number from 0 to 1`;
  }
  return null;
}

/** A traffic policy (optional, issue 13): a valid split, and each version routable. */
function trafficReason(value: unknown, endpoint: string, where: string): string | null {
  if (!isObject(value)) return `${where} is not an object`;
  if (!isString(value.salt)) return `${where}.salt is not a string`;
  for (const field of ['keyPath', 'sliceKey', 'slicePath'] as const) {
    if (!isNullableString(value[field])) return `${where}.${field} is neither null nor a string`;
  }
  if (!Array.isArray(value.variants) || !Array.isArray(value.shadows)) {
    return `${where}.variants and .shadows must be arrays`;
  }
  const problems = splitProblems({
    endpoint,
    salt: value.salt,
    versions: value.variants,
    shadows: value.shadows,
  });
  const first = problems[0];
  if (first !== undefined) return `${where}: ${first.field} ${first.message}`;
  const versions = [...(value.variants as Fields[]), ...(value.shadows as Fields[])];
  for (const [i, version] of versions.entries()) {
    const at = `${where}.${i < value.variants.length ? 'variants' : 'shadows'}[${version.model as string}:${version.version as number}]`;
    if (!isString(version.format)) return `${at}.format is not a string`;
    if (version.schema !== null && !isObject(version.schema)) {
      return `${at}.schema is neither null nor an object`;
    }
    if (isObject(version.schema)) {
      const reason =
        tensorListReason(version.schema.inputs, `${at}.schema.inputs`) ??
        tensorListReason(version.schema.outputs, `${at}.schema.outputs`);
      if (reason !== null) return reason;
    }
    const naming = inputNamingReason(version.inputNaming, at);
    if (naming !== null) return naming;
    const replicas = replicasReason(version.replicas, at);
    if (replicas !== null) return replicas;
  }
  return null;
}

function replicasReason(replicas: unknown, where: string): string | null {
  if (!Array.isArray(replicas)) return `${where}.replicas is not an array`;
  for (const replica of replicas as unknown[]) {
    if (!isObject(replica) || !isString(replica.id) || !isString(replica.url)) {
      return `${where}.replicas has an entry without id/url`;
    }
    if (!isCount(replica.version)) return `${where}.replicas[${replica.id}].version is bad`;
    if (!URL.canParse(replica.url)) return `${where}.replicas[${replica.id}].url is not a URL`;
    if (
      replica.channel !== undefined &&
      !(isString(replica.channel) && replica.channel.startsWith('/'))
    )
      return `${where}.replicas[${replica.id}].channel is not a path`;
    if (
      replica.socketPath !== undefined &&
      !(isString(replica.socketPath) && replica.socketPath.startsWith('/'))
    )
      return `${where}.replicas[${replica.id}].socketPath is not an absolute path`;
    if (replica.model !== undefined && !isString(replica.model)) {
      return `${where}.replicas[${replica.id}].model is not a string`;
    }
  }
  return null;
}

export function checkRoutingSnapshot(value: unknown): SnapshotCheck {
  if (!isObject(value)) return { ok: false, reason: 'not a JSON object' };
  if (!isCount(value.version)) return { ok: false, reason: 'version is not a count' };
  if (value.auth !== 'dev' && value.auth !== 'api-keys') {
    return { ok: false, reason: `auth must be "dev" or "api-keys"` };
  }
  if (!Array.isArray(value.endpoints)) return { ok: false, reason: 'endpoints is not an array' };
  for (let i = 0; i < value.endpoints.length; i++) {
    const reason = endpointReason(value.endpoints[i], i);
    if (reason !== null) return { ok: false, reason };
  }
  if (!Array.isArray(value.apiKeys)) return { ok: false, reason: 'apiKeys is not an array' };
  for (const grant of value.apiKeys) {
    if (!isObject(grant) || !isString(grant.id) || !isString(grant.sha256)) {
      return { ok: false, reason: 'apiKeys has an entry without id/sha256' };
    }
    if (!isNullableString(grant.team) || !isNullableString(grant.endpoint)) {
      return { ok: false, reason: `apiKeys[${grant.id}] has a bad team/endpoint` };
    }
  }
  const teamLimits = value.teamLimits ?? [];
  if (!Array.isArray(teamLimits)) return { ok: false, reason: 'teamLimits is not an array' };
  for (const limit of teamLimits) {
    if (!isObject(limit) || !isString(limit.team)) {
      return { ok: false, reason: 'teamLimits has an entry without team' };
    }
    const rate = limit.requestsPerSecond;
    if (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0) {
      return { ok: false, reason: `teamLimits[${limit.team}].requestsPerSecond is not positive` };
    }
    if (!isCount(limit.burst) || limit.burst === 0) {
      return { ok: false, reason: `teamLimits[${limit.team}].burst is not a positive integer` };
    }
  }
  // The checks above cover every field the gateway reads.
  const endpoints = (value.endpoints as Fields[]).map(withBound).map(withoutNulls);
  const snapshot = { ...value, endpoints, teamLimits };
  return { ok: true, snapshot: snapshot as unknown as RoutingSnapshot };
}

/** An endpoint with its bound and the bound's source, filled in when an older snapshot has none. */
function withBound(endpoint: Fields): Fields {
  if (typeof endpoint.maxConcurrency === 'number') {
    return endpoint.maxConcurrencySource === undefined
      ? { ...endpoint, maxConcurrencySource: 'configured' }
      : endpoint;
  }
  const one = replicaBound(null);
  const replicas = (endpoint.replicas as unknown[]).map(() => one);
  return {
    ...endpoint,
    maxConcurrency: derivedMaxConcurrency(replicas, one),
    maxConcurrencySource: 'derived',
  };
}

/** `activation`, `pool`, `drift` and `tracing` null mean absent (the gateway reads absence only). */
function withoutNulls(endpoint: Fields): Fields {
  if (
    endpoint.activation !== null &&
    endpoint.pool !== null &&
    endpoint.drift !== null &&
    endpoint.tracing !== null
  ) {
    return endpoint;
  }
  const copy = { ...endpoint };
  if (copy.activation === null) delete copy.activation;
  if (copy.pool === null) delete copy.pool;
  if (copy.drift === null) delete copy.drift;
  if (copy.tracing === null) delete copy.tracing;
  return copy;
}
