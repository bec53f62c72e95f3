import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.ts';
import { KilnError } from '../../../src/core/errors.ts';
import { createRandom, type Random } from '../../../src/core/random.ts';
import type { Tensor } from '../../../src/core/tensor.ts';
import { ServingSketches } from '../../../src/worker/drift/serving-sketches.ts';
import { DriftService } from '../../../src/control/observability/drift/drift-service.ts';
import { DriftMetrics } from '../../../src/control/observability/drift/drift-metrics.ts';
import type { DataProfile } from '../../../src/observability/profile/data-profile.ts';
import type { DriftGroup } from '../../../src/observability/drift/drift-report.ts';
import { FakeClock, tempDir } from '../../helpers/temp-dir.ts';
import { placeholderVersion } from '../../helpers/stored-version.ts';

const features = ['f0', 'f1', 'f2'];

/** A standard normal draw (Box–Muller). */
function normal(random: Random): number {
  const u = 1 - random.next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random.next());
}

/** n rows of three N(0, 1) features (f1 shifted by `shift`) and a score output. */
function batch(random: Random, n: number, shift = 0): { inputs: Tensor[]; outputs: Tensor[] } {
  const data = new Float32Array(n * 3);
  const score = new Float32Array(n);
  for (let r = 0; r < n; r++) {
    for (let j = 0; j < 3; j++) data[r * 3 + j] = normal(random) + (j === 1 ? shift : 0);
    score[r] = 1 / (1 + Math.exp(-data[r * 3]!));
  }
  return {
    inputs: [{ name: 'input', datatype: 'FP32', shape: [n, 3], data }],
    outputs: [{ name: 'predict', datatype: 'FP32', shape: [n], data: score }],
  };
}

function sketches(): ServingSketches {
  return new ServingSketches(
    { replicaId: 'r', endpoint: 'fraud', model: 'fraud', version: 1 },
    () => ({ featureNames: features }),
  );
}

/** The reference profile: 2 000 rows of the unshifted population, one request of 1 row each. */
function referenceProfile(): DataProfile {
  const random = createRandom(7);
  const reference = sketches();
  for (let i = 0; i < 2000; i++) {
    const { inputs, outputs } = batch(random, 1);
    reference.record(null, inputs, outputs);
  }
  return reference.take().overall!;
}

async function setUp() {
  const dir = await tempDir();
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:10Z'));
  const store = SqliteStore.open(join(dir, 'kiln.db'), { clock });
  await store.createModel({ name: 'fraud', team: 'default', description: '' });
  await store.createVersion('fraud', placeholderVersion());
  const endpoint = { team: 'default', model: 'fraud', version: 1, ref: '1', replicas: 2 };
  await store.putEndpoint({
    ...endpoint,
    name: 'fraud',
    config: {
      observability: {
        drift: {
          enabled: true,
          sliceKey: 'country',
          slicePath: null,
          windowMs: 60_000,
          sampleRate: 1,
          maxRequestsPerSecond: null,
        },
      },
    },
  });
  await store.putEndpoint({ ...endpoint, name: 'plain', config: {} });
  // Two replicas of `fraud`, each with its own sketches (what its GET would answer).
  const workers = new Map([
    ['http://a', sketches()],
    ['http://b', sketches()],
  ]);
  const registry = new Registry();
  const reference = referenceProfile();
  const service = new DriftService({
    store,
    clock,
    readyReplicas: (name) =>
      name === 'fraud' ? [...workers.keys()].map((url) => ({ id: url, url })) : [],
    reference: (model, version) =>
      Promise.resolve(model === 'fraud' && version === 1 ? reference : null),
    metrics: new DriftMetrics(registry),
    fetchSketches: (url) =>
      Promise.resolve(workers.get(url.replace('/kiln/v1/sketches', ''))!.take()),
  });
  return { store, clock, workers, registry, service };
}

function serve(
  worker: ServingSketches,
  random: Random,
  slice: string,
  requests: number,
  shift = 0,
): void {
  for (let i = 0; i < requests; i++) {
    const { inputs, outputs } = batch(random, 1, shift);
    worker.record(slice, inputs, outputs);
  }
}

function flaggedNames(group: DriftGroup | undefined): string[] {
  assert.ok(group !== undefined);
  return group.items.filter((item) => item.flagged).map((item) => item.name);
}

