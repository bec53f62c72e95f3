// A rollout in progress survives a control-plane restart and carries on (issue 13), with
// real processes: `kiln up --dev` serving the fixtures' v1 under a steady load, a canary
// rollout v1 -> v3 (steps 25, 50, 100; 2 s per step) started; once it is at a step past
// the first, the platform is killed outright (SIGKILL: no shutdown code runs) and started
// again on the same home. The gateway and workers outlive it (they are adopted), the
// restarted control plane's rollout controller picks the rollout up from the store — the
// same id, from the step it had reached — and takes it to completion. No request fails on
// the way, and every answer matches the reference of the version that gave it.

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cli, startPlatformProcess, type PlatformProcess } from '../cli/cli-harness.ts';
import {
  checkSliceAnswer,
  cyclingRequests,
  registerSliceModels,
  sliceRows,
} from '../helpers/slice-models.ts';
import { SteadyLoad } from '../helpers/steady-load.ts';
import { TrafficApi, waitForGatewayReady } from '../helpers/traffic-api.ts';

const home = await mkdtemp(join(tmpdir(), 'kiln-restart-'));
const platforms: PlatformProcess[] = [];

after(async () => {
  for (const platform of platforms) await platform.kill('SIGTERM');
  // What a killed platform left serving (the gateway, workers) goes with `kiln down`.
  await new Cli('', home).run(['down', '--home', home]);
  await rm(home, { recursive: true, force: true });
});

async function up(): Promise<PlatformProcess> {
  const platform = await startPlatformProcess(home, {
    gateway: true,
    args: ['--dev', '--no-demo'],
  });
  platforms.push(platform);
  return platform;
}

test('a canary rollout carries on after the control plane is killed and restarted', async () => {
  const first = await up();
  const gatewayUrl = first.gatewayUrl ?? '';
  assert.notEqual(gatewayUrl, '');
  let api = new TrafficApi(first.url);
  await registerSliceModels(first.url, 'tm');
  await api.deploy('restart', 'tm', 1);
  await waitForGatewayReady(gatewayUrl, 'restart');
  const load = new SteadyLoad({
    url: `${gatewayUrl}/v2/models/restart/infer`,
    clients: 4,
    maxRatePerSecond: 300,
    next: cyclingRequests(sliceRows.map((_, i) => i)),
    check: checkSliceAnswer,
  }).start();
  try {
    await load.waitForOnly(1);
    const started = await api.startRollout('restart', {
      model: 'tm',
      version: 3,
      steps: [25, 50, 100],
      intervalMs: 2000,
      // The switch and the restart are under test, not the analysis: limits never breached.
      thresholds: { maxErrorRate: 0.5, maxP99Ms: 600_000, maxPsi: 1000, minRequests: 10 },
    });
    const reached = await api.waitForRollout(
      started.id,
      (r) => r.state === 'running' && r.stepIndex >= 1,
      'the rollout at its second step',
    );
    assert.ok(reached.stepIndex < reached.steps.length - 1, JSON.stringify(reached));
    await load.waitForAnswers(3);

    assert.equal(await first.kill('SIGKILL'), 'SIGKILL');
    // The data plane serves on while no control plane runs.
    await load.waitForAnswers(1);
    await load.waitForAnswers(3);

    const second = await up();
    assert.equal(second.gatewayUrl, gatewayUrl, 'the restarted platform adopts the same gateway');
    api = new TrafficApi(second.url);
    const resumed = await api.rollout(started.id);
    assert.ok(
      resumed.stepIndex >= reached.stepIndex,
      `resumed at step ${resumed.stepIndex}, had reached ${reached.stepIndex}`,
    );
    const done = await api.waitForRollout(
      started.id,
      (r) => !['starting', 'running', 'paused'].includes(r.state),
      'the resumed rollout to finish',
    );
    assert.equal(done.state, 'succeeded', JSON.stringify(done));
    await load.waitForOnly(3);
    assert.equal((await api.endpoint('restart')).version, 3);
    const history = await api.history('restart');
    assert.ok(
      history.some((e) => e.action === 'rollout-complete'),
      JSON.stringify(history.map((e) => e.action)),
    );
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
