// Names and labels of the objects Kiln renders. Kubernetes object names that become DNS
// labels (a Service's, a pod's hostname) hold at most 63 characters of a-z, 0-9 and '-', and
// label values at most 63 of alphanumerics, '-', '_' and '.' with an alphanumeric at both
// ends. Kiln's endpoint names (registry/names.ts: 1-63 of a-z, 0-9, '.', '_', '-') may be
// longer once prefixed, or hold '.' and '_': such names are shortened deterministically — the
// same endpoint always gets the same name — and made distinct by a hash of the original, so
// `a.b` and `a-b` never share objects.
//
//   kiln-<endpoint>-<revision8>                       when it fits and needs no change
//   kiln-<endpoint, sanitized, cut>-<hash6>-<revision8>   otherwise (exactly 63 at most)

import { createHash } from 'node:crypto';

/** Longest DNS-1123 label (and label value). */
export const maxLabelLength = 63;

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The revision's short id in object names and the `kiln.dev/revision` label: the first 8 hex
 * digits of the sha256 of the revision (serving-defaults.ts `workerRevision`: model@version#
 * config, which is no DNS name itself).
 */
export function revisionShortId(revision: string): string {
  return sha256Hex(revision).slice(0, 8);
}

/** `text` as DNS-1123 label characters: lowercase, '.' and '_' as '-', no '-' at either end. */
function dnsLabelPart(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/^-+|-+$/g, '');
}

/**
 * `<prefix>-<name>-<suffix>` as a DNS-1123 label of at most 63 characters. `name` is kept as
 * is when it already is label-safe and the whole fits; otherwise it is sanitized, cut to fit,
 * and followed by 6 hex digits of its sha256 (deterministic, distinct per original name).
 */
export function kubeName(prefix: string, name: string, suffix?: string): string {
  const tail = suffix === undefined ? '' : `-${suffix}`;
  const plain = `${prefix}-${name}${tail}`;
  if (dnsLabelPart(name) === name && plain.length <= maxLabelLength) return plain;
  const hash = sha256Hex(name).slice(0, 6);
  const room = maxLabelLength - prefix.length - 1 - hash.length - 1 - tail.length;
  const cut = dnsLabelPart(dnsLabelPart(name).slice(0, Math.max(0, room)));
  return cut.length === 0 ? `${prefix}-${hash}${tail}` : `${prefix}-${cut}-${hash}${tail}`;
}

/** A label value for `value`: itself when valid, else sanitized and shortened with a hash. */
export function labelValue(value: string): string {
  if (value.length <= maxLabelLength && /^([a-z0-9A-Z]([-_.a-z0-9A-Z]*[a-z0-9A-Z])?)?$/.test(value))
    return value;
  const hash = sha256Hex(value).slice(0, 6);
  const cut = value
    .slice(0, maxLabelLength - hash.length - 1)
    .replace(/[^-_.a-zA-Z0-9]/g, '-')
    .replace(/^[^a-zA-Z0-9]+|[^a-zA-Z0-9]+$/g, '');
  return cut.length === 0 ? hash : `${cut}-${hash}`;
}

/** The Deployment, Service and PodDisruptionBudget name of an endpoint's revision. */
export function revisionObjectName(endpoint: string, revision: string): string {
  return kubeName('kiln', endpoint, revisionShortId(revision));
}
