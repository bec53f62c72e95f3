// What the reconciler runs for an endpoint with an autoscaling policy: its stored count
// (the autoscale controller's, 0 allowed) instead of the deployed `replicas`; until the
// controller has written one, the deployed count within the policy's min/max. And what the
// gateway's activator needs to hold requests while such an endpoint wakes from zero. Pure.

import {
  resolveAutoscalePolicy,
  type AutoscalePolicyCheck,
} from '../../autoscale/autoscale-policy.ts';
import type { ActivationRoute } from '../../gateway/routing-snapshot.ts';
import type { EndpointRecord } from '../../store/serving-records.ts';
import type { EndpointScaleRecord } from '../../store/scaling-records.ts';

/** scaleToZero's defaults (autoscale-policy.ts), for a stored policy written without them. */
const defaultActivation: ActivationRoute = {
  queueLimit: 100,
  timeoutMs: 30_000,
  coldStartBudgetMs: 10_000,
};

/**
 * The most replicas one endpoint may run: a fixed deploy's bound (the deploy body's schema,
 * routes-serving.ts), which an autoscaled endpoint must not get around — the reconciler plans
 * each replica slot, so a maxReplicas of 10^9 under a burst would stall it.
 */
export const maxEndpointReplicas = 64;

/**
 * A policy as the platform takes it (deploy, `kiln autoscale set`): checked and completed by
 * resolveAutoscalePolicy, and within the platform's replica bound (the simulator, which runs
 * no replicas, takes any maxReplicas).
 */
export function resolveEndpointPolicy(input: unknown): AutoscalePolicyCheck {
  const check = resolveAutoscalePolicy(input);
  if (check.ok && check.policy.maxReplicas > maxEndpointReplicas) {
    return {
      ok: false,
      reason: `maxReplicas must be at most ${maxEndpointReplicas} (an endpoint's replica limit), got ${check.policy.maxReplicas}`,
    };
  }
  return check;
}

/** The endpoint with `replicas` as the reconciler should run it now. */
export function scaledEndpoint(
  endpoint: EndpointRecord,
  scale: EndpointScaleRecord | null,
): EndpointRecord {
  const policy = endpoint.config.autoscale;
  if (policy === undefined) return endpoint;
  // The stored count within the policy's bounds: a deploy or `autoscale set` writes the
  // policy before the count, and a pass in between must not run a count the new policy
  // forbids (0 under minReplicas 2 stops every replica, and the route has no activator).
  const replicas = Math.min(
    policy.maxReplicas,
    Math.max(policy.minReplicas, scale?.replicas ?? endpoint.replicas),
  );
  return replicas === endpoint.replicas ? endpoint : { ...endpoint, replicas };
}

/** The activator's settings when the endpoint may be at zero replicas; null otherwise. */
export function activationOf(endpoint: EndpointRecord): ActivationRoute | null {
  const policy = endpoint.config.autoscale;
  if (policy === undefined || policy.minReplicas > 0) return null;
  const toZero = policy.scaleToZero;
  return {
    queueLimit: toZero?.queueLimit ?? defaultActivation.queueLimit,
    timeoutMs: toZero?.timeoutMs ?? defaultActivation.timeoutMs,
    coldStartBudgetMs: toZero?.coldStartBudgetMs ?? defaultActivation.coldStartBudgetMs,
  };
}
