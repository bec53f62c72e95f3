// `kiln traffic show|set|clear`, `kiln rollback`, `kiln shadow set|clear|report`, `kiln
// endpoints history` and `kiln deploy --warm-grace`: the real CLI (one process per command)
// against an in-process platform; and the pure parts (flag parsing, renderings).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWeightedVersion } from '../../src/cli/commands/traffic.ts';
import {
  historyTable,
  shadowReportText,
  trafficDetails,
} from '../../src/cli/commands/traffic-render.ts';
import { warmGraceOption } from '../../src/cli/commands/deploy.ts';
import type { TrafficView } from '../../src/control/traffic/traffic-view.ts';
import type { TrafficEvent } from '../../src/cli/api-types.ts';
import { call, registerFixture, testPlatform } from '../helpers/platform.ts';
import { Cli } from './cli-harness.ts';

void test('traffic set/show/clear, shadows, rollback and history through the CLI', async () => {
  const platform = await testPlatform();
  for (let i = 0; i < 3; i++) await registerFixture(platform.url, 'm', 'onnx', 'mlp.onnx');
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/e', {
    model: 'm',
    version: 1,
    replicas: 0,
  });
  assert.equal(deployed.status, 201);
  const cli = new Cli(platform.url, platform.home);

  assert.equal(
    await cli.ok(['traffic', 'set', 'e', '--split', '1=90,m:2=10', '--reason', 'canary by hand']),
    'endpoint e: m:1 90%, m:2 10%\n',
  );
  const shown = await cli.ok(['traffic', 'show', 'e']);
  assert.match(shown, /^endpoint: +e$/m);
  assert.match(shown, /^stable: +m:1 \(deployed as 1\)$/m);
  assert.match(shown, /^split: +m:1 90%, m:2 10%$/m);
  assert.match(shown, /^previous: +-$/m);
  // Bad weights: the platform's 400, every problem in one line.
  const refused = await cli.fails(['traffic', 'set', 'e', '--split', '1=90,2=20'], 1);
  assert.match(refused, /weights must sum to 100, got 110 \(KILN_TRAFFIC_POLICY_INVALID\)/);
  await cli.fails(['traffic', 'set', 'e', '--split', '1=ninety'], 2);

  assert.equal(await cli.ok(['shadow', 'set', 'e', '3=0.25']), 'endpoint e: shadows m:3 25%\n');
  const report = await cli.ok(['shadow', 'report', 'e', '--since', '10m']);
  assert.match(report, /^endpoint e, shadows since /);
  assert.match(report, /^m:3 +25% +0 +0 +0 +0 +- /m);
  assert.equal(await cli.ok(['shadow', 'clear', 'e']), 'endpoint e: no shadows\n');

  // Rollback step 1: the policy ends; the time until the API answered is printed.
  const first = await cli.ok(['rollback', 'e', '--reason', 'enough']);
  assert.match(
    first,
    /^rolled back e: traffic policy cleared: m:1 takes 100% \(API answered in \d+\.\d{3} s\)\n$/,
  );
  await cli.fails(['rollback', 'e'], 1);

  // A deploy with a grace of its own; rollback returns to the previous version.
  const before = Date.now();
  const redeploy = await cli.run(['deploy', 'm:2', '--endpoint', 'e', '--warm-grace', '5m']);
  const after = Date.now();
  assert.equal(redeploy.code, 0, redeploy.stderr);
  const view = await cli.json<TrafficView>(['traffic', 'show', 'e']);
  assert.deepEqual(view.previous, { model: 'm', version: 1 });
  const until = Date.parse(view.warm[0]?.until ?? '');
  assert.ok(until >= before + 300_000 && until <= after + 300_000, view.warm[0]?.until);
  const back = await cli.ok(['rollback', 'e']);
  assert.match(back, /^rolled back e: m:1 is stable again \(was m:2, kept warm\)/);

  const history = await cli.ok(['endpoints', 'history', 'e']);
  const lines = history.trimEnd().split('\n');
  assert.match(lines[0] ?? '', /^TIME +ACTION +ACTOR +REASON +CHANGE$/);
  assert.deepEqual(
    lines.slice(1).map((line) => line.split(/ {2,}/)[1]),
    ['rollback', 'deploy', 'rollback', 'shadow', 'shadow', 'policy', 'deploy'],
  );
  assert.match(
    lines[3] ?? '',
    /rollback +token "\(dev\)" \(admin\) +enough +traffic policy cleared/,
  );
  const limited = await cli.json<{ items: unknown[] }>([
    'endpoints',
    'history',
    'e',
    '--limit',
    '2',
  ]);
  assert.equal(limited.items.length, 2);
});

