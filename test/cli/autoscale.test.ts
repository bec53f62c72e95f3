// Autoscaling over HTTP and the CLI (issue 14): gateway load reports (checked whole), wake,
// the policy routes, scale state and events, /metrics; `kiln autoscale set|show|events|clear`
// and `kiln deploy --min-replicas …` as real processes against an in-process platform.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { autoscaleBody, durationMsOption } from '../../src/cli/commands/autoscale.ts';
import { scaleStatusText } from '../../src/cli/commands/autoscale-render.ts';
import { mergeAutoscale } from '../../src/cli/commands/deploy.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';
import { call, errorCode, registerFixture, testPlatform } from '../helpers/platform.ts';
import { Cli } from './cli-harness.ts';

function report(endpoint: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Date.now();
  const latency = new HistogramSketch();
  latency.add(12);
  return {
    gateway: 'gw-test',
    windowStart: new Date(now - 1000).toISOString(),
    windowEnd: new Date(now).toISOString(),
    endpoints: [
      {
        endpoint,
        arrivals: 4,
        completed: 4,
        concurrencyMean: 0.5,
        concurrencyMax: 1,
        held: 0,
        latencyMs: latency.snapshot(),
        ...over,
      },
    ],
  };
}

void test('scaling API: reports checked whole, wake from zero, policy, state, events, metrics', async () => {
  const platform = await testPlatform();
  await registerFixture(platform.url, 'm', 'onnx', 'mlp.onnx');
  const policy = { minReplicas: 0, maxReplicas: 2, target: 1, scaleToZero: { idleMs: 600_000 } };
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/e', {
    model: 'm',
    version: 1,
    replicas: 0,
    config: { autoscale: policy },
  });
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  const bad = await call(platform.url, 'PUT', '/api/v1/endpoints/f', {
    model: 'm',
    config: { autoscale: { minReplicas: 2, maxReplicas: 1, signal: 'latency' } },
  });
  assert.equal(bad.status, 400);
  assert.equal(errorCode(bad), 'KILN_AUTOSCALE_INVALID');
  assert.match(JSON.stringify(bad.body), /minReplicas \(2\) > maxReplicas \(1\); unknown signal/);

  const ok = await call(platform.url, 'POST', '/api/v1/scaling/reports', report('e'));
  assert.deepEqual([ok.status, ok.body], [202, { endpoints: 1 }]);
  for (const [over, field] of [
    [{ arrivals: -1 }, 'body/endpoints/0/arrivals'],
    [{ concurrencyMean: 'lots' }, 'body/endpoints/0/concurrencyMean'],
    [
      { latencyMs: { relativeAccuracy: 0.01, zeroCount: 0, positive: 3, negative: [] } },
      'positive',
    ],
    [{ surprise: 1 }, 'unknown property "surprise"'],
    [{ latencyMs: new HistogramSketch(0.05).snapshot() }, 'relativeAccuracy must be 0.01'],
  ] as const) {
    const refused = await call(platform.url, 'POST', '/api/v1/scaling/reports', report('e', over));
    assert.equal(refused.status, 400, JSON.stringify(over));
    assert.equal(errorCode(refused), 'KILN_VALIDATION_FAILED');
    const message = (refused.body as { error: { message: string } }).error.message;
    assert.ok(message.includes(field), message);
  }
  const backwards = await call(platform.url, 'POST', '/api/v1/scaling/reports', {
    ...report('e'),
    windowEnd: '2020-01-01T00:00:00Z',
  });
  assert.equal(backwards.status, 400);

  // At zero; a gateway wakes it: one replica wanted at once, a wake event; again: no change.
  const woken = await call(platform.url, 'POST', '/api/v1/endpoints/e/wake', {});
  assert.equal(woken.status, 200);
  assert.equal((woken.body as { replicas: number }).replicas, 1);
  const again = await call(platform.url, 'POST', '/api/v1/endpoints/e/wake', {});
  assert.equal((again.body as { replicas: number }).replicas, 1);
  assert.equal(
    errorCode(await call(platform.url, 'POST', '/api/v1/endpoints/none/wake', {})),
    'KILN_ENDPOINT_NOT_FOUND',
  );
  const events = await call(platform.url, 'GET', '/api/v1/endpoints/e/scale/events');
  const kinds = (events.body as { items: { kind: string }[] }).items.map((e) => e.kind);
  assert.deepEqual(kinds, ['wake', 'manual']);

  const got = await call(platform.url, 'GET', '/api/v1/endpoints/e/autoscale');
  assert.equal((got.body as { autoscale: { maxReplicas: number } }).autoscale.maxReplicas, 2);
  const put = await call(platform.url, 'PUT', '/api/v1/endpoints/e/autoscale', {
    minReplicas: 0,
    maxReplicas: 5,
    signal: 'qps',
    target: 20,
  });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.equal((put.body as { autoscale: { signal: string } }).autoscale.signal, 'qps');
  const refused = await call(platform.url, 'PUT', '/api/v1/endpoints/e/autoscale', {
    minReplicas: 1,
    maxReplicas: 5,
    target: -2,
  });
  assert.equal(errorCode(refused), 'KILN_AUTOSCALE_INVALID');

  const state = await call(platform.url, 'GET', '/api/v1/endpoints/e/scale');
  assert.equal(state.status, 200);
  const body = state.body as { replicas: number; events: unknown[]; latencyMs: { count: number } };
  assert.equal(body.replicas, 1);
  assert.ok(body.events.length >= 3);
  const metrics = await call(platform.url, 'GET', '/metrics');
  assert.equal(metrics.status, 200);
  assert.match(
    String(metrics.body),
    /kiln_autoscale_scale_events_total\{endpoint="e",kind="wake"\} 1/,
  );

  const cleared = await call(platform.url, 'DELETE', '/api/v1/endpoints/e/autoscale');
  assert.equal((cleared.body as { mode: string }).mode, 'fixed');
  const endpoint = await call(platform.url, 'GET', '/api/v1/endpoints/e');
  assert.equal((endpoint.body as { replicas: number }).replicas, 1);
  assert.equal((endpoint.body as { config: { autoscale?: unknown } }).config.autoscale, undefined);
});

