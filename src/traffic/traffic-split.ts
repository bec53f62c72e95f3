// The traffic split of one endpoint: which version serves a request, and which shadow
// versions get a copy of it. Pure and compiled once per policy; the gateway calls `pick`
// per request.
//
// The 10 000 buckets are cut into consecutive ranges in the order the versions are listed
// (weights in whole percent, so 100 buckets per percent):
//
//   versions [v1 95, v2 5]    0 ──────────── v1 ──────────── 9500 ─ v2 ─ 10000
//   versions [v1 75, v2 25]   0 ──────── v1 ──────── 7500 ───── v2 ───── 10000
//
// A version at either end of the list grows in place: going 5 → 25 % the canary keeps the
// buckets it had (9500–10000) and only users whose bucket crosses the moved boundary change
// version. A keyed request's bucket is sticky (sticky-bucket.ts: endpoint + salt + key);
// a request without a key draws one from the injected random source.
//
// Shadows are decided apart from the primary: each shadow samples its own draw, so the
// copies are not concentrated on one primary range (a 5 % shadow drawn from the primary's
// bucket would mirror exactly the canary's users).

import { BUCKETS, stickyBucket, stickySeed } from './sticky-bucket.ts';

export interface SplitVersion {
  readonly model: string;
  readonly version: number;
  /** Whole percent, >= 0; the versions' weights sum to 100. */
  readonly weight: number;
}

export interface ShadowVersion {
  readonly model: string;
  readonly version: number;
  /** Share of requests copied to this version, in [0, 1]. */
  readonly sampleRate: number;
}

export interface TrafficSplitSpec {
  /** The endpoint's name: two endpoints with the same salt still assign users apart. */
  readonly endpoint: string;
  /**
   * The experiment's or policy's salt: a new salt reshuffles users (a new experiment), the
   * same salt keeps them (every step of one rollout).
   */
  readonly salt: string;
  /** At least one; the order sets the bucket ranges (see above). */
  readonly versions: readonly SplitVersion[];
  readonly shadows?: readonly ShadowVersion[];
}

/** One problem with a spec: the field it is about (`versions[1].weight`) and what is wrong. */
export interface SplitProblem {
  readonly field: string;
  readonly message: string;
}

export type CompileSplitResult =
  | { readonly ok: true; readonly split: TrafficSplit }
  | { readonly ok: false; readonly problems: readonly SplitProblem[] };

/** Uniform in [0, 1), e.g. Math.random or createRandom(seed).next. */
export type RandomSource = () => number;

const noShadows: readonly ShadowVersion[] = [];

export class TrafficSplit {
  readonly endpoint: string;
  readonly salt: string;
  readonly versions: readonly SplitVersion[];
  readonly shadows: readonly ShadowVersion[];
  private readonly seed: number;
  /** ends[i]: the first bucket past versions[i]'s range (cumulative weight × 100). */
  private readonly ends: Int32Array;
  private readonly random: RandomSource;

  /** Use compileTrafficSplit: this trusts the spec to be valid. */
  constructor(spec: TrafficSplitSpec, random: RandomSource) {
    this.endpoint = spec.endpoint;
    this.salt = spec.salt;
    this.versions = spec.versions;
    this.shadows = spec.shadows ?? noShadows;
    this.seed = stickySeed(spec.endpoint, spec.salt);
    this.random = random;
    this.ends = new Int32Array(spec.versions.length);
    let end = 0;
    spec.versions.forEach((v, i) => {
      end += v.weight * (BUCKETS / 100);
      this.ends[i] = end;
    });
  }

  /** The bucket a request lands in: sticky with a key, a random draw without. */
  bucketOf(key: string | null): number {
    return key === null ? Math.floor(this.random() * BUCKETS) : stickyBucket(key, this.seed);
  }

  /** The version that serves a request with this caller key (null: no key, a random draw). */
  pick(key: string | null): SplitVersion {
    return this.versionAt(this.bucketOf(key));
  }

  /** The version whose range holds `bucket` (in [0, BUCKETS)). */
  versionAt(bucket: number): SplitVersion {
    const ends = this.ends;
    const last = ends.length - 1;
    // Weight-0 versions have empty ranges, never matched by `<`. A bucket past every range
    // but the last lies in the last one, which is then not empty.
    for (let i = 0; i < last; i++) {
      if (bucket < (ends[i] ?? 0)) return this.versions[i] as SplitVersion;
    }
    return this.versions[last] as SplitVersion;
  }

