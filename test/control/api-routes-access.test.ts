// Every route of the control-plane API, listed from the Fastify app itself, against the need
// this table declares for it: a route added without a row here fails, so its access is
// decided on purpose. Each need is then checked for what each role gets before any body or
// object matters (401 without a token, 403 for a role that may never make the call).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { buildApiServer } from '../../src/control/api/api-server.ts';
import { Registry as MetricsRegistry } from 'prom-client';
import { SloService } from '../../src/control/observability/slo/slo-service.ts';
import { DriftService } from '../../src/control/observability/drift/drift-service.ts';
import { LocalBackend } from '../../src/control/backends/local/local-backend.ts';
import { issueToken } from '../../src/control/control-tokens.ts';
import { EndpointService } from '../../src/control/endpoints.ts';
import { Reconciler } from '../../src/control/reconciler.ts';
import { httpGoldenRunner } from '../../src/control/traffic/golden-check.ts';
import { RolloutController } from '../../src/control/traffic/rollout-controller.ts';
import { TrafficService } from '../../src/control/traffic/traffic-service.ts';
import { AutoscaleController } from '../../src/control/autoscale/autoscale-controller.ts';
import { ArtifactStore } from '../../src/registry/artifact-store.ts';
import { Registry } from '../../src/registry/registry.ts';
import type { TokenRole } from '../../src/store/access-records.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';

type Need = 'open' | 'read' | 'upload' | 'team' | 'admin' | 'routing';

/** `METHOD /path` → need. HEAD routes are Fastify's, beside each GET, with its need. */
const declared: Readonly<Record<string, Need>> = {
  'GET /api/v1/health': 'open',
  'POST /api/v1/tokens': 'admin',
  'GET /api/v1/tokens': 'admin',
  'DELETE /api/v1/tokens/:id': 'admin',
  'GET /api/v1/audit': 'admin',
  'GET /api/v1/trusted-keys': 'read',
  'POST /api/v1/trusted-keys': 'admin',
  'DELETE /api/v1/trusted-keys/:keyId': 'admin',
  'GET /api/v1/policy': 'read',
  'PUT /api/v1/policy/signing': 'admin',
  'POST /api/v1/gc': 'admin',
  'GET /api/v1/placement': 'read',
  'POST /api/v1/placement/nodes/:node/reclaim': 'admin',
  'GET /api/v1/teams/limits': 'read',
  'PUT /api/v1/teams/:team/limits': 'admin',
  'DELETE /api/v1/teams/:team/limits': 'admin',
  'GET /api/v1/api-keys': 'read',
  'POST /api/v1/api-keys': 'admin',
  'DELETE /api/v1/api-keys/:id': 'admin',
  'GET /api/v1/pools': 'read',
  'GET /api/v1/pools/:name': 'read',
  'PUT /api/v1/pools/:name': 'team',
  'DELETE /api/v1/pools/:name': 'team',
  'GET /api/v1/endpoints': 'read',
  'GET /api/v1/endpoints/:name': 'read',
  'PUT /api/v1/endpoints/:name': 'team',
  'DELETE /api/v1/endpoints/:name': 'team',
  'GET /api/v1/routing/snapshot': 'routing',
  'POST /api/v1/traffic/reports': 'routing',
  'GET /api/v1/endpoints/:name/traffic': 'read',
  'PUT /api/v1/endpoints/:name/traffic': 'team',
  'DELETE /api/v1/endpoints/:name/traffic': 'team',
  'POST /api/v1/endpoints/:name/rollback': 'team',
  'GET /api/v1/endpoints/:name/history': 'read',
  'PUT /api/v1/endpoints/:name/shadows': 'team',
  'DELETE /api/v1/endpoints/:name/shadows': 'team',
  'GET /api/v1/endpoints/:name/shadows/report': 'read',
  'POST /api/v1/experiments': 'team',
  'GET /api/v1/experiments': 'read',
  'GET /api/v1/experiments/:id': 'read',
  'POST /api/v1/experiments/:id/stop': 'team',
  'POST /api/v1/experiments/:id/outcomes': 'team',
  'GET /api/v1/experiments/:id/report': 'read',
  'POST /api/v1/endpoints/:name/rollout': 'team',
  'GET /api/v1/endpoints/:name/rollout': 'read',
  'POST /api/v1/endpoints/:name/rollout/:action': 'team',
  'GET /api/v1/rollouts': 'read',
  'GET /api/v1/rollouts/:id': 'read',
  'PUT /api/v1/models/:name/versions/:ref/golden': 'team',
  'GET /api/v1/models/:name/versions/:ref/golden': 'read',
  'PUT /api/v1/models/:name/versions/:ref/profile': 'team',
  'GET /api/v1/models/:name/versions/:ref/profile': 'read',
  'POST /api/v1/models': 'team',
  'GET /api/v1/models': 'read',
  'GET /api/v1/models/:name': 'read',
  'POST /api/v1/models/:name/versions': 'team',
  'GET /api/v1/models/:name/versions': 'read',
  'GET /api/v1/models/:name/versions/:ref': 'read',
  'DELETE /api/v1/models/:name/versions/:ref': 'team',
  'POST /api/v1/models/:name/versions/:ref/verify': 'team',
  'GET /api/v1/models/:name/aliases': 'read',
  'PUT /api/v1/models/:name/aliases/:alias': 'team',
  'DELETE /api/v1/models/:name/aliases/:alias': 'team',
  'GET /api/v1/lineage': 'read',
  'HEAD /api/v1/blobs/:sha256': 'read',
  'PUT /api/v1/blobs/:sha256': 'upload',
  'POST /api/v1/scaling/reports': 'routing',
  'POST /api/v1/endpoints/:name/wake': 'routing',
  'GET /api/v1/endpoints/:name/autoscale': 'read',
  'PUT /api/v1/endpoints/:name/autoscale': 'team',
  'DELETE /api/v1/endpoints/:name/autoscale': 'team',
  'GET /api/v1/endpoints/:name/scale': 'read',
  'GET /api/v1/endpoints/:name/scale/events': 'read',
  'GET /metrics': 'read',
  'GET /api/v1/endpoints/:name/slo': 'read',
  'GET /api/v1/slo/rules': 'read',
  'GET /api/v1/endpoints/:name/drift': 'read',
  'GET /api/v1/endpoints/:name/observability': 'read',
  'PUT /api/v1/endpoints/:name/observability': 'team',
  'DELETE /api/v1/endpoints/:name/observability': 'team',
};

