// The platform's DriftService: ready replicas from the reconciler, reference profiles from
// the store, gauges on the control plane's registry. Started with the reconciler (apiOnly
// platforms have no workers and collect nothing; their reports read the stored windows).

import type { Registry } from 'prom-client';
import type { Clock } from '../../../core/clock.ts';
import type { DataProfile } from '../../../observability/profile/data-profile.ts';
import type { Store } from '../../../store/store.ts';
import type { Reconciler } from '../../reconciler.ts';
import { DriftMetrics } from './drift-metrics.ts';
import { DriftService } from './drift-service.ts';

export function startDriftService(
  store: Store,
  clock: Clock,
  reconciler: Pick<Reconciler, 'replicaStatus'>,
  metrics: Registry,
): DriftService {
  return new DriftService({
    store,
    clock,
    readyReplicas: (endpoint) =>
      reconciler
        .replicaStatus(endpoint)
        .flatMap((r) => (r.state === 'ready' && r.url !== null ? [{ id: r.id, url: r.url }] : [])),
    reference: (model, version) => referenceProfile(store, model, version),
    metrics: new DriftMetrics(metrics),
  });
}

/** The version's reference profile (issue 15 B's store), null when it has none. */
async function referenceProfile(
  store: Store,
  model: string,
  version: number,
): Promise<DataProfile | null> {
  return (await store.getVersionProfile(model, version))?.profile ?? null;
}
