// `kiln rollout …`, `kiln deploy --strategy …` and `kiln models golden …`: the pure parts
// (durations, steps, the request body, the status text), then the real CLI as processes
// against a platform with real ONNX workers: a version registered with --golden, a blue-green
// deploy that reproduces it and switches, a canary started, paused, resumed and aborted, and
// the refusals (bad steps, nothing to promote, serving flags with a rollout strategy).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  canaryFlagsGiven,
  parseDuration,
  rolloutBody,
  stepList,
} from '../../src/cli/commands/rollout.ts';
import { rolloutText, type RolloutView } from '../../src/cli/commands/rollout-render.ts';
import { testPlatform } from '../helpers/platform.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { Cli, root } from './cli-harness.ts';

test('durations, steps and the start body from the flags', () => {
  assert.equal(parseDuration('2m'), 120_000);
  assert.equal(parseDuration('90s'), 90_000);
  assert.equal(parseDuration('45'), 45_000);
  assert.equal(parseDuration('1h'), 3_600_000);
  assert.equal(parseDuration('500ms'), 500);
  assert.throws(() => parseDuration('two minutes'), /expected a duration/);
  assert.deepEqual(stepList('1, 5,25,50,100'), [1, 5, 25, 50, 100]);
  assert.throws(() => stepList('1,five'), /percentages separated by commas/);
  assert.deepEqual(
    rolloutBody('fraud', 3, 'canary', {
      steps: [1, 5, 25, 50, 100],
      interval: 120_000,
      maxErrorRate: 0.01,
      maxP99Ms: 50,
      sliceKey: 'country',
      slicePath: '$.parameters.country',
    }),
    {
      model: 'fraud',
      version: 3,
      strategy: 'canary',
      steps: [1, 5, 25, 50, 100],
      intervalMs: 120_000,
      thresholds: { maxErrorRate: 0.01, maxP99Ms: 50 },
      sliceKey: 'country',
      slicePath: '$.parameters.country',
    },
  );
  assert.deepEqual(rolloutBody('fraud', 3, 'blue-green', { reason: 'r' }), {
    model: 'fraud',
    version: 3,
    strategy: 'blue-green',
    reason: 'r',
  });
  assert.throws(
    () => rolloutBody('fraud', 3, 'blue-green', { steps: [100] }),
    /for canary rollouts, not blue-green/,
  );
});

test('status text: the step, when the next one may come, and the analysis reasons', () => {
  const view: RolloutView = {
    rollout: {
      id: 'ro_1',
      endpoint: 'fraud',
      strategy: 'canary',
      baseline: { model: 'fraud', version: 2 },
      canary: { model: 'fraud', version: 3 },
      steps: [1, 5, 100],
      stepIndex: 1,
      intervalMs: 120_000,
      sliceKey: 'country',
      state: 'running',
      stepStartedAt: '2026-01-01T00:00:00.000Z',
      reason: null,
      createdBy: 'token "ci" (admin)',
      createdAt: '2026-01-01T00:00:00.000Z',
      finishedAt: null,
    },
    percent: 5,
    analysis: {
      decision: 'wait',
      reasons: [
        {
          check: 'request-count',
          scope: 'slice country=de',
          outcome: 'insufficient-data',
          message: 'slice country=de: too few requests to judge',
        },
      ],
    },
    stepRemainingMs: 95_000,
    analysisSince: '2026-01-01T00:00:10.000Z',
  };
  const text = rolloutText(view);
  assert.match(text, /^rollout ro_1 on fraud \(canary\): fraud:2 → fraud:3\n/);
  assert.match(text, /step: +2\/3 \(5 % to fraud:3\)/);
  assert.match(text, /next step: +in 1m 35s, once the analysis passes/);
  assert.match(
    text,
    /analysis: wait \(requests since 2026-01-01 00:00:10\)\n {2}insufficient-data: slice country=de: too few requests/,
  );
});

test('kiln deploy refuses canary flags without --strategy canary, before any call', async () => {
  // No platform: a usage error must come before the CLI reaches for one (port 9: discard).
  const cli = new Cli('http://127.0.0.1:9', await tempDir());
  const plain = await cli.fails(
    ['deploy', 'fraud:2', '--endpoint', 'fraud', '--steps', '1,100', '--max-p99-ms', '50'],
    2,
  );
  assert.match(plain, /--steps, --max-p99-ms are for --strategy canary; a replace deploy/);
  assert.match(plain, /KILN_USAGE/);
  const replace = await cli.fails(
    ['deploy', 'fraud:2', '--endpoint', 'fraud', '--strategy', 'replace', '--interval', '1m'],
    2,
  );
  assert.match(replace, /--interval is for --strategy canary/);
  // What a rollout does without the flags is in the help, not only in the docs.
  const help = (await cli.run(['rollout', 'start', '--help'])).stdout.replace(/\s+/g, ' ');
  for (const shown of [
    'ending at 100 (default 1,5,25,50,100)',
    'before promotion (default 2m)',
    'significantly exceed (default 0.01)',
    'p99 latency (default 1000)',
    'the baseline (default 0.2)',
    'is judged (default 100)',
  ])
    assert.ok(help.includes(shown), `kiln rollout start --help lacks "${shown}":\n${help}`);
  assert.deepEqual(canaryFlagsGiven({ reason: 'r' }), []);
  assert.deepEqual(canaryFlagsGiven({ sliceKey: 'country', minRequests: 5 }), [
    '--min-requests',
    '--slice-key',
  ]);
});

