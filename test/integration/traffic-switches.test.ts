// Every traffic switch under a steady load loses no request (issue 13), end to end through
// the real gateway and worker processes: a manual split, a rollback of it, a deploy that
// replaces the stable version, a rollback to the previous (warm) version through the real
// `kiln rollback` CLI, a canary rollout's steps up to completion, a blue-green switch whose
// candidate passes its golden set and one whose candidate fails it (traffic never reaches
// it), a canary promoted a step by hand and then aborted (`kiln rollout promote|abort`).
// Every answer is checked against the fixtures' numpy reference for the version named by
// its `kiln-model-version`, and its `kiln-model` must be the model. The time from `kiln
// rollback` to the first answer of the other version is printed, not asserted
// (bench/rollback.ts measures it).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Cli } from '../cli/cli-harness.ts';
import { testPlatform } from '../helpers/platform.ts';
import {
  checkSliceAnswer,
  cyclingRequests,
  registerSliceModels,
  sliceGoldenSet,
  sliceRows,
} from '../helpers/slice-models.ts';
import { SteadyLoad, type LoadAnswer } from '../helpers/steady-load.ts';
import { TrafficApi, waitForGatewayReady } from '../helpers/traffic-api.ts';

const root = new URL('../../', import.meta.url).pathname;
const platform = await testPlatform({ gateway: true });
const api = new TrafficApi(platform.url);
const cli = new Cli(platform.url, platform.home);
const MODEL = 'tm';
const ENDPOINT = 'switch';
await registerSliceModels(platform.url, MODEL);

function check(answer: LoadAnswer): string | null {
  if (answer.model !== MODEL) return `kiln-model ${answer.model ?? '(none)'}, expected ${MODEL}`;
  return checkSliceAnswer(answer);
}