void test('[MODEL:]VERSION=VALUE and --warm-grace parse; bad ones are refused', () => {
  assert.deepEqual(parseWeightedVersion('fraud:2=5', 'WEIGHT'), {
    model: 'fraud',
    version: 2,
    value: 5,
  });
  assert.deepEqual(parseWeightedVersion('my:model:3=0.5', 'RATE'), {
    model: 'my:model',
    version: 3,
    value: 0.5,
  });
  assert.deepEqual(parseWeightedVersion('2=95', 'WEIGHT'), { model: null, version: 2, value: 95 });
  for (const bad of ['fraud:2', 'fraud:x=5', '=5', 'fraud:0=5', '2=']) {
    assert.throws(() => parseWeightedVersion(bad, 'WEIGHT'), /expected \[MODEL:\]VERSION=WEIGHT/);
  }
  assert.equal(warmGraceOption('0'), 0);
  assert.equal(warmGraceOption('30m'), 1_800_000);
  assert.throws(() => warmGraceOption('soon'));
});

void test('renderings: history changes in words, the shadow report aligned', () => {
  const at = '2026-01-31T14:05:09.123Z';
  const text = historyTable([
    {
      id: 3,
      endpoint: 'e',
      at,
      actor: 'ci',
      action: 'rollback',
      reason: 'bad',
      detail: { summary: 'm:1 is stable again' },
    },
    {
      id: 2,
      endpoint: 'e',
      at,
      actor: 'ci',
      action: 'deploy',
      reason: 'deployed m:2 (2)',
      detail: { from: 'm:1', to: 'm:2' },
    },
    {
      id: 1,
      endpoint: 'e',
      at,
      actor: 'ci',
      action: 'policy',
      reason: 'x',
      detail: { before: null, after: { versions: [{ model: 'm', version: 1, weight: 100 }] } },
    },
  ]);
  const lines = text.split('\n');
  assert.match(lines[1] ?? '', /^2026-01-31 14:05:09 +rollback +ci +bad +m:1 is stable again$/);
  assert.match(lines[2] ?? '', / m:1 → m:2$/);
  assert.match(lines[3] ?? '', / m:1 100%$/);

  // What the controllers write: rollouts, blue-green, experiments, the reconciler.
  const event = (
    action: TrafficEvent['action'],
    detail: unknown,
  ): Parameters<typeof historyTable>[0][number] => ({
    id: 1,
    endpoint: 'e',
    at,
    actor: 'rollout-controller',
    action,
    reason: 'r',
    detail,
  });
  const controllers = historyTable([
    event('rollout-start', {
      rollout: 'ro_1',
      strategy: 'canary',
      baseline: 'm:1',
      canary: 'm:2',
      steps: [1, 100],
    }),
    event('rollout-step', { rollout: 'ro_1', step: 1, of: 2, weights: { 'm:1': 99, 'm:2': 1 } }),
    event('rollout-pause', { rollout: 'ro_1', step: 1, of: 2 }),
    event('rollout-complete', { rollout: 'ro_1', stable: 'm:2', previous: 'm:1', warmUntil: at }),
    event('rollout-rollback', { rollout: 'ro_1', canary: 'm:2', stable: 'm:1' }),
    event('experiment-start', {
      experiment: 'exp-1',
      name: 'n',
      variants: [
        { model: 'm', version: 1, weight: 50 },
        { model: 'm', version: 2, weight: 50 },
      ],
      keyPath: null,
    }),
    event('experiment-stop', { experiment: 'exp-1', policyRemoved: true }),
    event('warm-expired', { versions: [{ model: 'm', version: 1, until: at }] }),
  ]).split('\n');
  assert.match(controllers[1] ?? '', / m:1 → m:2 \(staged\)$/);
  assert.match(controllers[2] ?? '', / step 1\/2: m:1 99%, m:2 1%$/);
  assert.match(controllers[3] ?? '', / at step 1\/2$/);
  assert.match(controllers[4] ?? '', / m:1 → m:2$/);
  assert.match(controllers[5] ?? '', / m:2 dropped, m:1 stays$/);
  assert.match(controllers[6] ?? '', / m:1 50%, m:2 50%$/);
  assert.match(controllers[7] ?? '', / policy cleared$/);
  assert.match(controllers[8] ?? '', / stopped m:1$/);

  const report = shadowReportText({
    endpoint: 'e',
    since: at,
    until: at,
    shadows: [
      {
        model: 'm',
        version: 3,
        sampleRate: 0.5,
        offered: 8,
        sent: 6,
        dropped: 2,
        errors: 2,
        compared: 4,
        agreed: 2,
        agreementRate: 0.5,
        absDiff: { count: 4, mean: 0.125, max: 0.25 },
        latencyMs: { count: 4, p50: 10.2, p99: 120 },
        primaryLatencyMs: { count: 4, p50: 1, p99: 2 },
      },
    ],
  });
  const rows = report.split('\n');
  assert.match(
    rows[1] ?? '',
    /^SHADOW +RATE +OFFERED +SENT +DROPPED +ERRORS +AGREE +MEAN \|DIFF\| +MAX \|DIFF\| +P50 MS +P99 MS +PRIMARY P50\/P99$/,
  );
  assert.match(
    rows[2] ?? '',
    /^m:3 +50% +8 +6 +2 +2 +50\.0% \(2\/4\) +0\.1250 +0\.2500 +10\.2 +120 +1\.0\/2\.0$/,
  );
});