test('a shift in one feature of one slice is flagged there only; a fresh resample is not', async () => {
  const { store, clock, workers, registry, service } = await setUp();
  try {
    const random = createRandom(11);
    const [a, b] = [workers.get('http://a')!, workers.get('http://b')!];
    // Window 0: both slices drawn from the reference population, across both replicas.
    serve(a, random, 'FR', 300);
    serve(b, random, 'DE', 300);
    await service.collectOnce();
    const first = await service.report('fraud', { slice: 'country' });
    const version = first.versions[0]!;
    assert.equal(version.hasReference, true);
    for (const group of version.groups)
      assert.deepEqual(flaggedNames(group), [], String(group.slice));
    assert.deepEqual(
      version.groups.map((g) => [g.slice, g.rows]),
      [
        [null, 600],
        ['DE', 300],
        ['FR', 300],
      ],
    );

    // Window 1: DE's f1 moves by 1.5 standard deviations; FR is a fresh resample.
    clock.advance(60_000);
    serve(a, random, 'FR', 300);
    serve(b, random, 'DE', 300, 1.5);
    await service.collectOnce();
    const report = await service.report('fraud', { slice: 'country', since: '10m' });
    const groups = report.versions[0]!.groups;
    const de = groups.find((g) => g.slice === 'DE');
    const fr = groups.find((g) => g.slice === 'FR');
    assert.deepEqual(flaggedNames(de), ['f1']);
    assert.deepEqual(flaggedNames(fr), []);
    const f1 = de!.items.find((i) => i.name === 'f1')!;
    assert.equal(f1.vsPrevious?.status, 'drift');
    assert.ok(f1.vsPrevious.psi! > 0.25);
    assert.ok(f1.vsReference!.ksPValue! < 0.01);
    const frF1 = fr!.items.find((i) => i.name === 'f1')!;
    assert.ok(frF1.vsReference!.psi! < 0.1, `FR f1 PSI ${frF1.vsReference!.psi}`);
    assert.ok(frF1.vsPrevious!.psi! < 0.1);
    // Overall only, without slices.
    const overall = await service.report('fraud');
    assert.deepEqual(
      overall.versions[0]!.groups.map((g) => g.slice),
      [null],
    );

    // The gauges: PSI against the reference for each feature and output of the version.
    const text = await registry.metrics();
    const psiOf = (feature: string): number => {
      const line = text
        .split('\n')
        .find((l) =>
          l.startsWith(`kiln_feature_psi{endpoint="fraud",version="1",feature="${feature}"}`),
        );
      assert.ok(line !== undefined, `no gauge for ${feature}`);
      return Number(line.split(' ')[1]);
    };
    assert.ok(psiOf('f1') > psiOf('f0'));
    assert.match(text, /kiln_output_psi\{endpoint="fraud",version="1",output="predict"\} /);
    assert.match(text, /kiln_drift_flagged\{endpoint="fraud",version="1"\} [1-9]/);
    assert.equal(service.latestDrift('fraud').length, 1);
  } finally {
    await service.close();
    await store.close();
  }
});

test('drift reports refuse what they cannot answer, each with its reason', async () => {
  const { store, service } = await setUp();
  const refused = async (promise: Promise<unknown>, code: string, pattern: RegExp) => {
    await assert.rejects(promise, (error: unknown) => {
      assert.ok(error instanceof KilnError);
      assert.equal(error.code, code);
      assert.match(error.message, pattern);
      return true;
    });
  };
  try {
    await refused(service.report('nope'), 'KILN_ENDPOINT_NOT_FOUND', /nope/);
    await refused(
      service.report('plain'),
      'KILN_DRIFT_NOT_CONFIGURED',
      /plain collects no drift sketches: turn them on with observability.drift/,
    );
    await refused(
      service.report('fraud', { slice: 'region' }),
      'KILN_DRIFT_SLICE_UNKNOWN',
      /no drift slice key region: its slice key is country/,
    );
    await refused(
      service.report('fraud', { since: 'yesterday' }),
      'KILN_DRIFT_QUERY_INVALID',
      /since must be a duration/,
    );
    // Nothing collected yet: an empty report, not an error.
    assert.deepEqual((await service.report('fraud')).versions, []);
  } finally {
    await service.close();
    await store.close();
  }
});
