// A simulator policy file (`kiln simulate --policy FILE`, issue 14): which scaling policy to
// replay, as JSON:
//
//   {"name": "kiln-concurrency", "kind": "kiln", "instanceType": "cpu-small",
//    "policy": {"minReplicas": 1, "maxReplicas": 40, "signal": "concurrency", "target": 2}}
//   {"name": "hpa-cpu", "kind": "hpa",
//    "policy": {"minReplicas": 1, "maxReplicas": 40, "signal": "cpu", "target": 0.7}}
//
// kind 'kiln': `policy` is an endpoint's autoscale policy exactly as `kiln autoscale set` or a
// deploy takes it (resolveAutoscalePolicy fills the defaults), run by Kiln's Autoscaler;
// kind 'hpa': an HpaPolicy (resolveHpaPolicy), run by the HPA-like HpaBaseline.
// `instanceType` (default: the model's default) picks the start-up time and price;
// `initialReplicas` (default max(1, minReplicas)) is the count running when the trace starts.
// A Kiln policy with `predictive` learns a demand profile from the simulated demand as it
// goes (profile-forecaster.ts): on a week-long trace, day 1 teaches day 2.

import { resolveAutoscalePolicy } from '../autoscale/autoscale-policy.ts';
import { Autoscaler } from '../autoscale/autoscaler.ts';
import { HpaBaseline, resolveHpaPolicy } from '../autoscale/hpa-baseline.ts';
import { ProfileForecaster } from './profile-forecaster.ts';
import type { SimulatedPolicy } from './simulate.ts';

export type PolicyFileCheck =
  | { readonly ok: true; readonly policy: SimulatedPolicy }
  | { readonly ok: false; readonly reason: string };

const fields = ['name', 'kind', 'policy', 'instanceType', 'initialReplicas'];

export function policyFromFile(input: unknown): PolicyFileCheck {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return fail('a policy file must be a JSON object {name, kind, policy}');
  }
  const file = input as Record<string, unknown>;
  const unknown = Object.keys(file).filter((key) => !fields.includes(key));
  if (unknown.length > 0) return fail(`unknown field ${unknown[0]} (known: ${fields.join(', ')})`);
  const { name, kind, instanceType, initialReplicas } = file;
  if (typeof name !== 'string' || name.trim() === '')
    return fail('name must be a non-empty string');
  if (instanceType !== undefined && typeof instanceType !== 'string') {
    return fail('instanceType must be a string');
  }
  if (
    initialReplicas !== undefined &&
    !(
      typeof initialReplicas === 'number' &&
      Number.isInteger(initialReplicas) &&
      initialReplicas >= 0
    )
  ) {
    return fail(`initialReplicas must be an integer >= 0, got ${JSON.stringify(initialReplicas)}`);
  }
  const common = {
    name,
    ...(instanceType === undefined ? {} : { instanceType }),
  };
  switch (kind) {
    case 'kiln': {
      const check = resolveAutoscalePolicy(file.policy);
      if (!check.ok) return fail(`policy ${name}: ${check.reason}`);
      const policy = check.policy;
      return {
        ok: true,
        policy: {
          ...common,
          createRunner: () => new Autoscaler(policy),
          initialReplicas: initialReplicas ?? Math.max(1, policy.minReplicas),
          // The controller's wake: max(1, minReplicas) at once, no zero within idleMs after.
          wakeReplicas: Math.max(1, policy.minReplicas),
          wakeHoldMs: policy.scaleToZero?.idleMs ?? 0,
          // Predictive: learns the simulated demand as the controller learns the stored one.
          ...(policy.predictive === undefined
            ? {}
            : {
                createForecaster: ({ startupMs }: { startupMs: number }) =>
                  new ProfileForecaster(policy, startupMs),
              }),
        },
      };
    }
    case 'hpa': {
      const check = resolveHpaPolicy(file.policy);
      if (!check.ok) return fail(`policy ${name}: ${check.reason}`);
      const policy = check.policy;
      return {
        ok: true,
        policy: {
          ...common,
          createRunner: () => new HpaBaseline(policy),
          initialReplicas: initialReplicas ?? Math.max(1, policy.minReplicas),
        },
      };
    }
    default:
      return fail(`kind must be 'kiln' or 'hpa', got ${JSON.stringify(kind) ?? '(missing)'}`);
  }
}

function fail(reason: string): PolicyFileCheck {
  return { ok: false, reason };
}
