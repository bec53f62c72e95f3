// What the control plane runs for observability (issue 15), handed to the API server so each
// part serves its routes. The parts are optional so that a platform (or a test) starts only
// those it needs; each area fills its own field and registers its routes in api-server.ts
// with one line.

import type { Registry as MetricsRegistry } from 'prom-client';
import type { CostService } from './cost-service.ts';
import type { DriftService } from './drift/drift-service.ts';

export interface ObservabilityServices {
  /**
   * The control plane's own Prometheus registry, served at `GET /metrics` on the API port:
   * drift (kiln_feature_psi), model quality, cost and SLO gauges register here.
   */
  readonly metrics: MetricsRegistry;
  /** Cost accounting and the chargeback report (issue 15 E; absent: `GET /api/v1/cost` 404s). */
  readonly cost?: CostService;
  /** Drift and skew (C): collects the workers' sketches, reports, kiln_feature_psi. */
  drift?: DriftService;
}
