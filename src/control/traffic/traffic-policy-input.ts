// A traffic policy as a caller asks for it (`kiln traffic set`, PUT …/traffic, `kiln shadow
// set`), checked in full before anything is read from the store: the split (weights whole
// percent summing to 100, no version twice, shadows apart from the primaries), the caller
// key's and the slice's body paths (caller-key.ts syntax), the slice key's name. Every
// problem is reported at once, each with its field, so one 400 says everything to fix.
// Whether the versions exist is the service's to check (404), not this file's.

import { compileCallerKey } from '../../traffic/caller-key.ts';
import {
  splitProblems,
  type ShadowVersion,
  type SplitProblem,
  type SplitVersion,
} from '../../traffic/traffic-split.ts';
import type { TrafficPolicy } from '../../store/traffic-records.ts';

export interface PolicyInput {
  readonly versions: readonly SplitVersion[];
  readonly shadows?: readonly ShadowVersion[];
  /** Body path of the caller key (the `kiln-user` header wins); null/absent: header only. */
  readonly keyPath?: string | null;
  /** Name of the slice key in reports (`country`); null/absent: no slices counted. */
  readonly sliceKey?: string | null;
  /** Body path of the slice value (the `kiln-slice` header wins). Needs a sliceKey. */
  readonly slicePath?: string | null;
  /** Absent: the policy in force's salt (users keep their variant), else a fresh one. */
  readonly salt?: string;
}

export type PolicyCheck =
  | { readonly ok: true; readonly policy: TrafficPolicy }
  | { readonly ok: false; readonly problems: readonly SplitProblem[] };

const sliceKeyPattern = /^[A-Za-z0-9_.-]{1,64}$/;
const maxSaltLength = 128;

/** Checks `input` for `endpoint`; `salt` is used when the input names none. */
export function checkPolicyInput(endpoint: string, input: PolicyInput, salt: string): PolicyCheck {
  const chosenSalt = input.salt ?? salt;
  const problems: SplitProblem[] = splitProblems({
    endpoint,
    salt: chosenSalt,
    versions: input.versions,
    ...(input.shadows === undefined ? {} : { shadows: input.shadows }),
  });
  if (typeof chosenSalt === 'string' && (chosenSalt === '' || chosenSalt.length > maxSaltLength)) {
    problems.push({ field: 'salt', message: `must be 1..${maxSaltLength} characters` });
  }
  const path = (field: 'keyPath' | 'slicePath'): string | null => {
    const value = input[field];
    if (value === undefined || value === null) return null;
    if (typeof value !== 'string') {
      problems.push({ field, message: 'must be a string or null' });
      return null;
    }
    const compiled = compileCallerKey(value);
    if (!compiled.ok) problems.push({ field, message: compiled.problem });
    return value;
  };
  const keyPath = path('keyPath');
  const slicePath = path('slicePath');
  const sliceKey = input.sliceKey ?? null;
  if (sliceKey !== null && (typeof sliceKey !== 'string' || !sliceKeyPattern.test(sliceKey))) {
    problems.push({
      field: 'sliceKey',
      message: `must be 1..64 letters, digits, '_', '.' or '-', got ${JSON.stringify(sliceKey)}`,
    });
  }
  if (slicePath !== null && sliceKey === null) {
    problems.push({ field: 'slicePath', message: 'needs a sliceKey to name the slices' });
  }
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    policy: {
      versions: input.versions.map(({ model, version, weight }) => ({ model, version, weight })),
      shadows: (input.shadows ?? []).map(({ model, version, sampleRate }) => ({
        model,
        version,
        sampleRate,
      })),
      salt: chosenSalt,
      keyPath,
      sliceKey,
      slicePath,
    },
  };
}

/** `versions[1].weight must be …; shadows: …`: the problems in one line for the message. */
export function describeProblems(problems: readonly SplitProblem[]): string {
  return problems.map((problem) => `${problem.field} ${problem.message}`).join('; ');
}