void test('kiln autoscale set/show/events/clear and kiln deploy --min-replicas, end to end', async () => {
  const platform = await testPlatform();
  await registerFixture(platform.url, 'm', 'onnx', 'mlp.onnx');
  const cli = new Cli(platform.url, platform.home);
  const deployed = await cli.json<{ config: { autoscale?: { minReplicas: number } } }>([
    'deploy',
    'm:1',
    '--endpoint',
    'e',
    '--replicas',
    '0',
    '--min-replicas',
    '0',
    '--max-replicas',
    '3',
    '--scale-signal',
    'concurrency',
    '--scale-target',
    '2',
  ]);
  assert.equal(deployed.config.autoscale?.minReplicas, 0);
  const refused = await cli.fails(
    ['deploy', 'm:1', '--endpoint', 'e', '--min-replicas', '4', '--max-replicas', '2'],
    1,
  );
  assert.match(refused, /minReplicas \(4\) > maxReplicas \(2\) \(KILN_AUTOSCALE_INVALID\)/);

  const set = await cli.ok([
    'autoscale',
    'set',
    'e',
    '--min',
    '0',
    '--max',
    '4',
    '--target',
    '1.5',
    '--stable-window',
    '30s',
    '--panic-window',
    '3s',
    '--idle',
    '2m',
    '--cold-start-budget',
    '800ms',
  ]);
  assert.match(
    set,
    /^policy: +0\.\.4 replicas, concurrency target 1\.5, stable 30s, panic 3s at 2×/m,
  );
  assert.match(set, /to zero after 2m idle \(hold 100, cold-start budget 800ms\)/);
  assert.match(set, /^replicas: +0 wanted, 0 ready, 0 starting$/m);
  const shown = await cli.ok(['autoscale', 'show', 'e']);
  assert.match(shown, /^endpoint: +e$/m);
  assert.match(shown, /^latency: +no answers since /m);
  const events = await cli.ok(['autoscale', 'events', 'e']);
  assert.match(events, /^AT +KIND +FROM +TO +MODE +REASON$/m);
  assert.match(events, /manual +0 +0 +manual +autoscaling policy set/);
  await cli.fails(['autoscale', 'set', 'e', '--min', '1'], 2);
  await cli.fails(['autoscale', 'set', 'e', '--min', '1', '--max', '2', '--idle', 'soon'], 2);
  const bad = await cli.fails(
    ['autoscale', 'set', 'e', '--min', '1', '--max', '2', '--signal', 'vibes'],
    1,
  );
  assert.match(bad, /unknown signal 'vibes'.*KILN_AUTOSCALE_INVALID/);
  assert.equal(await cli.ok(['autoscale', 'clear', 'e']), 'e: autoscaling off, 1 replica\n');
});

