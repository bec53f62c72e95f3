// Drift and skew end to end (issue 15): a real gateway and a real worker serving the XGBoost
// binary-logistic fixture, its reference profile computed from the model's training sample
// (fixtures/profiles/, B's fixture) and stored with the version. Requests resample the
// training rows (bootstrap, seeded) under two slices: `fr` (slice value in the body, at the
// configured slicePath) as drawn, `de` (the `kiln-slice` header) with f3 moved by two standard
// deviations. The workers' sketches, collected by the control plane, must flag f3 overall and
// in slice de, and nothing in slice fr (a fresh resample of the reference); `kiln drift report`
// shows it, and kiln_feature_psi carries it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { Cli } from '../cli/cli-harness.ts';
import { call, readArtifact, register, testPlatform } from '../helpers/platform.ts';
import { waitForGatewayReady } from '../helpers/traffic-api.ts';
import { createRandom } from '../../src/core/random.ts';
import { computeProfile } from '../../src/observability/profile/compute-profile.ts';
import { parseSampleFile } from '../../src/observability/profile/parse-sample-file.ts';
import type { DriftReportBodyView } from '../../src/control/observability/drift/drift-view.ts';

const fixtures = new URL('../../fixtures/', import.meta.url).pathname;
const platform = await testPlatform({ gateway: true });
const cli = new Cli(platform.url, platform.home);
const features = ['f0', 'f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7'];

const sample = parseSampleFile(
  await readFile(`${fixtures}profiles/xgb-binary-logistic.train.csv`, 'utf8'),
  'csv',
);
assert.ok(sample.ok);
const rows = sample.value.map((row) =>
  features.map((name) => {
    const value = row[name];
    // CSV cells are text; an empty one is a missing value.
    return value === '' || value === null || value === undefined ? Number.NaN : Number(value);
  }),
);

/** One request of `n` bootstrap rows (f3 + shift), as JSON text (NaN for missing, as Python). */
function body(random: () => number, n: number, shift: number, country: string | null): string {
  const data: string[] = [];
  for (let r = 0; r < n; r++) {
    const row = rows[Math.floor(random() * rows.length)]!;
    row.forEach((value, j) =>
      data.push(String(j === 3 && !Number.isNaN(value) ? value + shift : value)),
    );
  }
  const parameters = country === null ? '' : `, "parameters": {"country": "${country}"}`;
  return `{"inputs": [{"name": "input", "datatype": "FP32", "shape": [${n}, 8], "data": [${data.join(',')}]}]${parameters}}`;
}

