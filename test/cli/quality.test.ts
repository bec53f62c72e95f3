// `kiln outcomes send` and `kiln quality report` (issue 15, D): the real CLI against an
// in-process platform, with predictions as a gateway reports them; a deploy turning quality
// and the prediction log on, and one refused for a redaction rule naming nothing.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readOutcomeFile } from '../../src/cli/commands/outcomes.ts';
import type { QualityReport } from '../../src/control/observability/quality-service.ts';
import { call, registerFixture, testPlatform } from '../helpers/platform.ts';
import { Cli } from './cli-harness.ts';

void test('kiln outcomes send and kiln quality report, end to end', async () => {
  const platform = await testPlatform();
  await registerFixture(platform.url, 'm', 'onnx', 'mlp.onnx');
  const deployed = await call(platform.url, 'PUT', '/api/v1/endpoints/heart', {
    model: 'm',
    version: 1,
    replicas: 0,
    config: {
      observability: {
        quality: { task: 'classification', sliceKey: 'country' },
        predictionLog: { sampleRate: 0.5 },
      },
    },
  });
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body));
  const dir = await mkdtemp(join(tmpdir(), 'kiln-outcomes-'));
  try {
    const now = Date.now();
    const rows: [string, number, string, number][] = [
      ['a', 0.9, 'de', 1],
      ['b', 0.3, 'de', 1],
      ['c', 0.7, 'fr', 0],
      ['d', 0.2, 'fr', 0],
    ];
    const ingest = await call(platform.url, 'POST', '/api/v1/quality/predictions', {
      gateway: 'test',
      predictions: rows.map(([requestId, prediction, slice]) => ({
        endpoint: 'heart',
        requestId,
        model: 'm',
        version: 1,
        prediction,
        slice,
        atMs: now,
      })),
    });
    assert.equal(ingest.status, 202);
    const csv = join(dir, 'outcomes.csv');
    await writeFile(
      csv,
      ['requestId,value', ...rows.map(([id, , , value]) => `${id},${value}`), 'zzz,1', ''].join(
        '\n',
      ),
    );
    const cli = new Cli(platform.url, platform.home);
    const sent = await cli.ok(['outcomes', 'send', 'heart', csv]);
    assert.match(
      sent,
      /5 outcomes for endpoint heart: 4 joined, 1 unknown request id, 0 expired, 0 duplicate/,
    );
    assert.match(sent, /zzz: unknown/);

    const report = await cli.json<QualityReport>([
      'quality',
      'report',
      'heart',
      '--slice',
      'country',
      '--json',
    ]);
    // threshold 0.5: labels 1,0,1,0 vs 1,1,0,0 → 2/4; AUC: positives 0.9, 0.3 vs negatives
    // 0.7, 0.2 → 0.9 beats both, 0.3 beats 0.2: 3 of 4.
    assert.ok(report.overall.task === 'classification');
    assert.equal(report.overall.accuracy, 0.5);
    assert.equal(report.overall.auc, 0.75);
    assert.deepEqual(
      report.slices?.map((s) => [s.slice, s.overall.count]),
      [
        ['de', 2],
        ['fr', 2],
      ],
    );
    const text = await cli.ok(['quality', 'report', 'heart', '--slice', 'country']);
    assert.match(text, /endpoint heart: classification, threshold 0\.5/);
    assert.match(text, /overall\s+4\s+0\.5000\s+0\.7500/);
    assert.match(text, /country=de\s+2\s+0\.5000/);
    const wrong = await cli.fails(['quality', 'report', 'heart', '--slice', 'region'], 1);
    assert.match(wrong, /unknown slice key region.*country/);

    // JSON lines work the same way (every id now a duplicate).
    const jsonl = join(dir, 'outcomes.jsonl');
    await writeFile(jsonl, '{"requestId": "a", "value": 1}\n{"requestId": "b", "value": true}\n');
    assert.deepEqual(await readOutcomeFile(jsonl), [
      { requestId: 'a', value: 1 },
      { requestId: 'b', value: true },
    ]);
    assert.match(await cli.ok(['outcomes', 'send', 'heart', jsonl]), /0 joined.*2 duplicate/);

    const badCsv = join(dir, 'bad.csv');
    await writeFile(badCsv, 'id,label\nx,1\n');
    assert.match(await cli.fails(['outcomes', 'send', 'heart', badCsv], 1), /requestId/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }

  // mlp.onnx is registered without a declared schema: a rule is not checked at deploy (the
  // gateway counts rules that match nothing); a declared schema refuses it
  // (observability-deploy-check.test.ts). A bad field is refused either way.
  const unchecked = await call(platform.url, 'PUT', '/api/v1/endpoints/other', {
    model: 'm',
    version: 1,
    replicas: 0,
    config: { observability: { predictionLog: { redact: [{ field: 'snn', action: 'drop' }] } } },
  });
  assert.equal(unchecked.status, 201, JSON.stringify(unchecked.body));
  const badField = await call(platform.url, 'PUT', '/api/v1/endpoints/other2', {
    model: 'm',
    version: 1,
    replicas: 0,
    config: { observability: { predictionLog: { maxFiles: 0 } } },
  });
  assert.equal(badField.status, 400);
  assert.match(
    JSON.stringify(badField.body),
    /KILN_OBSERVABILITY_INVALID.*predictionLog: maxFiles/,
  );
});
