// `kiln slo rules`: the endpoints' SLOs as Prometheus rules. The YAML is checked by Debian's
// promtool (`check rules`), and `promtool test rules` runs the page alert over a synthetic
// series of the gateway's own counter: quiet before an outage, firing during it, resolved
// after. Without promtool on the machine (it ships in Debian's `prometheus` package) only
// those two promtool assertions are skipped, and the test says so.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GatewayMetrics } from '../../../src/gateway/metrics.ts';
import {
  durationBuckets,
  latencyBucketSeconds,
  prometheusRules,
} from '../../../src/observability/slo/prometheus-rules.ts';
import type { SloConfig } from '../../../src/store/observability-config.ts';

const iris: SloConfig = {
  availability: 0.999,
  latencyMs: 200,
  latencyTarget: 0.99,
  driftPsiCeiling: 0.25,
  webhooks: [],
};
const slow: SloConfig = {
  availability: null,
  latencyMs: 60_000,
  latencyTarget: 0.9,
  driftPsiCeiling: null,
  webhooks: [],
};

function promtool(): string | null {
  const found = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
  return found.error === undefined && found.status === 0 ? 'promtool' : null;
}

test("the rules' copy of the latency buckets is the gateway's", async () => {
  const metrics = new GatewayMetrics();
  metrics.seriesFor('iris', '1').record(200, 0.001);
  const text = await metrics.registry.metrics();
  const bounds = [...text.matchAll(/kiln_gateway_request_duration_seconds_bucket\{le="([^"]+)"/g)]
    .map((m) => m[1])
    .filter((le) => le !== '+Inf')
    .map(Number);
  assert.deepEqual(bounds, durationBuckets);
});

test('a latency objective is checked at the smallest gateway bucket at or above it', () => {
  assert.equal(latencyBucketSeconds(200), 0.25);
  assert.equal(latencyBucketSeconds(250), 0.25);
  assert.equal(latencyBucketSeconds(0.2), 0.0005);
  assert.equal(latencyBucketSeconds(60_000), null);
});

test('rules name every alert per endpoint and objective; promtool accepts them and the page alert fires and resolves', (t) => {
  const yaml = prometheusRules([
    { endpoint: 'slow', slo: slow },
    { endpoint: 'iris', slo: iris },
  ]);
  for (const alert of [
    'KilnAvailabilityBurnRatePage',
    'KilnAvailabilityBurnRateTicket',
    'KilnLatencyBurnRatePage',
    'KilnLatencyBurnRateTicket',
    'KilnDriftPsiAboveCeiling',
  ]) {
    assert.match(yaml, new RegExp(`- alert: ${alert}\\n`));
  }
  assert.match(yaml, /le="0\.25"/);
  assert.match(
    yaml,
    /kiln:slo_availability_errors:ratio_rate6h\{endpoint="iris"\} > \(6 \* 0\.001\)/,
  );
  assert.match(yaml, /latency objective 60000 ms is above the gateway's largest latency bucket/);
  assert.match(prometheusRules([]), /^groups: \[\]$/m);

  const tool = promtool();
  if (tool === null) {
    t.diagnostic('promtool not found (Debian package prometheus): rules not checked by promtool');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'kiln-slo-rules-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'kiln-slo.yml'), yaml);
  const checked = spawnSync(tool, ['check', 'rules', join(dir, 'kiln-slo.yml')], {
    encoding: 'utf8',
  });
  assert.equal(checked.status, 0, checked.stdout + checked.stderr);
  // 4 availability ratios, 4 latency ratios (iris), 4 burn-rate alerts, 1 drift alert.
  assert.match(checked.stdout, /SUCCESS: 13 rules found/);
  // 1000 good answers a minute throughout; 100 5xx a minute in minutes 60..90 (9 % errors,
  // burn 90 over the 0.1 % budget): quiet before, paging during, resolved an hour after.
  writeFileSync(
    join(dir, 'kiln-slo.test.yml'),
    [
      'rule_files: [kiln-slo.yml]',
      'evaluation_interval: 1m',
      'tests:',
      '  - interval: 1m',
      '    input_series:',
      `      - series: 'kiln_gateway_requests_total{endpoint="iris",version="1",code="200"}'`,
      `        values: '0+1000x180'`,
      `      - series: 'kiln_gateway_requests_total{endpoint="iris",version="1",code="500"}'`,
      `        values: '0+0x60 0+100x30 3000+0x90'`,
      '    alert_rule_test:',
      '      - eval_time: 55m',
      '        alertname: KilnAvailabilityBurnRatePage',
      '        exp_alerts: []',
      '      - eval_time: 85m',
      '        alertname: KilnAvailabilityBurnRatePage',
      '        exp_alerts:',
      '          - exp_labels: {severity: page, slo: availability, endpoint: iris}',
      '            exp_annotations:',
      '              summary: "iris: availability error budget burning above 14.4x over 1h and 5m"',
      '              description: "objective 0.999; see docs/slo.md"',
      '      - eval_time: 150m',
      '        alertname: KilnAvailabilityBurnRatePage',
      '        exp_alerts: []',
      '',
    ].join('\n'),
  );
  const run = execFileSync(tool, ['test', 'rules', 'kiln-slo.test.yml'], {
    cwd: dir,
    encoding: 'utf8',
  });
  assert.match(run, /SUCCESS/);
});
