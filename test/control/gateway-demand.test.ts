// GatewayDemand (the controller's view of the gateways' reports): sums over gateways, an
// endpoint a gateway's next report leaves out is idle there at once, a gateway that stops
// reporting counts for 2 s more, and minute sums drain into demand rows.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GatewayDemand } from '../../src/control/autoscale/gateway-demand.ts';
import type { LoadReport } from '../../src/protocol/scaling/load-report.ts';
import { HistogramSketch } from '../../src/traffic/histogram-sketch.ts';

function report(
  gateway: string,
  endMs: number,
  loads: Record<
    string,
    { concurrency: number; arrivals: number; held?: number; completed?: number }
  >,
): LoadReport {
  return {
    gateway,
    windowStart: new Date(endMs - 1000).toISOString(),
    windowEnd: new Date(endMs).toISOString(),
    endpoints: Object.entries(loads).map(([endpoint, l]) => ({
      endpoint,
      arrivals: l.arrivals,
      completed: l.completed ?? l.arrivals,
      concurrencyMean: l.concurrency,
      concurrencyMax: Math.ceil(l.concurrency),
      held: l.held ?? 0,
      latencyMs: new HistogramSketch().snapshot(),
    })),
  };
}

test('sums over gateways; left out is idle at once; silent gateways count 2 s more', () => {
  const demand = new GatewayDemand();
  const t0 = Date.parse('2026-01-01T00:00:30Z');
  demand.add(
    report('g1', t0, { a: { concurrency: 2, arrivals: 10 }, b: { concurrency: 1, arrivals: 1 } }),
    t0,
  );
  demand.add(report('g2', t0, { a: { concurrency: 1.5, arrivals: 4, held: 2, completed: 1 } }), t0);
  assert.deepEqual(demand.now('a', t0), {
    concurrency: 3.5,
    qps: 14,
    completed: 11,
    held: 2,
    gateways: 2,
  });
  // g1's next report has no `b`: idle at g1 now, not in 2 s.
  demand.add(report('g1', t0 + 1000, { a: { concurrency: 2, arrivals: 10 } }), t0 + 1000);
  assert.deepEqual(demand.now('b', t0 + 1000), {
    concurrency: 0,
    qps: 0,
    completed: 0,
    held: 0,
    gateways: 0,
  });
  // g2 sends nothing more: its entry counts until 2 s after it came, then not.
  assert.equal(demand.now('a', t0 + 2000).gateways, 2);
  assert.deepEqual(demand.now('a', t0 + 2500), {
    concurrency: 2,
    qps: 10,
    completed: 10,
    held: 0,
    gateways: 1,
  });
  assert.equal(demand.now('a', t0 + 3500).gateways, 0);

  const rows = demand.drain();
  assert.deepEqual(
    rows.map((r) => [r.endpoint, r.minuteStart, r.arrivals, r.concurrencySeconds, r.seconds]),
    [
      ['a', '2026-01-01T00:00:00.000Z', 24, 5.5, 3],
      ['b', '2026-01-01T00:00:00.000Z', 1, 1, 1],
    ],
  );
  assert.deepEqual(demand.drain(), []);
  demand.restore(rows);
  assert.equal(demand.drain().length, 2, 'a failed write is put back');
});
