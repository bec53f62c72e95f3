// The deploy's placement check: an endpoint's `resources` must make sense (400 naming the
// field) and one replica must fit some node of the inventory even with nothing else on it —
// else KILN_UNSCHEDULABLE "needs X, largest free Y" at deploy, rather than a replica that
// waits for ever. A replica that fits an empty node but not the cluster as it is now is
// accepted: it waits for room, with the reason on the replica (reconciler.ts: unplaced).

import { kilnError } from '../../core/errors.ts';
import { resourceRequestProblem } from '../../placement/resource-request.ts';
import type { EndpointConfig } from '../../store/serving-records.ts';
import type { Placer } from './placer.ts';

export function checkDeployPlacement(
  endpoint: string,
  config: EndpointConfig,
  artifactBytes: number,
  placer: Placer | null,
): void {
  if (config.resources === undefined) return;
  const problem = resourceRequestProblem(config.resources);
  if (problem !== null) throw kilnError('KILN_VALIDATION_FAILED', { reason: problem });
  const reason = placer?.unschedulableEmpty(config, artifactBytes) ?? null;
  if (reason !== null) throw kilnError('KILN_UNSCHEDULABLE', { endpoint, reason });
}