void test('traffic show: a rollout in progress, warm and staged versions, sticky and slice keys', () => {
  const text = trafficDetails({
    endpoint: 'fraud',
    stable: { model: 'fraud', version: 4, ref: '@champion' },
    split: [
      { model: 'fraud', version: 4, weight: 95 },
      { model: 'fraud', version: 5, weight: 5 },
    ],
    policy: {
      versions: [
        { model: 'fraud', version: 4, weight: 95 },
        { model: 'fraud', version: 5, weight: 5 },
      ],
      shadows: [{ model: 'fraud', version: 6, sampleRate: 0.125 }],
      salt: 'r-1',
      keyPath: '$.parameters.user',
      sliceKey: 'country',
      slicePath: '$.parameters.country',
    },
    previous: { model: 'fraud', version: 3 },
    warm: [{ model: 'fraud', version: 3, until: '2026-01-31T14:15:09.000Z' }],
    staged: [],
    rollout: {
      id: 'r-1',
      strategy: 'canary',
      state: 'running',
      canary: { model: 'fraud', version: 5 },
      stepIndex: 1,
      steps: [1, 5, 25, 100],
    },
    experiment: null,
    revision: 7,
    updatedAt: '2026-01-31T14:05:09.000Z',
    warmGraceMs: 600_000,
  });
  assert.equal(
    text,
    [
      'endpoint:   fraud',
      'stable:     fraud:4 (deployed as @champion)',
      'split:      fraud:4 95%, fraud:5 5%',
      'shadows:    fraud:6 12.5%',
      'sticky:     header kiln-user, else $.parameters.user (salt r-1)',
      'slices:     country: header kiln-slice, else $.parameters.country',
      'previous:   fraud:3',
      'warm:       fraud:3 until 2026-01-31 14:15:09',
      'staged:     -',
      'rollout:    r-1 (canary, running) to fraud:5, step 2/4 at 5%',
      'experiment: -',
      'revision:   7',
      'updated:    2026-01-31 14:05:09',
      '',
    ].join('\n'),
  );
});
