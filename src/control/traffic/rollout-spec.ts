// What `kiln rollout start` / `kiln deploy --strategy canary|blue-green` ask for, checked
// before anything is written: every bad field is named in one 400 (KILN_VALIDATION_FAILED
// with details.problems), so a user fixes all of them at once. Pure.
//
//   canary:     steps ascending whole percent in (0, 100], ending at 100; interval > 0;
//               thresholds per canary-thresholds.ts; slicePath compiles (caller-key.ts)
//   blue-green: steps [100], no interval or thresholds to judge (the golden set decides)

import { kilnError, type KilnError } from '../../core/errors.ts';
import { compileCallerKey } from '../../traffic/caller-key.ts';
import { resolveCanaryThresholds, type CanaryThresholds } from '../../traffic/canary-thresholds.ts';
import type { RolloutStrategy } from '../../store/traffic-records.ts';

export interface RolloutStartRequest {
  readonly model: string;
  readonly version: number;
  readonly strategy?: RolloutStrategy;
  readonly steps?: readonly number[];
  readonly intervalMs?: number;
  readonly thresholds?: Partial<CanaryThresholds>;
  readonly sliceKey?: string | null;
  readonly slicePath?: string | null;
  readonly reason?: string;
}

/** The example: a slice of traffic first, doubling its way up. */
export const defaultCanarySteps: readonly number[] = [1, 5, 25, 50, 100];
export const defaultIntervalMs = 120_000;
/** Loose on purpose: a rollout started without limits still rolls back a canary that fails. */
export const defaultThresholds: CanaryThresholds = {
  maxErrorRate: 0.01,
  maxP99Ms: 1000,
  minRequests: 100,
};

export interface RolloutSpec {
  readonly strategy: RolloutStrategy;
  readonly steps: readonly number[];
  readonly intervalMs: number;
  readonly thresholds: CanaryThresholds;
  readonly sliceKey: string | null;
  readonly slicePath: string | null;
}

export interface RolloutProblem {
  readonly field: string;
  readonly message: string;
}

export type ResolveRolloutResult =
  | { readonly ok: true; readonly spec: RolloutSpec }
  | { readonly ok: false; readonly problems: readonly RolloutProblem[] };

/** Fills defaults and checks every field; each problem names its field. */
export function resolveRolloutSpec(request: RolloutStartRequest): ResolveRolloutResult {
  const strategy = request.strategy ?? 'canary';
  const problems: RolloutProblem[] = [];
  const steps = request.steps ?? (strategy === 'blue-green' ? [100] : defaultCanarySteps);
  if (strategy === 'blue-green') {
    if (steps.length !== 1 || steps[0] !== 100)
      problems.push({ field: 'steps', message: 'a blue-green rollout has the one step 100' });
  } else problems.push(...stepProblems(steps));
  const intervalMs = request.intervalMs ?? defaultIntervalMs;
  if (!Number.isInteger(intervalMs) || intervalMs < 1000)
    problems.push({
      field: 'intervalMs',
      message: `intervalMs ${intervalMs} must be a whole number of milliseconds >= 1000`,
    });
  const thresholds: CanaryThresholds = {
    ...defaultThresholds,
    ...definedOnly(request.thresholds ?? {}),
  };
  const resolved = resolveCanaryThresholds(thresholds);
  if (!resolved.ok) {
    for (const problem of resolved.problems)
      problems.push({ field: `thresholds.${problem.field}`, message: problem.message });
  }
  const sliceKey = request.sliceKey ?? null;
  const slicePath = request.slicePath ?? null;
  if (sliceKey !== null && !/^[A-Za-z0-9_.-]{1,64}$/.test(sliceKey))
    problems.push({
      field: 'sliceKey',
      message: `sliceKey ${JSON.stringify(sliceKey)}: 1 to 64 letters, digits, '_', '.' or '-'`,
    });
  if (slicePath !== null) {
    const compiled = compileCallerKey(slicePath);
    if (!compiled.ok) problems.push({ field: 'slicePath', message: compiled.problem });
    if (sliceKey === null)
      problems.push({ field: 'sliceKey', message: 'a slicePath needs a sliceKey to name it' });
  }
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    spec: { strategy, steps: [...steps], intervalMs, thresholds, sliceKey, slicePath },
  };
}

function stepProblems(steps: readonly number[]): RolloutProblem[] {
  if (steps.length === 0) return [{ field: 'steps', message: 'give at least one step' }];
  if (steps.length > 20) return [{ field: 'steps', message: 'at most 20 steps' }];
  const problems: RolloutProblem[] = [];
  steps.forEach((step, index) => {
    if (!Number.isInteger(step) || step < 1 || step > 100)
      problems.push({
        field: `steps[${index}]`,
        message: `step ${step} must be a whole percent in [1, 100]`,
      });
    else if (index > 0 && step <= (steps[index - 1] ?? 0))
      problems.push({
        field: `steps[${index}]`,
        message: `step ${step} must be above the step before it (${steps[index - 1]})`,
      });
  });
  if (steps.at(-1) !== 100)
    problems.push({
      field: 'steps',
      message: `the last step must be 100 (the canary takes all traffic), not ${steps.at(-1)}`,
    });
  return problems;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(
    Object.entries(value).filter(([, field]) => field !== undefined),
  ) as Partial<T>;
}

/** The 400 for a refused start: every problem in the message and in details. */
export function rolloutProblemsError(problems: readonly RolloutProblem[]): KilnError {
  return kilnError(
    'KILN_VALIDATION_FAILED',
    { reason: problems.map((problem) => `${problem.field}: ${problem.message}`).join('; ') },
    { problems },
  );
}