test('drift flags a shifted feature overall and in its slice only, not a resample', async () => {
  const files = await readArtifact(`${fixtures}trees/xgb-binary-logistic.json`);
  const registered = await register(platform.url, 'fraud', 'xgboost', files);
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
  const reference = computeProfile(sample.value, {
    outputs: ['output'],
    createdAt: new Date().toISOString(),
  });
  assert.ok(reference.ok);
  const stored = await call(
    platform.url,
    'PUT',
    '/api/v1/models/fraud/versions/1/profile',
    reference.value,
  );
  assert.equal(stored.status, 200, JSON.stringify(stored.body));

  // An endpoint without drift settings: the report says how to turn them on.
  const plain = await call(platform.url, 'PUT', '/api/v1/endpoints/plain', {
    model: 'fraud',
    version: 1,
    replicas: 1,
  });
  assert.ok([200, 201].includes(plain.status), JSON.stringify(plain.body));
  const refused = await call(platform.url, 'GET', '/api/v1/endpoints/plain/drift');
  assert.equal(refused.status, 409);
  assert.match(JSON.stringify(refused.body), /KILN_DRIFT_NOT_CONFIGURED.*observability.drift/);

  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/fraud', {
    model: 'fraud',
    version: 1,
    replicas: 1,
    config: {
      observability: {
        drift: { sliceKey: 'country', slicePath: '$.parameters.country', windowMs: 3_600_000 },
      },
    },
  });
  assert.ok([200, 201].includes(deployed.status), JSON.stringify(deployed.body));
  await waitForGatewayReady(platform.gatewayUrl, 'fraud');

  const random = createRandom(2026).next;
  const requests = 60;
  const perRequest = 10;
  for (let i = 0; i < requests; i++) {
    for (const [country, shift] of [
      ['fr', 0],
      ['de', 2],
    ] as const) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      // fr names its slice in the body (slicePath), de in the header.
      if (country === 'de') headers['kiln-slice'] = 'de';
      const response = await fetch(`${platform.gatewayUrl}/v2/models/fraud/infer`, {
        method: 'POST',
        headers,
        body: body(random, perRequest, shift, country === 'fr' ? 'fr' : null),
      });
      const answer = await response.text();
      assert.equal(response.status, 200, answer);
    }
  }

  // Every row sent is in the stored windows once the collector has polled the worker.
  const drift = platform.observability.drift!;
  const expectedRows = 2 * requests * perRequest;
  let report: DriftReportBodyView | null = null;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    await drift.collectOnce();
    const response = await call(platform.url, 'GET', '/api/v1/endpoints/fraud/drift?slice=country');
    assert.equal(response.status, 200, JSON.stringify(response.body));
    report = response.body as DriftReportBodyView;
    if ((report.versions[0]?.groups[0]?.rows ?? 0) >= expectedRows) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.ok(report !== null);
  const version = report.versions[0]!;
  assert.equal(version.hasReference, true);
  const group = (slice: string | null) => {
    const found = version.groups.find((g) => g.slice === slice);
    assert.ok(found !== undefined, `no group ${String(slice)}`);
    return found;
  };
  assert.equal(group(null).rows, expectedRows);
  assert.equal(group('fr').rows, expectedRows / 2);
  assert.equal(group('de').rows, expectedRows / 2);
  const flaggedFeatures = (slice: string | null): string[] =>
    group(slice)
      .items.filter((item) => item.kind === 'feature' && item.flagged)
      .map((item) => item.name);
  assert.deepEqual(flaggedFeatures(null), ['f3']);
  assert.deepEqual(flaggedFeatures('de'), ['f3']);
  assert.deepEqual(
    group('fr')
      .items.filter((item) => item.flagged)
      .map((i) => i.name),
    [],
  );
  // Every feature and the model's output were compared with the reference.
  assert.deepEqual(
    group('fr').items.map((item) => `${item.kind}:${item.name}`),
    [...features.map((f) => `feature:${f}`), 'output:output'],
  );
  for (const item of group('fr').items) {
    assert.ok(item.vsReference !== null && item.vsReference.psi! < 0.1, `fr ${item.name} PSI`);
  }
  const f3 = group('de').items.find((item) => item.name === 'f3')!;
  assert.ok(f3.vsReference!.psi! > 0.25, `de f3 PSI ${f3.vsReference!.psi}`);

  // The slice key must be the configured one.
  const unknown = await call(platform.url, 'GET', '/api/v1/endpoints/fraud/drift?slice=region');
  assert.equal(unknown.status, 400);
  assert.match(JSON.stringify(unknown.body), /KILN_DRIFT_SLICE_UNKNOWN.*its slice key is country/);

  // The CLI's table, and the gauge on the control plane's /metrics.
  const text = await cli.ok(['drift', 'report', 'fraud', '--slice', 'country']);
  assert.match(text, /fraud:1\n/);
  assert.match(
    text,
    /slice de: 600 rows in 1 window, 1 flagged|slice de: 600 rows in 1 window, 2 flagged/,
  );
  assert.match(text, /\n\s+f3\s+feature\s+\S+\s+\S+\s+\S+\s+-\s+DRIFT\n/);
  const metrics = await fetch(`${platform.url}/metrics`);
  const exposition = await metrics.text();
  const line = exposition
    .split('\n')
    .find((l) => l.startsWith('kiln_feature_psi{endpoint="fraud",version="1",feature="f3"}'));
  assert.ok(line !== undefined, 'no kiln_feature_psi for f3');
  assert.ok(Number(line.split(' ')[1]) > 0.25);
});
