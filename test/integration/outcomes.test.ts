// Outcomes and the prediction log end to end (issue 15, D): a real platform, gateway and
// worker serving the XGBoost binary:logistic fixture (fixtures/trees/, made by
// make_xgboost_fixtures.py). Each fixture row is one request; outcomes are then reported for
// every answer's request id, and the quality report must equal accuracy, AUC and log-loss
// computed here by hand from the training library's reference predictions. The prediction
// log on the same endpoint drops feature f3: its column never reaches the files.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { call, readArtifact, register, testPlatform } from '../helpers/platform.ts';
import { waitForGatewayReady } from '../helpers/traffic-api.ts';
import { until } from '../helpers/until.ts';
import type { QualityReport } from '../../src/control/observability/quality-service.ts';

const fixtures = new URL('../../fixtures/trees/', import.meta.url).pathname;
const expected = JSON.parse(
  readFileSync(join(fixtures, 'xgb-binary-logistic.expected.json'), 'utf8'),
) as {
  rows: (number | null)[][];
  predictions: number[];
  featureNames: string[];
};

test('outcomes joined to a real endpoint’s answers give the accuracy, AUC and log-loss computed by hand', async () => {
  const platform = await testPlatform({ gateway: true });
  const registered = await register(
    platform.url,
    'risk',
    'xgboost',
    await readArtifact(join(fixtures, 'xgb-binary-logistic.json'), 'model.json'),
  );
  assert.equal(registered.status, 201, JSON.stringify(registered.body));
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/risk', {
    model: 'risk',
    version: 1,
    replicas: 1,
    config: {
      observability: {
        quality: { task: 'classification', threshold: 0.5, sliceKey: 'country' },
        predictionLog: { redact: [{ field: 'f3', action: 'drop' }] },
      },
    },
  });
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  await waitForGatewayReady(platform.gatewayUrl, 'risk');
  const metadata = (await (await fetch(`${platform.gatewayUrl}/v2/models/risk`)).json()) as {
    inputs: { name: string }[];
  };
  const input = metadata.inputs[0]!.name;

  // Outcomes: a fixed pattern, so both classes occur and the model is right on some only.
  const labels = expected.rows.map((_, i) => (i % 3 === 0 || i % 7 === 0 ? 1 : 0));
  const ids: string[] = [];
  for (const [i, row] of expected.rows.entries()) {
    const reply = await fetch(`${platform.gatewayUrl}/v2/models/risk/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'kiln-slice': i % 2 === 0 ? 'de' : 'fr' },
      body: JSON.stringify({
        inputs: [{ name: input, datatype: 'FP32', shape: [1, row.length], data: row }],
      }),
    });
    const text = await reply.text();
    assert.equal(reply.status, 200, text);
    const answer = JSON.parse(text) as { outputs: { data: number[] }[] };
    assert.ok(Math.abs(answer.outputs[0]!.data[0]! - expected.predictions[i]!) < 1e-6);
    ids.push(reply.headers.get('x-request-id')!);
  }
  // The gateway reports predictions once a second: wait until all 50 reached the control plane.
  await until(async () => {
    const text = await (await fetch(`${platform.url}/metrics`)).text();
    return /kiln_quality_predictions_total\{endpoint="risk"\} 50\b/.test(text);
  }, 'the 50 predictions at the control plane');

  const joined = await call(platform.url, 'POST', '/api/v1/endpoints/risk/outcomes', {
    outcomes: [
      ...ids.map((requestId, i) => ({ requestId, value: labels[i] })),
      { requestId: 'never-served', value: 1 },
    ],
  });
  assert.equal(joined.status, 200, JSON.stringify(joined.body));
  assert.deepEqual((joined.body as { counts: unknown }).counts, {
    joined: 50,
    unknown: 1,
    expired: 0,
    duplicate: 0,
  });

  // By hand, from the reference predictions.
  const p = expected.predictions;
  let correct = 0;
  let loss = 0;
  let wins = 0;
  let pairs = 0;
  for (let i = 0; i < p.length; i++) {
    if ((p[i]! >= 0.5 ? 1 : 0) === labels[i]) correct += 1;
    loss -= labels[i] === 1 ? Math.log(p[i]!) : Math.log(1 - p[i]!);
    if (labels[i] !== 1) continue;
    for (let j = 0; j < p.length; j++) {
      if (labels[j] !== 0) continue;
      pairs += 1;
      wins += p[i]! > p[j]! ? 1 : p[i] === p[j] ? 0.5 : 0;
    }
  }
  const report = await call(platform.url, 'GET', '/api/v1/endpoints/risk/quality?slice=country');
  assert.equal(report.status, 200, JSON.stringify(report.body));
  const q = report.body as QualityReport;
  assert.ok(q.overall.task === 'classification');
  assert.equal(q.overall.count, 50);
  assert.equal(q.overall.accuracy, correct / 50);
  assert.ok(
    Math.abs(q.overall.auc! - wins / pairs) < 1e-9,
    `auc ${q.overall.auc} vs ${wins / pairs}`,
  );
  assert.ok(Math.abs(q.overall.logLoss! - loss / 50) < 1e-5);
  assert.deepEqual(
    q.versions.map((v) => [v.model, v.version, v.count]),
    [['risk', 1, 50]],
  );
  let deCorrect = 0;
  for (let i = 0; i < p.length; i += 2) if ((p[i]! >= 0.5 ? 1 : 0) === labels[i]) deCorrect += 1;
  const de = q.slices?.find((s) => s.slice === 'de');
  assert.ok(de !== undefined && de.overall.task === 'classification');
  assert.equal(de.overall.count, 25);
  assert.equal(de.overall.accuracy, deCorrect / 25);

  // The prediction log: every request, the dropped feature's column null in each record.
  const dir = join(platform.home, 'prediction-log', 'risk');
  const records = async (): Promise<Record<string, unknown>[]> => {
    const names = await readdir(dir).catch(() => [] as string[]);
    const out: Record<string, unknown>[] = [];
    for (const name of names.sort()) {
      for (const line of (await readFile(join(dir, name), 'utf8')).split('\n')) {
        if (line !== '') out.push(JSON.parse(line) as Record<string, unknown>);
      }
    }
    return out;
  };
  await until(async () => (await records()).length === 50, 'fifty prediction-log records');
  const logged = await records();
  assert.deepEqual(
    logged.map((r) => r.requestId),
    ids,
  );
  const f3 = expected.featureNames.indexOf('f3');
  for (const [i, record] of logged.entries()) {
    const data = (record.inputs as { data: unknown[] }[])[0]!.data;
    assert.equal(data[f3], null, `record ${i}: f3 dropped`);
    const other = expected.rows[i]![0];
    assert.equal(data[0], other === null ? null : data[0]);
    assert.equal(record.slice, i % 2 === 0 ? 'de' : 'fr');
  }
});
