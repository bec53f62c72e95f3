// The warm grace, end to end (issue 13): a deploy that replaces v1 with v3 keeps v1 running
// warm for its grace (here `warmGraceMs` 15 s), then the reconciler stops it (history:
// `warm-expired` by `reconciler`) and the endpoint runs v3 alone. A rollback after that is
// no longer instant — v1 must start again — but still loses no request: v3 keeps serving
// until v1 is ready, then v1 takes over. Under a steady load throughout.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, testPlatform } from '../helpers/platform.ts';
import {
  checkSliceAnswer,
  cyclingRequests,
  registerSliceModels,
  sliceRows,
} from '../helpers/slice-models.ts';
import { SteadyLoad } from '../helpers/steady-load.ts';
import { TrafficApi, waitForGatewayReady } from '../helpers/traffic-api.ts';

const platform = await testPlatform({ gateway: true });
const api = new TrafficApi(platform.url);
const MODEL = 'tm';
const ENDPOINT = 'graceful';
await registerSliceModels(platform.url, MODEL);

interface EndpointStatus {
  status: {
    replicas: { version: number; state: string }[];
    versions?: { version: number; warmUntil: string | null }[];
  };
}

/** The versions the endpoint's replicas run now. */
async function runningVersions(): Promise<number[]> {
  const response = await call(platform.url, 'GET', `/api/v1/endpoints/${ENDPOINT}`);
  const replicas = (response.body as EndpointStatus).status.replicas;
  return [...new Set(replicas.map((r) => r.version))].sort();
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

test('a warm version is stopped after its grace; a rollback then starts it again without losing a request', async () => {
  await api.deploy(ENDPOINT, MODEL, 1);
  await waitForGatewayReady(platform.gatewayUrl, ENDPOINT);
  const load = new SteadyLoad({
    url: `${platform.gatewayUrl}/v2/models/${ENDPOINT}/infer`,
    clients: 4,
    maxRatePerSecond: 300,
    next: cyclingRequests(sliceRows.map((_, i) => i)),
    check: checkSliceAnswer,
  }).start();
  try {
    await load.waitForOnly(1);
    const replaced = await call(platform.url, 'PUT', `/api/v1/endpoints/${ENDPOINT}`, {
      model: MODEL,
      version: 3,
      replicas: 1,
      warmGraceMs: 15_000,
    });
    assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
    await load.waitForOnly(3);
    // Within the grace: v1 still runs, warm, beside v3 (what makes a rollback instant).
    const during = (await call(platform.url, 'GET', `/api/v1/endpoints/${ENDPOINT}`))
      .body as EndpointStatus;
    const warm = during.status.versions?.find((v) => v.version === 1);
    assert.ok(warm?.warmUntil !== null && warm?.warmUntil !== undefined, JSON.stringify(during));
    assert.deepEqual(await runningVersions(), [1, 3]);
    await until(
      async () => JSON.stringify(await runningVersions()) === '[3]',
      'v1 stopped after its warm grace',
    );
    const history = await api.history(ENDPOINT);
    const expired = history.find((e) => e.action === 'warm-expired');
    assert.equal(expired?.actor, 'reconciler', JSON.stringify(history));

    await api.rollback(ENDPOINT, 'e2e: back after the grace');
    await load.waitForOnly(1);
    assert.equal((await api.endpoint(ENDPOINT)).version, 1);
  } finally {
    const summary = await load.stop();
    console.log(
      `steady load: ${summary.sent} sent, by version ${JSON.stringify(Object.fromEntries(summary.byVersion))}`,
    );
    assert.deepEqual(
      summary.failures.slice(0, 20),
      [],
      `${summary.failures.length} of ${summary.sent} requests failed`,
    );
  }
});