void test('flags become the policy body; a deploy merges them into the current policy', () => {
  assert.equal(durationMsOption('500ms'), 500);
  assert.equal(durationMsOption('6s'), 6000);
  assert.equal(durationMsOption('5m'), 300_000);
  assert.throws(() => durationMsOption('5 minutes'));
  assert.deepEqual(
    autoscaleBody({ min: 0, max: 4, signal: 'qps', target: 50, idle: 60_000, predictive: true }),
    {
      minReplicas: 0,
      maxReplicas: 4,
      signal: 'qps',
      target: 50,
      scaleToZero: { idleMs: 60_000 },
      predictive: true,
    },
  );
  assert.deepEqual(autoscaleBody({ min: 1, max: 2, startup: 90_000 }), {
    minReplicas: 1,
    maxReplicas: 2,
    predictive: { startupMs: 90_000 },
  });
  // Raising the minimum drops scale-to-zero; another signal drops the old target.
  assert.deepEqual(
    mergeAutoscale(
      { minReplicas: 0, maxReplicas: 3, signal: 'cpu', target: 0.7, scaleToZero: { idleMs: 1 } },
      { minReplicas: 1, signal: 'qps' },
    ),
    { minReplicas: 1, maxReplicas: 3, signal: 'qps' },
  );
  // The latency objective: --slo and --slo-objective; a deploy that leaves signal slo drops it.
  assert.deepEqual(autoscaleBody({ min: 1, max: 8, signal: 'slo', slo: 200, sloObjective: 0.99 }), {
    minReplicas: 1,
    maxReplicas: 8,
    signal: 'slo',
    slo: { latencyMs: 200, objective: 0.99 },
  });
  assert.deepEqual(
    mergeAutoscale(
      { minReplicas: 1, maxReplicas: 3, signal: 'slo', slo: { latencyMs: 200 } },
      { signal: 'concurrency' },
    ),
    { minReplicas: 1, maxReplicas: 3, signal: 'concurrency' },
  );
  assert.deepEqual(
    mergeAutoscale(
      { minReplicas: 1, maxReplicas: 3, signal: 'slo', slo: { latencyMs: 200, objective: 0.99 } },
      { slo: { latencyMs: 150 } },
    ),
    { minReplicas: 1, maxReplicas: 3, signal: 'slo', slo: { latencyMs: 150, objective: 0.99 } },
  );
});

void test('show: a change after the last decision (a new policy) gives the reason, not the old decision', () => {
  const decision = {
    at: '2026-12-01T10:00:00.000Z',
    replicas: 0,
    reactive: 0,
    predictive: 0,
    mode: 'stable' as const,
    reason: 'no requests for 300 s (idle after 300 s) → 0',
  };
  const event = (at: string, reason: string) =>
    ({ id: 1, endpoint: 'e', at, kind: 'manual', from: 0, to: 1, mode: 'manual', reason }) as const;
  const status = {
    endpoint: 'e',
    autoscale: null,
    replicas: 1,
    readyReplicas: 0,
    startingReplicas: 1,
    mode: 'stable' as const,
    reason: 'autoscaling policy set (1..3 on concurrency)',
    lastDemandAt: null,
    lastDecision: decision,
    signals: null,
    startup: { measuredP90Ms: null, samples: 0, usedMs: 30_000 },
    events: [event('2026-12-01T10:00:05.000Z', 'autoscaling policy set')],
    latencyMs: { since: decision.at, count: 0, p50: null, p90: null, p95: null, p99: null },
  } as unknown as Parameters<typeof scaleStatusText>[0];
  assert.match(
    scaleStatusText(status),
    /^reason:\s+autoscaling policy set \(1\.\.3 on concurrency\)$/m,
  );
  const decidedSince = { ...status, events: [event('2026-12-01T09:00:00.000Z', 'deploy')] };
  assert.match(scaleStatusText(decidedSince), /^reason:\s+no requests for 300 s/m);
});
