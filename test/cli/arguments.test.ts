import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InvalidArgumentError } from 'commander';
import {
  applyMeta,
  buildMetadata,
  collectKeyValue,
  collectMeta,
  collectMetric,
  formatRef,
  integerOption,
  parseKeyValue,
  parseNumber,
  parseVersionRef,
  refSegment,
  toRecord,
} from '../../src/cli/arguments.ts';
import { CliError } from '../../src/cli/errors.ts';
import type { VersionMetadata } from '../../src/cli/api-types.ts';

void test('k=v splits at the first = and keeps the rest of the value', () => {
  assert.deepEqual(parseKeyValue('a=b'), { key: 'a', value: 'b' });
  assert.deepEqual(parseKeyValue('url=http://x/?q=1'), { key: 'url', value: 'http://x/?q=1' });
  assert.deepEqual(parseKeyValue('empty='), { key: 'empty', value: '' });
  assert.throws(() => parseKeyValue('novalue'), InvalidArgumentError);
  assert.throws(() => parseKeyValue('=v'), InvalidArgumentError);
});

void test('repeated options accumulate in order', () => {
  const pairs = collectKeyValue('b=2', collectKeyValue('a=1'));
  assert.deepEqual(pairs, [
    { key: 'a', value: '1' },
    { key: 'b', value: '2' },
  ]);
  assert.deepEqual(toRecord(pairs), { a: '1', b: '2' });
  assert.equal(toRecord([]), undefined);
});

void test('--meta routes keys into the metadata fields', () => {
  const metadata: VersionMetadata = {};
  for (const text of [
    'trainingJobId=job-7',
    'datasetVersion=2024-05',
    'metric.auc=0.93',
    'metric.loss=-1e-3',
    'dep.xgboost=2.1.0',
    'hardware.gpus=1',
    'hardware.accelerator=h100',
    'owner=ml-team',
    'metric=bare',
  ]) {
    applyMeta(metadata, parseKeyValue(text));
  }
  assert.deepEqual(metadata, {
    trainingJobId: 'job-7',
    datasetVersion: '2024-05',
    metrics: { auc: 0.93, loss: -0.001 },
    dependencies: { xgboost: '2.1.0' },
    hardware: { gpus: 1, accelerator: 'h100' },
    extra: { owner: 'ml-team', metric: 'bare' },
  });
});

void test('a non-numeric metric is a usage error, from --meta and from --metric', () => {
  assert.throws(() => collectMeta('metric.auc=high'), InvalidArgumentError);
  assert.throws(() => collectMetric('auc=high'), InvalidArgumentError);
  assert.throws(() => collectMetric('auc='), InvalidArgumentError);
  assert.deepEqual(collectMetric('auc=0.5'), [{ key: 'auc', value: '0.5' }]);
});

void test('buildMetadata merges --meta, --metric, --dependency and --training-job', () => {
  assert.equal(buildMetadata({}), undefined);
  assert.deepEqual(
    buildMetadata({
      meta: [{ key: 'metric.auc', value: '0.9' }],
      metric: [{ key: 'f1', value: '0.8' }],
      dependency: [{ key: 'onnxruntime', value: '1.20' }],
      trainingJob: 'job-1',
    }),
    {
      metrics: { auc: 0.9, f1: 0.8 },
      dependencies: { onnxruntime: '1.20' },
      trainingJobId: 'job-1',
    },
  );
});

void test('numbers are plain decimals only', () => {
  assert.equal(parseNumber('42'), 42);
  assert.equal(parseNumber(' 0.5 '), 0.5);
  assert.equal(parseNumber('.5'), 0.5);
  assert.equal(parseNumber('1e3'), 1000);
  for (const text of ['', 'abc', '0x10', 'Infinity', 'NaN', '1,5', '1e999']) {
    assert.equal(parseNumber(text), undefined, text);
  }
});

void test('version references: name, name:N, name@alias', () => {
  assert.deepEqual(parseVersionRef('iris'), { kind: 'latest', model: 'iris' });
  assert.deepEqual(parseVersionRef('iris:3'), { kind: 'version', model: 'iris', version: 3 });
  assert.deepEqual(parseVersionRef('iris@champion'), {
    kind: 'alias',
    model: 'iris',
    alias: 'champion',
  });
  assert.deepEqual(parseVersionRef('my.model-2@v2'), {
    kind: 'alias',
    model: 'my.model-2',
    alias: 'v2',
  });
  for (const bad of [
    '',
    'iris:',
    'iris:x',
    'iris:0',
    'iris:-1',
    'iris:1.5',
    ':3',
    '@a',
    'iris@',
    'a:1@b',
  ]) {
    assert.throws(
      () => parseVersionRef(bad),
      (error: unknown) =>
        error instanceof CliError && error.exitCode === 2 && error.code === 'KILN_USAGE',
      bad,
    );
  }
  assert.equal(refSegment(parseVersionRef('iris')), undefined);
  assert.equal(refSegment(parseVersionRef('iris:3')), '3');
  assert.equal(refSegment(parseVersionRef('iris@champion')), 'champion');
  assert.equal(formatRef(parseVersionRef('iris@champion')), 'iris@champion');
  assert.equal(formatRef(parseVersionRef('iris:12')), 'iris:12');
});

void test('integer options reject fractions, negatives and words', () => {
  const parse = integerOption(1);
  assert.equal(parse('10'), 10);
  for (const bad of ['0', '-1', '1.5', 'ten', ''])
    assert.throws(() => parse(bad), InvalidArgumentError, bad);
  assert.equal(integerOption(0)('0'), 0);
});
