// /api/v1/placement: the inventory's nodes and devices, what each holds and what is free
// (`kiln placement show`), the replicas waiting for room, and node reclaim
// (`kiln placement reclaim NODE`): the replicas on it are replaced on other nodes before
// they stop (a spot reclaim drill with zero loss).

import type { FastifyInstance } from 'fastify';
import { kilnError } from '../../core/errors.ts';
import type { Reconciler } from '../reconciler.ts';
import { adminAccess, readAccess } from '../access-policy.ts';

export function registerPlacementRoutes(app: FastifyInstance, reconciler: Reconciler): void {
  app.get('/api/v1/placement', { config: { access: readAccess } }, () => {
    const placer = reconciler.placer;
    const replicas = reconciler.replicaStatus();
    return {
      ...(placer === null ? { source: null, headroom: 0, nodes: [] } : placer.view()),
      // Replicas placement found no node for yet, with why (never a silent pending).
      pending: replicas
        .filter(
          (r) =>
            r.state === 'starting' && r.pid === null && r.reason?.startsWith('unschedulable: '),
        )
        .map((r) => ({ id: r.id, endpoint: r.endpoint, reason: r.reason })),
    };
  });

  app.post<{ Params: { node: string } }>(
    '/api/v1/placement/nodes/:node/reclaim',
    { config: { access: adminAccess('reclaim a node') } },
    (request) => {
      const { node } = request.params;
      if (reconciler.placer === null) throw kilnError('KILN_NODE_NOT_FOUND', { node });
      const replicas = reconciler.reclaimNode(node);
      return { node, reclaimed: true, replicas };
    },
  );
}
