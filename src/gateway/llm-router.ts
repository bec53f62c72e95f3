// The gateway's LLM routing, with its state: the policy (KILN_LLM_ROUTING), the prefix
// affinity map, and the load monitor that keeps replicas' reports fresh while an endpoint
// has traffic. The decision itself is the pure pickLlmReplica (llm-replica-picker.ts).

import type { GatewayLog } from './gateway-log.ts';
import type { LlmLoadMonitor } from './llm-load-monitor.ts';
import {
  llmRoutingPolicies,
  pickLlmReplica,
  type LlmPickSettings,
  type LlmRoutingPolicy,
} from './llm-replica-picker.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { PrefixAffinity } from './prefix-affinity.ts';
import type { ReplicaState } from './replica-set.ts';
import type { EndpointEntry } from './route-table.ts';

export class LlmRouter {
  constructor(
    readonly policy: LlmRoutingPolicy,
    private readonly settings: LlmPickSettings,
    private readonly affinity: PrefixAffinity,
    private readonly monitor: LlmLoadMonitor,
    private readonly metrics: GatewayMetrics,
  ) {}

  /**
   * The replica of `entry` for a request whose prompt starts with `prefix` (null: unknown),
   * skipping `exclude`; null when the endpoint has none. Remembers the choice for the prefix.
   */
  choose(
    entry: EndpointEntry,
    prefix: string | null,
    exclude: ReplicaState | null,
    nowMs: number,
  ): ReplicaState | null {
    this.monitor.noteTraffic(entry.replicas);
    const key = prefix === null ? null : `${entry.name}\n${prefix}`;
    const affinityId =
      key !== null && this.policy === 'load-prefix' ? (this.affinity.get(key) ?? null) : null;
    const pick = pickLlmReplica(entry.replicas, {
      policy: this.policy,
      start: entry.cursor++,
      nowMs,
      exclude,
      affinityId,
      settings: this.settings,
    });
    if (pick === null) return null;
    if (key !== null && this.policy === 'load-prefix') this.affinity.set(key, pick.replica.id);
    this.metrics.llmSeriesFor(entry.name).routedTo(this.policy, pick.reason);
    return pick.replica;
  }

  close(): void {
    this.monitor.close();
  }
}

/**
 * The policy named by KILN_LLM_ROUTING: unset or empty → load-prefix; an unknown name is
 * logged and load-prefix used (a typo must not keep the data plane from starting).
 */
export function llmRoutingPolicyFrom(value: string | undefined, log: GatewayLog): LlmRoutingPolicy {
  if (value === undefined || value === '') return 'load-prefix';
  const known = llmRoutingPolicies.find((policy) => policy === value);
  if (known !== undefined) return known;
  log.warn(
    { KILN_LLM_ROUTING: value, known: llmRoutingPolicies.join(', ') },
    'unknown LLM routing policy; using load-prefix',
  );
  return 'load-prefix';
}