  /** The shadows that get a copy of this request: each one sampled on its own draw. */
  pickShadows(): readonly ShadowVersion[] {
    const shadows = this.shadows;
    if (shadows.length === 0) return noShadows;
    let chosen: ShadowVersion[] | null = null;
    for (const shadow of shadows) {
      if (this.random() < shadow.sampleRate) (chosen ??= []).push(shadow);
    }
    return chosen ?? noShadows;
  }
}

/** Checks a spec and compiles it; every problem is named, not only the first. */
export function compileTrafficSplit(
  spec: TrafficSplitSpec,
  random: RandomSource = Math.random,
): CompileSplitResult {
  const problems = splitProblems(spec);
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, split: new TrafficSplit(spec, random) };
}

/**
 * What is wrong with a spec; empty when it is valid. The spec may come straight from JSON, so
 * every field is checked for its type too.
 */
export function splitProblems(spec: TrafficSplitSpec): SplitProblem[] {
  const problems: SplitProblem[] = [];
  const problem = (field: string, message: string): void => {
    problems.push({ field, message });
  };
  if (typeof spec.endpoint !== 'string' || spec.endpoint === '') {
    problem('endpoint', 'must be a non-empty string');
  }
  if (typeof spec.salt !== 'string') problem('salt', 'must be a string');
  const primaries = new Set<string>();
  const versions = listOf(spec.versions);
  if (versions === null || versions.length === 0) {
    problem('versions', 'must list at least one version');
  } else {
    let sum = 0;
    let weightsValid = true;
    versions.forEach((entry, i) => {
      const field = `versions[${i}]`;
      const v = fieldsOf(entry);
      if (v === null) {
        problem(field, 'must be an object {model, version, weight}');
        weightsValid = false;
        return;
      }
      const id = checkIdentity(v, field, problem);
      if (id !== null) {
        if (primaries.has(id)) problem(field, `${id} is listed more than once`);
        primaries.add(id);
      }
      const weight = v['weight'];
      if (typeof weight !== 'number' || !Number.isSafeInteger(weight) || weight < 0) {
        problem(`${field}.weight`, `must be a whole percent >= 0, got ${show(weight)}`);
        weightsValid = false;
      } else {
        sum += weight;
      }
    });
    if (weightsValid && sum !== 100) problem('versions', `weights must sum to 100, got ${sum}`);
  }
  const shadows = spec.shadows === undefined ? [] : listOf(spec.shadows);
  if (shadows === null) {
    problem('shadows', 'must be a list');
    return problems;
  }
  const shadowIds = new Set<string>();
  shadows.forEach((entry, i) => {
    const field = `shadows[${i}]`;
    const s = fieldsOf(entry);
    if (s === null) {
      problem(field, 'must be an object {model, version, sampleRate}');
      return;
    }
    const id = checkIdentity(s, field, problem);
    if (id !== null) {
      if (shadowIds.has(id)) problem(field, `${id} is listed more than once`);
      if (primaries.has(id)) problem(field, `${id} already serves primary traffic`);
      shadowIds.add(id);
    }
    const rate = s['sampleRate'];
    if (typeof rate !== 'number' || !(rate >= 0 && rate <= 1)) {
      problem(`${field}.sampleRate`, `must be a number in [0, 1], got ${show(rate)}`);
    }
  });
  return problems;
}

function listOf(value: unknown): readonly unknown[] | null {
  return Array.isArray(value) ? (value as readonly unknown[]) : null;
}

function fieldsOf(value: unknown): Readonly<Record<string, unknown>> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Readonly<Record<string, unknown>>)
    : null;
}

function show(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

/** `model:version` when both are well formed, else null with the problems reported. */
function checkIdentity(
  v: Readonly<Record<string, unknown>>,
  field: string,
  problem: (field: string, message: string) => void,
): string | null {
  const model = v['model'];
  const version = v['version'];
  let ok = true;
  if (typeof model !== 'string' || model === '') {
    problem(`${field}.model`, 'must be a non-empty string');
    ok = false;
  }
  if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1) {
    problem(`${field}.version`, `must be an integer >= 1, got ${show(version)}`);
    ok = false;
  }
  return ok ? `${String(model)}:${String(version)}` : null;
}
