// A canary that is worse on one slice only is rolled back automatically, with that slice
// named (issue 13), end to end: real gateway, real workers, the fixtures' ONNX family
// (fixtures/traffic/make_slice_models.py) under a steady load where one request in ten is
// slice de (x1 = 7, `parameters.country` = "de") and the rest fr, us, it.
//
//   errors: v1 -> v2; v2 fails (500) on every de row and answers the others exactly as v1.
//           maxErrorRate 0.3: the canary's overall error rate (~0.1) stays within it, slice
//           de's (1.0) does not.
//   PSI:    v1 -> v3; v3 adds 10 to y on de rows only. maxPsi 0.5 over 4 bins: slice de's
//           outputs all land past the baseline's top quantile (PSI >> 1); overall the shift
//           moves ~10 % of the mass (PSI ~0.03, + sampling noise ~3 × 2 / n).
//
// Limits chosen so that only slice de can breach, whatever the draw: p99 limit far off;
// overall judged from 200 requests per version and a slice from 50 (PSI noise at 50 is
// ~0.12, well under 0.5); the first step (50 %) never promotes (interval 10 min), so the
// rollout ends only by a rollback. No user key: the gateway draws each request's variant.
// The errors case is started with the real `kiln rollout start` and the flags, and read
// back with `kiln rollout status`; the PSI case through the API (psiBins has no flag).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Cli } from '../cli/cli-harness.ts';
import { testPlatform } from '../helpers/platform.ts';
import {
  SLICE_PATH,
  checkSliceAnswer,
  cyclingRequests,
  isV2DeFailure,
  registerSliceModels,
  sliceRows,
} from '../helpers/slice-models.ts';
import { SteadyLoad } from '../helpers/steady-load.ts';
import { TrafficApi, waitForGatewayReady, type RolloutBody } from '../helpers/traffic-api.ts';

const platform = await testPlatform({ gateway: true });
const api = new TrafficApi(platform.url);
const cli = new Cli(platform.url, platform.home);
const MODEL = 'tm';
await registerSliceModels(platform.url, MODEL);

const activeStates = ['starting', 'running', 'paused'];

/** Starts the canary; resolves with the rollout's id. */
type StartCanary = (endpoint: string) => Promise<string>;

async function canaryRolledBack(
  endpoint: string,
  canary: number,
  start: StartCanary,
): Promise<{ rollout: RolloutBody; load: SteadyLoad }> {
  await api.deploy(endpoint, MODEL, 1);
  await waitForGatewayReady(platform.gatewayUrl, endpoint);
  const load = new SteadyLoad({
    url: `${platform.gatewayUrl}/v2/models/${endpoint}/infer`,
    clients: 4,
    maxRatePerSecond: 300,
    next: cyclingRequests(sliceRows.map((_, i) => i)),
    check: checkSliceAnswer,
    // v2 fails on de rows by design; any other failure (the baseline, another slice) counts.
    expectFailure: isV2DeFailure,
  }).start();
  try {
    await load.waitForOnly(1);
    const id = await start(endpoint);
    await load.waitForAnswers(canary);
    const rollout = await api.waitForRollout(
      id,
      (r) => !activeStates.includes(r.state),
      `the rollout to v${canary} to end`,
    );
    // Back on the baseline alone: the canary's policy is gone.
    await load.waitForOnly(1);
    return { rollout, load };
  } catch (error) {
    await load.stop();
    throw error;
  }
}

function assertSliceDeNamed(rollout: RolloutBody, check: RegExp): void {
  assert.equal(rollout.state, 'rolled-back', JSON.stringify(rollout));
  const reason = rollout.reason ?? '';
  console.log(`rollout ${rollout.id} ${rollout.state}: ${reason}`);
  assert.match(reason, /slice country=de/, reason);
  assert.match(reason, check, reason);
  // Only de is worse: no other scope is among the reasons.
  assert.doesNotMatch(reason, /slice country=(fr|us|it)|overall:/, reason);
}

test('a canary failing on slice de only is rolled back with slice country=de named', async () => {
  // Started with the real CLI and the flags.
  const { rollout, load } = await canaryRolledBack('errors', 2, async (endpoint) => {
    const stdout = await cli.ok([
      'rollout',
      'start',
      endpoint,
      '--to',
      `${MODEL}:2`,
      '--steps',
      '50,100',
      '--interval',
      '10m',
      '--max-error-rate',
      '0.3',
      '--max-p99-ms',
      '600000',
      '--max-psi',
      '1000',
      '--min-requests',
      '200',
      '--min-slice-requests',
      '50',
      '--slice-key',
      'country',
      '--slice-path',
      SLICE_PATH,
      '--json',
    ]);
    return (JSON.parse(stdout) as { rollout: { id: string } }).rollout.id;
  });
  const summary = await load.stop();
  assertSliceDeNamed(rollout, /error rate/);
  const history = await api.history('errors');
  const event = history.find((e) => e.action === 'rollout-rollback');
  assert.ok(event !== undefined, JSON.stringify(history));
  assert.match(event.reason, /slice country=de/);
  assert.equal(event.actor, 'rollout-controller');
  assert.ok(summary.expectedFailures > 0, 'v2 answered some de rows (and failed them)');
  assert.deepEqual(
    summary.failures.slice(0, 20),
    [],
    `${summary.failures.length} of ${summary.sent} requests failed other than v2 on slice de`,
  );
  assert.equal((await api.endpoint('errors')).version, 1);
  const status = await cli.ok(['rollout', 'status', 'errors']);
  assert.match(status, /rolled-back/);
  assert.match(status, /slice country=de/);
});

test('a canary shifting predictions on slice de only is rolled back with slice country=de named', async () => {
  const { rollout, load } = await canaryRolledBack('shift', 3, async (endpoint) => {
    const started = await api.startRollout(endpoint, {
      model: MODEL,
      version: 3,
      steps: [50, 100],
      intervalMs: 600_000,
      thresholds: {
        maxErrorRate: 0.01,
        maxP99Ms: 600_000,
        maxPsi: 0.5,
        psiBins: 4,
        minRequests: 200,
        minSliceRequests: 50,
      },
      sliceKey: 'country',
      slicePath: SLICE_PATH,
    });
    return started.id;
  });
  const summary = await load.stop();
  assertSliceDeNamed(rollout, /PSI|psi/);
  assert.deepEqual(
    summary.failures.slice(0, 20),
    [],
    `${summary.failures.length} of ${summary.sent} requests failed`,
  );
  assert.ok((summary.byVersion.get('3') ?? 0) > 0, 'the canary answered');
  assert.equal((await api.endpoint('shift')).version, 1);
});