/** Who may make a call of each need, as far as a role alone decides (a team aside). */
const roles: Readonly<Record<Need, readonly (TokenRole | 'none')[]>> = {
  open: ['none', 'reader', 'deployer', 'gateway', 'admin'],
  read: ['reader', 'deployer', 'admin'],
  upload: ['deployer', 'admin'],
  team: ['deployer', 'admin'],
  admin: ['admin'],
  routing: ['gateway', 'admin'],
};

/** `METHOD /path` of every route, from printRoutes' tree (four columns a level). */
function routesOf(tree: string): string[] {
  const routes: string[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const match = /^([│├└─\s]*)(\/\S*)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (match === null) continue;
    const depth = [...(match[1] ?? '')].length / 4 - 1;
    stack.length = depth;
    stack.push(match[2] ?? '');
    for (const method of (match[3] ?? '').split(', ').filter((m) => m !== ''))
      routes.push(`${method} ${stack.join('')}`);
  }
  return routes;
}

test('every route declares its need, and each role gets exactly what the need allows', async () => {
  const home = await tempDir();
  const clock = new FakeClock();
  const store = SqliteStore.open(join(home, 'kiln.db'), { clock });
  const artifacts = new ArtifactStore(join(home, 'artifacts'), clock);
  await artifacts.init();
  const registry = new Registry(store, artifacts);
  const backend = new LocalBackend({ runDir: join(home, 'run'), detached: false });
  const reconciler = new Reconciler({
    store,
    registry,
    backend,
    clock,
    auth: 'api-keys',
    gatewayAcks: false,
  });
  const traffic = new TrafficService(registry, reconciler, clock);
  const app = await buildApiServer({
    registry,
    home,
    version: 'test',
    auth: 'tokens',
    clock,
    maxUploadBytes: 1024,
    serving: {
      endpoints: new EndpointService(registry, reconciler, () => '', clock),
      reconciler,
      gatewayUrl: () => '',
      autoscale: new AutoscaleController({ store, clock, replicas: reconciler }),
      rollouts: new RolloutController({
        store,
        traffic,
        observations: traffic,
        replicas: reconciler,
        golden: httpGoldenRunner(),
        clock,
      }),
    },
    observability: {
      metrics: new MetricsRegistry(),
      slo: new SloService({ store, clock, metrics: new MetricsRegistry() }),
      drift: new DriftService({
        store,
        clock,
        readyReplicas: () => [],
        reference: () => Promise.resolve(null),
        metrics: null,
      }),
    },
  });
  after(async () => {
    await app.close();
    await reconciler.close();
    await store.close();
  });

  const found = routesOf(app.printRoutes({ commonPrefix: false }));
  const withoutHead = found.filter((route) => {
    const [method, path] = route.split(' ');
    return method !== 'HEAD' || !found.includes(`GET ${path}`);
  });
  assert.deepEqual([...withoutHead].sort(), Object.keys(declared).sort());

  const tokens: Record<string, Record<string, string>> = { none: {} };
  for (const role of ['reader', 'deployer', 'gateway', 'admin'] as const) {
    const { token } = await issueToken(store, clock, {
      name: role,
      role,
      team: role === 'deployer' ? 'risk' : null,
    });
    tokens[role] = { authorization: `Bearer ${token}` };
  }
  for (const route of found) {
    const [method = '', pattern = ''] = route.split(' ');
    const need = declared[route] ?? declared[`GET ${pattern}`];
    assert.ok(need !== undefined, route);
    const url = pattern
      .replace(':sha256', 'a'.repeat(64))
      .replace(/:[a-zA-Z]+/g, 'x')
      .concat(pattern.endsWith('/snapshot') ? '?waitMs=0' : '');
    for (const [who, headers] of Object.entries(tokens)) {
      const response = await app.inject({ method: method as 'GET', url, headers });
      const may = (roles[need] as readonly string[]).includes(who);
      const refused = who === 'none' ? 401 : 403;
      if (may)
        assert.ok(response.statusCode < 401 || response.statusCode > 403, `${who}: ${route}`);
      else assert.equal(response.statusCode, refused, `${who}: ${route}`);
    }
  }
});
