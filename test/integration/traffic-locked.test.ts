// Traffic management on a locked platform (outside --dev), end to end: control-plane calls
// carry the admin token, clients an endpoint-scoped API key, and the gateway reports its
// counts with its own `gateway`-role token. The per-slice canary still works — which needs
// the gateway's reports accepted under access control — and history names who acted: the
// admin token for an API rollback, the rollout controller for the automatic one.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, testPlatform } from '../helpers/platform.ts';
import {
  SLICE_PATH,
  checkSliceAnswer,
  cyclingRequests,
  isV2DeFailure,
  registerSliceModels,
  sliceRows,
} from '../helpers/slice-models.ts';
import { SteadyLoad } from '../helpers/steady-load.ts';
import { TrafficApi, waitForGatewayReady } from '../helpers/traffic-api.ts';

const platform = await testPlatform({ gateway: true, dev: false });
const api = new TrafficApi(platform.url, platform.admin);
const MODEL = 'tm';
const ENDPOINT = 'locked';
await registerSliceModels(platform.url, MODEL, platform.admin);

test('outside --dev: a slice canary is judged on the gateway reports and rolled back; history names the actors', async () => {
  await api.deploy(ENDPOINT, MODEL, 1);
  const created = await call(
    platform.url,
    'POST',
    '/api/v1/api-keys',
    { name: 'locked-app', endpoint: ENDPOINT },
    platform.admin,
  );
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const auth = { authorization: `Bearer ${(created.body as { key: string }).key}` };
  await waitForGatewayReady(platform.gatewayUrl, ENDPOINT, auth);
  const rows = cyclingRequests(sliceRows.map((_, i) => i));
  const load = new SteadyLoad({
    url: `${platform.gatewayUrl}/v2/models/${ENDPOINT}/infer`,
    clients: 4,
    maxRatePerSecond: 300,
    next: (i) => ({ ...rows(i), headers: auth }),
    check: checkSliceAnswer,
    expectFailure: isV2DeFailure,
  }).start();
  try {
    await load.waitForOnly(1);
    const started = await api.startRollout(ENDPOINT, {
      model: MODEL,
      version: 2,
      steps: [50, 100],
      intervalMs: 600_000,
      thresholds: {
        maxErrorRate: 0.3,
        maxP99Ms: 600_000,
        maxPsi: 1000,
        minRequests: 200,
        minSliceRequests: 50,
      },
      sliceKey: 'country',
      slicePath: SLICE_PATH,
    });
    const done = await api.waitForRollout(
      started.id,
      (r) => !['starting', 'running', 'paused'].includes(r.state),
      'the rollout to end',
    );
    assert.equal(done.state, 'rolled-back', JSON.stringify(done));
    assert.match(done.reason ?? '', /slice country=de/);
    await load.waitForOnly(1);

    // A manual switch and its rollback by the admin, under load.
    await api.deploy(ENDPOINT, MODEL, 3);
    await load.waitForOnly(3);
    await api.rollback(ENDPOINT, 'e2e: locked rollback');
    await load.waitForOnly(1);

    const history = await api.history(ENDPOINT);
    const automatic = history.find((e) => e.action === 'rollout-rollback');
    assert.equal(automatic?.actor, 'rollout-controller', JSON.stringify(history));
    const manual = history.find((e) => e.action === 'rollback');
    assert.match(manual?.actor ?? '', /^token ".+" \(admin\)$/, JSON.stringify(manual));
    assert.equal(manual?.reason, 'e2e: locked rollback');
  } finally {
    const summary = await load.stop();
    assert.deepEqual(
      summary.failures.slice(0, 20),
      [],
      `${summary.failures.length} of ${summary.sent} requests failed other than v2 on slice de`,
    );
  }
});
