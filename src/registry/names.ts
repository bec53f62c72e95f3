// Names users choose (models, teams, aliases, keys) end up in URLs, file names and, later,
// Kubernetes object names, so they share one conservative rule.

import { kilnError } from '../core/errors.ts';

const namePattern = /^[a-z0-9][a-z0-9._-]{0,62}$/;

export type NameKind = 'model' | 'team' | 'alias' | 'key' | 'endpoint' | 'token' | 'pool';

export function nameProblem(kind: NameKind, name: string): string | null {
  if (!namePattern.test(name)) {
    return 'use 1-63 characters of a-z, 0-9, ".", "_" or "-", starting with a letter or digit';
  }
  if (kind === 'alias' && /^\d+$/.test(name))
    return 'an alias cannot be all digits (that reads as a version number)';
  return null;
}

export function checkName(kind: NameKind, name: string): void {
  const problem = nameProblem(kind, name);
  if (problem !== null)
    throw kilnError('KILN_INVALID_NAME', { kind, name: JSON.stringify(name), reason: problem });
}
