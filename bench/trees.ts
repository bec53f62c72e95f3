// `npm run bench -- trees [--rows N] [--single N] [--repeats N]`: the native tree runtime vs
// XGBoost's own predictor on one thread, same model (fixtures/trees/bench-fraud.ubj: 200
// trees of depth 6 over 25 features), same rows.
//
//   batch       N rows (default 10,000) through ModelRuntime.infer, and through the
//               low-level predictor with each kernel, vs xgboost's predict(DMatrix(x)) (what
//               a user writes) and inplace_predict(x)
//   single row  one row per call through infer vs predict(DMatrix(row)) and
//               inplace_predict(row): p50/p95/p99 latency
//
// XGBoost runs in a subprocess (Debian's /usr/bin/python3) with nthread=1 and
// OMP_NUM_THREADS=1; Node runs the trees on its one JavaScript thread. When the peer is
// missing, our figures still print and both goals report value=NaN met=no.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { Tensor } from '../src/core/tensor.ts';
import type { ModelRuntime } from '../src/runtimes/runtime.ts';
import { loadLightgbmModel } from '../src/runtimes/trees/load-lightgbm-model.ts';
import { loadTreeRuntime } from '../src/runtimes/trees/load-tree-runtime.ts';
import { loadXgboostModel } from '../src/runtimes/trees/load-xgboost-model.ts';
import { TreeModelRuntime } from '../src/runtimes/trees/tree-model-runtime.ts';
import type {
  KernelKind,
  PredictorOptions,
  TreeLoadResult,
  TreePredictor,
} from '../src/runtimes/trees/tree-predictor.ts';
import { goal, percentile, table } from './_report.ts';

const root = new URL('../', import.meta.url).pathname;
const modelDir = join(root, 'fixtures/trees');
const modelFile = 'bench-fraud.ubj';
const python = '/usr/bin/python3';
const numFeatures = 25;