/** `kiln rollback ENDPOINT` as its own process; resolves with its exit code and output. */
function cliRollback(
  endpoint: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [`${root}bin/kiln.js`, 'rollback', endpoint, '--reason', 'e2e: back to the previous version'],
      {
        cwd: root,
        env: { ...process.env, KILN_URL: platform.url, KILN_HOME: platform.home },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('no request fails across a split, its rollback, a replace, a CLI rollback, rollouts and blue-green switches', async (t) => {
  await api.deploy(ENDPOINT, MODEL, 1);
  await waitForGatewayReady(platform.gatewayUrl, ENDPOINT);
  const load = new SteadyLoad({
    url: `${platform.gatewayUrl}/v2/models/${ENDPOINT}/infer`,
    clients: 4,
    maxRatePerSecond: 300,
    // Every fixture row, slice de included: v1 and v3 differ there, so the check tells them apart.
    next: cyclingRequests(sliceRows.map((_, i) => i)),
    check,
  }).start();
  try {
    await load.waitForOnly(1);

    await t.test('a 50/50 split between v1 and v3', async () => {
      await api.setPolicy(ENDPOINT, [
        { model: MODEL, version: 1, weight: 50 },
        { model: MODEL, version: 3, weight: 50 },
      ]);
      await load.waitForAnswers(3);
      await load.waitForAnswers(1);
    });

    await t.test('a rollback of the split: the stable v1 alone again', async () => {
      await api.rollback(ENDPOINT);
      await load.waitForOnly(1);
    });

    await t.test('a deploy that replaces v1 with v3', async () => {
      await api.deploy(ENDPOINT, MODEL, 3);
      await load.waitForOnly(3);
    });

    await t.test('`kiln rollback` returns to v1 (kept warm): the header switches', async () => {
      const before = load.answeredBy(1);
      const started = performance.now();
      const cli = cliRollback(ENDPOINT);
      const switched = load
        .waitFor(() => load.answeredBy(1) > before, 'a first answer from v1')
        .then(() => performance.now() - started);
      // A CLI that fails ends the wait at once, with its error.
      const switchedMs = await Promise.race([
        switched,
        cli.then((done) =>
          done.code === 0 ? switched : Promise.reject(new Error(`kiln rollback: ${done.stderr}`)),
        ),
      ]);
      const done = await cli;
      assert.equal(done.code, 0, done.stderr);
      console.log(
        `kiln rollback: first answer from v1 ${switchedMs.toFixed(0)} ms after the CLI was spawned ` +
          `(CLI said: ${done.stdout.trim().replaceAll('\n', ' | ')})`,
      );
      await load.waitForOnly(1);
      const endpoint = await api.endpoint(ENDPOINT);
      assert.equal(endpoint.version, 1);
    });

    await t.test('a canary rollout v1 -> v3 steps 50, 100 completes', async () => {
      const rollout = await api.startRollout(ENDPOINT, {
        model: MODEL,
        version: 3,
        steps: [50, 100],
        intervalMs: 1000,
        // v3 shifts slice de's outputs on purpose and this rollout judges no slice: only the
        // switches are under test here, so the limits cannot be breached.
        thresholds: { maxErrorRate: 0.5, maxP99Ms: 600_000, maxPsi: 1000, minRequests: 10 },
      });
      await load.waitForAnswers(3);
      const done = await api.waitForRollout(
        rollout.id,
        (r) => !['starting', 'running', 'paused'].includes(r.state),
        'the rollout to finish',
      );
      assert.equal(done.state, 'succeeded', JSON.stringify(done));
      await load.waitForOnly(3);
      assert.equal((await api.endpoint(ENDPOINT)).version, 3);
    });

    await t.test(
      'blue-green v3 -> v1: golden set reproduced, then all traffic at once',
      async () => {
        await api.setGolden(MODEL, 1, sliceGoldenSet(1));
        const rollout = await api.startRollout(ENDPOINT, {
          model: MODEL,
          version: 1,
          strategy: 'blue-green',
        });
        const done = await api.waitForRollout(
          rollout.id,
          (r) => !['starting', 'running', 'paused'].includes(r.state),
          'the blue-green switch to finish',
        );
        assert.equal(done.state, 'succeeded', JSON.stringify(done));
        await load.waitForOnly(1);
        assert.equal((await api.endpoint(ENDPOINT)).version, 1);
      },
    );

    await t.test('blue-green to v2, which fails its golden set: traffic never moves', async () => {
      // v2 is meant to be v1 again, so v1's outputs are its golden set; it fails the de rows.
      await api.setGolden(MODEL, 2, sliceGoldenSet(1));
      const rollout = await api.startRollout(ENDPOINT, {
        model: MODEL,
        version: 2,
        strategy: 'blue-green',
      });
      const done = await api.waitForRollout(
        rollout.id,
        (r) => !['starting', 'running', 'paused'].includes(r.state),
        'the blue-green check to end',
      );
      assert.equal(done.state, 'rolled-back', JSON.stringify(done));
      assert.ok((done.reason ?? '').length > 0, 'the reason is recorded');
      console.log(`blue-green to v2 ${done.state}: ${done.reason ?? ''}`);
      await load.waitForAnswers(1);
      assert.equal(load.answeredBy(2), 0, 'no request went to the candidate');
      assert.equal((await api.endpoint(ENDPOINT)).version, 1);
    });

    await t.test(
      'a canary promoted a step by hand, then aborted (kiln rollout promote|abort)',
      async () => {
        const rollout = await api.startRollout(ENDPOINT, {
          model: MODEL,
          version: 3,
          steps: [10, 50, 100],
          intervalMs: 600_000,
          thresholds: { maxErrorRate: 0.5, maxP99Ms: 600_000, maxPsi: 1000, minRequests: 10 },
        });
        await api.waitForRollout(rollout.id, (r) => r.state === 'running', 'the canary running');
        await load.waitForAnswers(3);
        await cli.ok(['rollout', 'promote', ENDPOINT, '--reason', 'e2e: looks fine']);
        const promoted = await api.rollout(rollout.id);
        assert.equal(promoted.stepIndex, 1, JSON.stringify(promoted));
        await load.waitForAnswers(3);
        await cli.ok(['rollout', 'abort', ENDPOINT, '--reason', 'e2e: changed our mind']);
        assert.equal((await api.rollout(rollout.id)).state, 'aborted');
        await load.waitForOnly(1);
        assert.equal((await api.endpoint(ENDPOINT)).version, 1);
      },
    );

    await t.test('history lists every switch', async () => {
      const actions = (await api.history(ENDPOINT)).map((event) => event.action).reverse();
      const wanted = [
        'policy',
        'rollback',
        'deploy',
        'rollback',
        'rollout-start',
        'rollout-complete',
      ];
      let at = 0;
      for (const action of actions) if (action === wanted[at]) at++;
      assert.equal(at, wanted.length, `history (oldest first): ${actions.join(', ')}`);
    });
  } finally {
    const summary = await load.stop();
    console.log(
      `steady load: ${summary.sent} sent, ${summary.answered} answered, by version ` +
        JSON.stringify(Object.fromEntries(summary.byVersion)),
    );
    assert.deepEqual(
      summary.failures.slice(0, 20),
      [],
      `${summary.failures.length} of ${summary.sent} requests failed`,
    );
  }
});
