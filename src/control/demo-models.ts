// Demo models for `kiln up --dev` (what `npm start` runs): real, small models from
// fixtures/, registered through the same checks as any upload, so a new user has something
// to list, show, verify and call (v2 for the two classifiers, the OpenAI API for the LLM). Registered only into an empty registry, and deployed
// once: a marker file in the home says the demo is set up but not yet served, so a first
// start that fails half-way (a port in use, Ctrl-C) finishes the job on the next start.

import { createReadStream, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { Registry, RegisterVersionRequest } from '../registry/registry.ts';
import { servableFormats } from '../runtimes/load-runtime.ts';
import type { EndpointService } from './endpoints.ts';
import type { EndpointConfigInput } from './serving-defaults.ts';
import type { ManifestFile, ModelFormat } from '../registry/types.ts';

type RegisterVersionRequestExtras = Omit<RegisterVersionRequest, 'format' | 'files'>;

interface DemoModel {
  readonly name: string;
  readonly team: string;
  readonly description: string;
  readonly format: ModelFormat;
  /** Under fixtures/registry/: a file, or a folder registered whole but for `exclude`. */
  readonly path: string;
  readonly exclude?: readonly string[];
  readonly extras: RegisterVersionRequestExtras;
  /** Its endpoint's serving config. */
  readonly config?: EndpointConfigInput;
}

const fixtures = fileURLToPath(new URL('../../fixtures/registry/', import.meta.url));

/**
 * What the demo models measure on held-out data, by the libraries that trained them
 * (fixtures/registry/measure_demo_metrics.py writes it): registered as the versions'
 * metrics, with how they were measured, so the registry never shows a number typed by hand.
 */
export interface DemoMeasurement {
  readonly metrics: Readonly<Record<string, number>>;
  readonly evaluation: string;
}

export function demoMeasurements(): Readonly<Record<string, DemoMeasurement>> {
  return JSON.parse(readFileSync(join(fixtures, 'demo-metrics.json'), 'utf8')) as Record<
    string,
    DemoMeasurement
  >;
}

function measured(name: string): RegisterVersionRequestExtras['metadata'] {
  const measurement = demoMeasurements()[name];
  if (measurement === undefined) throw new Error(`demo-metrics.json has no entry for ${name}`);
  return { metrics: measurement.metrics, extra: { evaluation: measurement.evaluation } };
}

const demoModels: readonly DemoModel[] = [
  {
    name: 'fraud-xgb',
    team: 'risk',
    description:
      'Fraud-style binary classifier on synthetic data (XGBoost, 5 features: age, income, score, tenure, visits; NaN-aware)',
    format: 'xgboost',
    path: 'xgb-binary.json',
    extras: {
      metadata: {
        trainingJobId: 'demo-train-1',
        ...measured('fraud-xgb'),
        dependencies: { xgboost: '1.7' },
      },
      lineage: {
        run: 'demo-run-1',
        datasetUri: 'file://fixtures/registry/make_fixtures.py',
        datasetVersion: 'synthetic-v1',
        experiment: 'demo',
      },
      tags: { demo: 'true' },
    },
  },
  {
    name: 'digits-cnn',
    team: 'vision',
    description:
      'Digit image classifier: a small PyTorch CNN exported to ONNX (1x28x28 in, 10 classes out)',
    format: 'onnx',
    path: '../onnx/cnn-digits.onnx',
    extras: { metadata: { ...measured('digits-cnn') }, tags: { demo: 'true' } },
  },
  {
    // The engine's own test model (fixtures/llm/make_llm_fixtures.py), with its tokenizer and
    // chat template: it answers chat completions with licence-flavoured prose.
    name: 'tiny-llm',
    team: 'llm',
    description:
      'A tiny Llama (1 M parameters, 4 layers, 1024-token byte-level BPE, Llama 3 chat template) trained a few minutes on free-software licence texts',
    format: 'hf-llm',
    path: '../llm/tiny-llama',
    exclude: ['reference.json'], // PyTorch's expected outputs, for the tests
    extras: {
      lineage: { datasetUri: 'file://fixtures/llm/make_llm_fixtures.py', experiment: 'demo' },
      tags: { demo: 'true' },
    },
    // 4 MiB of KV cache: 256 blocks of 16 positions (16 KiB each for this model), room for
    // eight full 512-token contexts, set up in a blink.
    config: { llm: { kvCacheBytes: 4 * 2 ** 20 } },
  },
];

async function listFiles(path: string): Promise<{ path: string; full: string }[]> {
  const info = await stat(path);
  if (info.isFile()) return [{ path: path.split(sep).at(-1) ?? path, full: path }];
  const out: { path: string; full: string }[] = [];
  for (const entry of await readdir(path, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const full = join(entry.parentPath, entry.name);
    out.push({ path: relative(path, full).split(sep).join('/'), full });
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** The file saying the demo models are registered but their endpoints not yet deployed. */
export function demoPendingMarker(home: string): string {
  return join(home, 'demo-pending');
}

/**
 * Registers the demo models into an empty registry (or finishes a registration an earlier
 * start left half done); returns the names of the demo models to deploy, [] when there is
 * nothing pending.
 */
export async function registerDemoModels(registry: Registry, home: string): Promise<string[]> {
  const marker = demoPendingMarker(home);
  const pending = await stat(marker).then(
    () => true,
    () => false,
  );
  const existing = await registry.store.listModels({ limit: 1 });
  if (existing.items.length > 0 && !pending) return [];
  await writeFile(marker, 'demo models registered, endpoints not deployed yet\n');
  const names: string[] = [];
  for (const demo of demoModels) {
    names.push(demo.name);
    if ((await registry.store.getModel(demo.name)) !== null) continue;
    const files: ManifestFile[] = [];
    for (const file of await listFiles(join(fixtures, demo.path))) {
      if (demo.exclude?.includes(file.path) === true) continue;
      const { sha256, size } = await registry.artifacts.ingest(createReadStream(file.full), null, {
        maxBytes: Number.MAX_SAFE_INTEGER,
      });
      files.push({ path: file.path, size, sha256 });
    }
    await registry.createModel(demo.name, demo.team, demo.description);
    const version = await registry.registerVersion(demo.name, {
      format: demo.format,
      files,
      ...demo.extras,
    });
    await registry.setAlias(demo.name, 'champion', version.version);
  }
  return names;
}

/**
 * Serves the demo models that a worker can run, each under an endpoint of the same name,
 * then removes the pending marker.
 */
export async function deployDemoEndpoints(
  endpoints: EndpointService,
  home: string,
): Promise<string[]> {
  const deployed: string[] = [];
  for (const demo of demoModels) {
    if (!servableFormats.includes(demo.format)) continue;
    await endpoints.deploy(demo.name, {
      model: demo.name,
      alias: 'champion',
      replicas: 1,
      ...(demo.config === undefined ? {} : { config: demo.config }),
    });
    deployed.push(demo.name);
  }
  await rm(demoPendingMarker(home), { force: true });
  return deployed;
}
