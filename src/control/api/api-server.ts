// The control-plane HTTP server (Fastify): /api/v1. It never sits on the inference path.

import { kilnError } from '../../core/errors.ts';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import type { Clock } from '../../core/clock.ts';
import type { Registry } from '../../registry/registry.ts';
import { installAccessControl } from './access-control.ts';
import { installErrorHandling, installJsonParser } from './error-handler.ts';
import { registerAccessRoutes } from './routes-access.ts';
import { registerBlobRoutes } from './routes-blobs.ts';
import { registerGoldenRoutes } from './routes-golden.ts';
import { registerProfileRoutes } from './routes-profiles.ts';
import { registerModelRoutes } from './routes-models.ts';
import { registerRolloutRoutes } from './routes-rollouts.ts';
import { registerSystemRoutes } from './routes-system.ts';
import { registerObservabilityRoutes } from './routes-observability.ts';
import { registerCostRoutes } from './routes-cost.ts';
import { registerSloRoutes } from './routes-slo.ts';
import { registerQualityRoutes } from './routes-quality.ts';
import { registerDriftRoutes } from './routes-drift.ts';
import type { ObservabilityServices } from '../observability/observability-services.ts';
import { registerPoolRoutes } from './routes-pools.ts';
import { registerServingRoutes } from './routes-serving.ts';
import { registerTrafficRoutes } from './routes-traffic.ts';
import { registerScalingRoutes } from './routes-scaling.ts';
import { registerExperimentRoutes } from './routes-experiments.ts';
import { registerPlacementRoutes } from './routes-placement.ts';
import { registerEndpointObservabilityRoutes } from './routes-endpoint-observability.ts';
import { EndpointObservability } from '../observability/endpoint-observability.ts';
import { ExperimentService } from '../traffic/experiments.ts';
import type { EndpointService } from '../endpoints.ts';
import type { Reconciler } from '../reconciler.ts';
import type { RoutingTable } from '../routing-table.ts';
import type { RolloutController } from '../traffic/rollout-controller.ts';
import type { AutoscaleController } from '../autoscale/autoscale-controller.ts';

export interface ApiServerOptions {
  readonly registry: Registry;
  readonly home: string;
  readonly version: string;
  readonly maxUploadBytes: number;
  /** Limit for JSON bodies (a version's manifest can list thousands of files). */
  readonly maxJsonBytes?: number;
  readonly logger?: boolean;
  /** 'tokens': every call but health needs a bearer token; 'dev': none does. */
  readonly auth: 'dev' | 'tokens';
  readonly clock: Clock;
  readonly serving?: {
    readonly endpoints: EndpointService;
    readonly reconciler: Reconciler;
    readonly gatewayUrl: () => string;
    readonly rollouts?: RolloutController;
    /** Autoscaling (issue 14): its routes are served when given. */
    readonly autoscale?: AutoscaleController;
    /** Gateways' snapshots (issue 17: a follower's copy of the leader's); default the reconciler's. */
    readonly routing?: () => RoutingTable;
  };
  /** Issue 15: `GET /metrics` and the observability parts' routes. */
  readonly observability?: ObservabilityServices;
}

export async function buildApiServer(options: ApiServerOptions): Promise<FastifyInstance> {
  const maxJsonBytes = options.maxJsonBytes ?? 8 * 1024 * 1024;
  const app = Fastify({
    logger: options.logger === true ? { level: 'info' } : false,
    bodyLimit: maxJsonBytes,
    // Uploads can be long; idle sockets are still cut by the keep-alive timeout.
    requestTimeout: 0,
    // ...but a socket idle this long (a stalled or vanished client) is closed.
    connectionTimeout: 300_000,
    ajv: {
      customOptions: {
        removeAdditional: false,
        allErrors: false,
        coerceTypes: 'array',
        useDefaults: true,
      },
    },
    return503OnClosing: true,
    // A URL that cannot be decoded (`/api/v1/models/%`) never reaches a route or a hook:
    // answer it in the registry's shape too, not Fastify's.
    frameworkErrors: (error, _request, reply: FastifyReply) => {
      const kiln = kilnError('KILN_VALIDATION_FAILED', { reason: error.message });
      void reply.code(kiln.status).type('application/json').send(kiln.toJSON());
    },
  });
  installJsonParser(app);
  installErrorHandling(app, maxJsonBytes);
  // Before any route: the hooks apply to every route and scope registered after them.
  installAccessControl(app, {
    mode: options.auth,
    store: options.registry.store,
    clock: options.clock,
  });
  registerAccessRoutes(app, options.registry.store, options.clock);
  registerSystemRoutes(app, options.registry, {
    version: options.version,
    home: options.home,
    gatewayUrl: options.serving?.gatewayUrl ?? (() => ''),
  });
  const observability = options.observability;
  if (observability !== undefined) registerObservabilityRoutes(app, observability);
  if (observability?.cost !== undefined) registerCostRoutes(app, observability.cost, options.clock);
  if (observability?.slo !== undefined) registerSloRoutes(app, observability.slo);
  const quality = observability?.quality;
  if (quality !== undefined)
    registerQualityRoutes(app, options.registry.store, quality, options.clock);
  if (observability?.drift !== undefined) registerDriftRoutes(app, observability.drift);
  if (options.serving !== undefined) {
    const { endpoints, reconciler, routing } = options.serving;
    registerServingRoutes(app, options.registry.store, endpoints, reconciler, routing);
    registerTrafficRoutes(app, options.registry.store, endpoints.traffic);
    registerPlacementRoutes(app, reconciler);
    registerEndpointObservabilityRoutes(
      app,
      options.registry.store,
      new EndpointObservability(options.registry.store, () => reconciler.trigger()),
    );
    registerPoolRoutes(app, options.registry.store, reconciler);
    const traffic = endpoints.traffic;
    const experiments = new ExperimentService(
      options.registry.store,
      traffic,
      traffic,
      options.clock,
    );
    registerExperimentRoutes(app, options.registry.store, experiments);
    const rollouts = options.serving.rollouts;
    if (rollouts !== undefined) registerRolloutRoutes(app, options.registry, rollouts);
    const autoscale = options.serving.autoscale;
    if (autoscale !== undefined)
      registerScalingRoutes(app, options.registry.store, autoscale, observability?.cost);
  }
  registerModelRoutes(app, options.registry);
  registerGoldenRoutes(app, options.registry);
  registerProfileRoutes(app, options.registry);
  // A stored blob may repair a replica failing on a damaged copy of it: retry that one now.
  const reconciler = options.serving?.reconciler;
  registerBlobRoutes(app, options.registry.artifacts, options.maxUploadBytes, (digest) =>
    reconciler?.blobStored(digest),
  );
  await app.ready();
  return app;
}
