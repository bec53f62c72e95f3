// Cost accounting of real replicas (issue 15 E): a platform on an injected clock runs two
// worker processes of an endpoint that asks for 0.5 core and 0.5 GiB each; the replica time
// the control plane charges between two samples, priced by the default table, is the hand
// computation, and the control plane's /metrics says the same.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, registerFixture, testPlatform } from '../helpers/platform.ts';
import { FakeClock } from '../helpers/temp-dir.ts';
import { defaultPriceTable } from '../../src/observability/cost/price-table.ts';

/** Polls until `check` holds; a generous limit, since worker processes start slowly under load. */
async function eventually(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (!check()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test(
  'two running replicas are charged their requested shape for the time between samples',
  { timeout: 180_000 },
  async () => {
    const clock = new FakeClock(Date.parse('2026-03-02T10:00:00Z'));
    const platform = await testPlatform({ clock });
    await registerFixture(platform.url, 'm', 'onnx', 'mlp.onnx');
    const put = await call(platform.url, 'PUT', '/api/v1/endpoints/e', {
      model: 'm',
      version: 1,
      replicas: 2,
      config: { resources: { cpu: 0.5, memoryGiB: 0.5 } },
    });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const ready = (): number =>
      platform.reconciler.replicaStatus('e').filter((r) => r.state === 'ready').length;
    await eventually(() => ready() === 2, 'two ready replicas');
    const cost = platform.observability.cost!;
    await cost.sampleOnce();
    clock.advance(120_000);
    await cost.sampleOnce();
    assert.equal(ready(), 2, 'both still ran');

    // Default prices, this machine's node is on-demand: 0.5 × 0.04 + 0.5 × 0.005 per hour.
    const perHour =
      0.5 * defaultPriceTable.cpu.onDemandUsdPerHour +
      0.5 * defaultPriceTable.memoryGiB.onDemandUsdPerHour;
    const expected = ((2 * 120) / 3600) * perHour;
    const report = await cost.report({
      by: 'endpoint',
      sinceMs: clock.now() - 3_600_000,
      untilMs: clock.now() + 1,
    });
    assert.deepEqual(
      report.rows.map((r) => [r.key, r.team]),
      [['e', 'default']],
    );
    const row = report.rows[0]!;
    assert.ok(Math.abs(row.costUsd - expected) < 1e-12, `${row.costUsd} != ${expected}`);
    assert.ok(Math.abs(row.replicaHours - 240 / 3600) < 1e-12);
    assert.ok(Math.abs(row.cpuHours - 120 / 3600) < 1e-12);
    const metrics = await call(platform.url, 'GET', '/metrics');
    const line = String(metrics.body)
      .split('\n')
      .find((l) => l.startsWith('kiln_cost_usd_total{endpoint="e",team="default"}'));
    assert.ok(line !== undefined, 'kiln_cost_usd_total for e');
    assert.ok(Math.abs(Number(line.split(' ')[1]) - expected) < 1e-12, line);
  },
);