const mlp = join(root, 'fixtures', 'onnx', 'mlp.onnx');

test('kiln models register --golden, deploy --strategy blue-green|canary, rollout status|pause|resume|abort', async () => {
  const { url, home } = await testPlatform();
  const cli = new Cli(url, home);
  const dir = await tempDir();
  const expected = JSON.parse(
    await readFile(join(root, 'fixtures', 'onnx', 'mlp.expected.json'), 'utf8'),
  ) as { inputs: unknown[]; outputs: { name: string; data: number[] }[] };
  const goldenFile = join(dir, 'golden.json');
  await writeFile(
    goldenFile,
    JSON.stringify({
      tolerance: { absolute: 1e-5, relative: 1e-4 },
      cases: [
        {
          request: { inputs: expected.inputs },
          outputs: expected.outputs.map(({ name, data }) => ({ name, data })),
        },
      ],
    }),
  );
  await cli.ok(['models', 'register', mlp, '--name', 'm', '--format', 'onnx', '--no-progress']);
  const registered = await cli.ok([
    'models',
    'register',
    mlp,
    '--name',
    'm',
    '--format',
    'onnx',
    '--golden',
    goldenFile,
    '--no-progress',
  ]);
  assert.match(registered, /golden set: +m:2\ncases: +1\n/);
  assert.match(
    await cli.ok(['models', 'golden', 'show', 'm:2']),
    /tolerance: +absolute 0\.00001, relative 0\.0001/,
  );
  // A golden file the platform refuses: the version stands without a set, and the error says so.
  const badGolden = join(dir, 'bad-golden.json');
  await writeFile(badGolden, JSON.stringify({ cases: [{ request: {}, outputs: [] }] }));
  const refused = await cli.run([
    'models',
    'register',
    mlp,
    '--name',
    'm',
    '--format',
    'onnx',
    '--golden',
    badGolden,
    '--no-progress',
  ]);
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stdout, /registered m version 3/);
  assert.match(refused.stderr, /\(KILN_GOLDEN_SET_INVALID\)\n/);
  assert.match(
    refused.stderr,
    /hint: version 3 is registered without a golden set: fix the file, then `kiln models golden set m:3 .*bad-golden\.json`/,
  );
  const missing = await cli.fails(['models', 'golden', 'show', 'm:1'], 1);
  assert.match(missing, /m v1 has no golden set \(KILN_GOLDEN_SET_NOT_FOUND\)/);

  await cli.ok(['deploy', 'm:1', '--endpoint', 'e', '--wait', '--timeout-s', '120']);
  assert.match(
    await cli.fails(['rollout', 'promote', 'e'], 1),
    /endpoint e has no rollout in progress to promote \(KILN_NO_ACTIVE_ROLLOUT\)/,
  );
  assert.match(
    await cli.fails(['rollout', 'start', 'e', '--to', 'm:2', '--steps', '50,40'], 1),
    /steps\[1\]: step 40 must be above the step before it \(50\).*\(KILN_VALIDATION_FAILED\)/,
  );
  assert.match(
    await cli.fails(
      ['deploy', 'm:2', '--endpoint', 'e', '--strategy', 'blue-green', '--replicas', '2'],
      2,
    ),
    /do not combine with --strategy blue-green \(KILN_USAGE\)/,
  );

  const switched = await cli.json<RolloutView>([
    'deploy',
    'm:2',
    '--endpoint',
    'e',
    '--strategy',
    'blue-green',
    '--wait',
    '--timeout-s',
    '120',
  ]);
  assert.equal(switched.rollout.state, 'succeeded', switched.rollout.reason ?? '');
  assert.match(switched.rollout.reason ?? '', /golden set reproduced \(1 cases\)/);
  const endpoint = await cli.json<{ version: number }>(['endpoints', 'show', 'e']);
  assert.equal(endpoint.version, 2);

  const started = await cli.ok([
    'deploy',
    'm:1',
    '--endpoint',
    'e',
    '--strategy',
    'canary',
    '--steps',
    '10,100',
    '--interval',
    '1h',
    '--max-error-rate',
    '0.02',
    '--slice-key',
    'country',
    '--slice-path',
    '$.parameters.country',
  ]);
  assert.match(started, /^rollout ro_[0-9a-f]+ on e \(canary\): m:2 → m:1\n/);
  assert.match(await cli.ok(['rollout', 'status', 'e']), /slices: +country/);
  assert.match(await cli.ok(['rollout', 'pause', 'e', '--reason', 'hold']), /state: +paused/);
  assert.doesNotMatch(await cli.ok(['rollout', 'resume', 'e']), /state: +paused/);
  const aborted = await cli.ok(['rollout', 'abort', 'e', '--reason', 'enough']);
  assert.match(aborted, /state: +aborted/);
  assert.match(aborted, /reason: +enough/);
  assert.equal((await cli.json<{ version: number }>(['endpoints', 'show', 'e'])).version, 2);
});