function option(args: readonly string[], name: string, fallback: number): number {
  const at = args.indexOf(`--${name}`);
  const value = at >= 0 ? Number(args[at + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback;
}

/** Standard normal features with 2% NaN, from a seeded generator (same rows every run). */
function makeRows(numRows: number): Float32Array {
  let state = 0x2545f491;
  const uniform = (): number => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return ((state >>> 0) + 0.5) / 4294967296;
  };
  const rows = new Float32Array(numRows * numFeatures);
  for (let i = 0; i < rows.length; i += 1) {
    const gaussian = Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
    rows[i] = uniform() < 0.02 ? Number.NaN : gaussian;
  }
  return rows;
}

interface PeerResult {
  readonly xgboostVersion: string;
  readonly batchDmatrixMs: number[];
  readonly batchInplaceMs: number[];
  readonly singleDmatrixUs: number[];
  readonly singleInplaceUs: number[];
  /** Probabilities for the first rows, to check both sides agree. */
  readonly predictions: number[];
}

const peerScript = String.raw`
import json, sys, time
import numpy as np
import xgboost as xgb
model, rows_path, n, singles, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
x = np.fromfile(rows_path, dtype=np.float32).reshape(n, ${numFeatures})
booster = xgb.Booster(model_file=model)
booster.set_param({"nthread": 1})
def timed(f):
    t = time.perf_counter(); f(); return time.perf_counter() - t
for _ in range(2):
    booster.predict(xgb.DMatrix(x, nthread=1)); booster.inplace_predict(x)
batch_dm = [1e3 * timed(lambda: booster.predict(xgb.DMatrix(x, nthread=1))) for _ in range(repeats)]
batch_ip = [1e3 * timed(lambda: booster.inplace_predict(x)) for _ in range(repeats)]
single_dm, single_ip = [], []
for i in range(singles):
    row = x[i % n : i % n + 1]
    single_dm.append(1e6 * timed(lambda: booster.predict(xgb.DMatrix(row, nthread=1))))
for i in range(singles):
    row = x[i % n : i % n + 1]
    single_ip.append(1e6 * timed(lambda: booster.inplace_predict(row)))
preds = booster.predict(xgb.DMatrix(x[:1000], nthread=1))
print(json.dumps({"xgboostVersion": xgb.__version__, "batchDmatrixMs": batch_dm, "batchInplaceMs": batch_ip,
                  "singleDmatrixUs": single_dm, "singleInplaceUs": single_ip,
                  "predictions": [float(v) for v in preds]}))
`;

async function runPeer(
  rows: Float32Array,
  numRows: number,
  singles: number,
  repeats: number,
): Promise<PeerResult | string> {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-bench-trees-'));
  try {
    const rowsPath = join(dir, 'rows.f32');
    await writeFile(rowsPath, new Uint8Array(rows.buffer, rows.byteOffset, rows.byteLength));
    const args = ['-c', peerScript, join(modelDir, modelFile), rowsPath, String(numRows)];
    const result = spawnSync(python, [...args, String(singles), String(repeats)], {
      encoding: 'utf8',
      env: { ...process.env, OMP_NUM_THREADS: '1' },
      maxBuffer: 64 << 20,
      timeout: 600_000,
    });
    if (result.error !== undefined) return `${python} could not run (${result.error.message})`;
    if (result.status !== 0) {
      return `${python} with xgboost failed: ${result.stderr.trim().split('\n').slice(-1)[0] ?? ''}`;
    }
    return JSON.parse(result.stdout) as PeerResult;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function median(values: readonly number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

async function timeInfer(runtime: ModelRuntime, tensor: Tensor): Promise<number> {
  const start = performance.now();
  const outcome = await runtime.infer({ inputs: [tensor] });
  const elapsed = performance.now() - start;
  if (!outcome.ok) throw new Error(`infer failed: ${outcome.message}`);
  return elapsed;
}

function timePredict(predictor: TreePredictor, rows: Float32Array, numRows: number): number {
  const start = performance.now();
  predictor.predict(rows, numRows);
  return performance.now() - start;
}

export async function run(args: readonly string[]): Promise<void> {
  const numRows = option(args, 'rows', 10_000);
  const singles = option(args, 'single', 2_000);
  const repeats = option(args, 'repeats', 15);
  const rows = makeRows(numRows);

  const loaded = await loadTreeRuntime({
    modelDir,
    format: 'xgboost',
    files: [modelFile],
    schema: null,
    config: {},
  });
  if (!loaded.ok) throw new Error(`could not load ${modelFile}: ${loaded.reason}`);
  const runtime = loaded.runtime;
  await runtime.warmup();
  const batch: Tensor = {
    name: 'input',
    datatype: 'FP32',
    shape: [numRows, numFeatures],
    data: rows,
  };

  // Our batch: infer (the serving path) and the bare predictor with each kernel.
  for (let i = 0; i < 3; i += 1) await timeInfer(runtime, batch);
  const inferMs: number[] = [];
  for (let i = 0; i < repeats; i += 1) inferMs.push(await timeInfer(runtime, batch));
  const bytes = await readFile(join(modelDir, modelFile));
  const kernelMs = new Map<KernelKind, number[]>();
  for (const kernel of ['wasm', 'interpreter', 'compiled'] as const) {
    const model = loadXgboostModel(bytes, { kernel });
    if (!model.ok) throw new Error(model.reason);
    for (let i = 0; i < 3; i += 1) timePredict(model.predictor, rows, numRows);
    const times: number[] = [];
    for (let i = 0; i < repeats; i += 1) times.push(timePredict(model.predictor, rows, numRows));
    kernelMs.set(kernel, times);
  }

  // Our single rows: one [1, 25] tensor per call, as a client sends them.
  const singleUs: number[] = [];
  for (let i = 0; i < singles + 200; i += 1) {
    const r = i % numRows;
    const tensor: Tensor = {
      name: 'input',
      datatype: 'FP32',
      shape: [1, numFeatures],
      data: rows.subarray(r * numFeatures, (r + 1) * numFeatures),
    };
    const ms = await timeInfer(runtime, tensor);
    if (i >= 200) singleUs.push(ms * 1000); // the first 200 warm the path up
  }

  const peer = await runPeer(rows, numRows, singles, repeats);
  const oursBatchMs = median(inferMs);
  const oursRowsPerS = (numRows / oursBatchMs) * 1000;
  const kernelOf =
    runtime instanceof TreeModelRuntime ? (runtime.treePredictor?.kernelKind ?? '?') : '?';
  const p = (values: readonly number[], q: number): number =>
    percentile(
      [...values].sort((a, b) => a - b),
      q,
    );

  console.log(
    `trees: ${modelFile} (200 trees, depth 6, ${numFeatures} features), ${numRows.toLocaleString('en-US')} rows, one thread`,
  );
  const batchRows: (string | number)[][] = [
    [`kiln ModelRuntime.infer (${kernelOf})`, oursRowsPerS, oursBatchMs],
  ];
  for (const [kernel, times] of kernelMs) {
    batchRows.push([
      `kiln predictor, ${kernel} kernel`,
      (numRows / median(times)) * 1000,
      median(times),
    ]);
  }
  const singleRows: (string | number)[][] = [
    ['kiln ModelRuntime.infer', p(singleUs, 50), p(singleUs, 95), p(singleUs, 99)],
  ];
  let batchRatio = Number.NaN;
  let latencyRatio = Number.NaN;
  if (typeof peer === 'string') {
    console.log(`peer missing: ${peer}; our figures only, goals report NaN`);
  } else {
    const dmMs = median(peer.batchDmatrixMs);
    const ipMs = median(peer.batchInplaceMs);
    batchRows.push([
      `xgboost ${peer.xgboostVersion} predict(DMatrix(x))`,
      (numRows / dmMs) * 1000,
      dmMs,
    ]);
    batchRows.push([
      `xgboost ${peer.xgboostVersion} inplace_predict(x)`,
      (numRows / ipMs) * 1000,
      ipMs,
    ]);
    singleRows.push([
      'xgboost predict(DMatrix(row))',
      p(peer.singleDmatrixUs, 50),
      p(peer.singleDmatrixUs, 95),
      p(peer.singleDmatrixUs, 99),
    ]);
    singleRows.push([
      'xgboost inplace_predict(row)',
      p(peer.singleInplaceUs, 50),
      p(peer.singleInplaceUs, 95),
      p(peer.singleInplaceUs, 99),
    ]);
    batchRatio = oursRowsPerS / ((numRows / dmMs) * 1000);
    latencyRatio = p(singleUs, 50) / p(peer.singleDmatrixUs, 50);
    const check = await runtime.infer({
      inputs: [
        {
          ...batch,
          shape: [peer.predictions.length, numFeatures],
          data: rows.subarray(0, peer.predictions.length * numFeatures),
        },
      ],
    });
    if (check.ok) {
      const ours = check.outputs[0]?.data as Float32Array;
      let maxDiff = 0;
      peer.predictions.forEach(
        (v, i) => (maxDiff = Math.max(maxDiff, Math.abs(v - (ours[i] ?? Number.NaN)))),
      );
      console.log(
        `agreement: max |kiln - xgboost| over ${peer.predictions.length} rows = ${maxDiff.toExponential(2)}`,
      );
    }
  }
  console.log('\nbatch (median of %d)', repeats);
  console.log(table(['path', 'rows/s', 'ms/batch'], batchRows));
  console.log(`\nsingle row (${singles.toLocaleString('en-US')} calls)`);
  console.log(table(['path', 'p50 µs', 'p95 µs', 'p99 µs'], singleRows));
  await compareKernels(numRows, repeats);
  console.log('');
  goal('trees', 'batch_rows_per_s_ratio', batchRatio, '>=', 1);
  goal('trees', 'single_row_latency_ratio', latencyRatio, '<=', 0.5);
}

const lightgbmDir = join(root, '../shared/fixtures/lightgbm');

/** Models to compare the two kernels on: this bench's model, and LightGBM's references. */
const kernelModels: readonly {
  name: string;
  load: (options: PredictorOptions) => Promise<TreeLoadResult>;
  rows: () => Promise<number[][]>;
}[] = [
  {
    name: 'xgboost bench-fraud',
    load: async (o) => loadXgboostModel(await readFile(join(modelDir, modelFile)), o),
    rows: () => {
      const x = makeRows(1000);
      return Promise.resolve(
        Array.from({ length: 1000 }, (_, r) => [
          ...x.subarray(r * numFeatures, (r + 1) * numFeatures),
        ]),
      );
    },
  },
  ...(
    [
      ['lightgbm multiclass', 'lgmulticlass.model', 'multiclass_test.tsv', 1],
      ['lightgbm breast cancer', 'lg_breast_cancer.txt', 'lg_breast_cancer_data.txt', 0],
      ['lightgbm kddcup99 (categorical)', 'lg_kddcup99.model', 'kddcup99_test.tsv', 0],
      [
        'lightgbm poisson (categorical)',
        'genlin_fmtp_poisson_Frequency.model',
        'genlin_fmtp_poisson_Frequency_features.tsv',
        0,
      ],
    ] as const
  ).map(([name, model, data, skip]) => ({
    name,
    load: async (o: PredictorOptions) =>
      loadLightgbmModel(await readFile(join(lightgbmDir, model), 'utf8'), o),
    rows: async () =>
      (await readFile(join(lightgbmDir, data), 'utf8'))
        .trim()
        .split('\n')
        .map((line) => line.trim().split(/\s+/).slice(skip).map(Number)),
  })),
];

/**
 * Both kernels on each model, over numRows rows whose columns are drawn independently from
 * the model's test data (real value ranges, but no repeating row order for the branch
 * predictor to learn).
 */
async function compareKernels(numRows: number, repeats: number): Promise<void> {
  const lines: (string | number)[][] = [];
  for (const model of kernelModels) {
    if (model.name.startsWith('lightgbm') && !existsSync(lightgbmDir)) continue;
    const source = await model.rows();
    const width = source[0]?.length ?? 0;
    let state = 12345;
    const pick = (): number => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return Math.floor((state / 2147483648) * source.length);
    };
    const x = new Float64Array(numRows * width);
    for (let i = 0; i < x.length; i += 1) x[i] = source[pick()]?.[i % width] ?? Number.NaN;
    const ms = new Map<string, number>();
    let info: TreePredictor | null = null;
    for (const kernel of ['auto', 'wasm', 'interpreter', 'compiled'] as const) {
      const loaded = await model.load({ kernel });
      if (!loaded.ok) throw new Error(`${model.name}: ${loaded.reason}`);
      const predictor = loaded.predictor;
      const rows = predictor.library === 'xgboost' ? Float32Array.from(x) : x;
      for (let i = 0; i < 3; i += 1) predictor.predict(rows, numRows);
      const times: number[] = [];
      for (let i = 0; i < repeats; i += 1) {
        const start = performance.now();
        predictor.predict(rows, numRows);
        times.push(performance.now() - start);
      }
      ms.set(kernel === 'auto' ? predictor.kernelKind : kernel, median(times));
      if (kernel === 'auto') info = predictor;
    }
    if (info === null) continue;
    const e = info.model.ensemble;
    lines.push([
      model.name,
      String(e.numTrees),
      `${(e.sumTreeDepth / e.numTrees).toFixed(1)} / ${(e.sumMeanLeafDepth / e.numTrees).toFixed(1)}`,
      e.kinds === null ? 'numeric' : 'mixed',
      info.kernelKind,
      // The WebAssembly walk takes numeric splits only (else it is the JS walk again).
      e.kinds === null ? (ms.get('wasm') ?? Number.NaN) : Number.NaN,
      ms.get('interpreter') ?? Number.NaN,
      ms.get('compiled') ?? Number.NaN,
    ]);
  }
  console.log(`\nkernels (ms per ${numRows.toLocaleString('en-US')} rows, median of ${repeats})`);
  console.log(
    table(
      [
        'model',
        'trees',
        'depth max / mean leaf',
        'splits',
        'auto picks',
        'wasm',
        'interpreter',
        'compiled',
      ],
      lines,
    ),
  );
}
