// Rewrites an endpoint's config for an autoscaling change (`kiln autoscale set|clear`): the
// endpoint as read, with only its config (and maybe its fixed count) changed, refused when it
// was redeployed in between — a policy must never land on a deploy it did not see.

import { kilnError } from '../../core/errors.ts';
import type { EndpointRecord } from '../../store/serving-records.ts';
import type { Store } from '../../store/store.ts';

/** Rewrites an endpoint's config, refused if the endpoint changed since it was read. */
export async function rewriteEndpointConfig(
  store: Store,
  name: string,
  change: (config: EndpointRecord['config']) => EndpointRecord['config'],
  replicas?: (before: EndpointRecord) => number,
): Promise<{ before: EndpointRecord; after: EndpointRecord }> {
  const before = await store.getEndpoint(name);
  if (before === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint: name });
  const { endpoint: after } = await store.putEndpoint(
    {
      name,
      team: before.team,
      model: before.model,
      version: before.version,
      ref: before.ref,
      replicas: replicas?.(before) ?? before.replicas,
      config: change(before.config),
    },
    {
      check: (found) => {
        if (found === null) throw kilnError('KILN_ENDPOINT_NOT_FOUND', { endpoint: name });
        if (found.updatedAt !== before.updatedAt) {
          throw kilnError('KILN_SCALE_CONFLICT', {
            endpoint: name,
            reason: 'the endpoint was redeployed meanwhile; try again',
          });
        }
      },
    },
  );
  return { before, after };
}
