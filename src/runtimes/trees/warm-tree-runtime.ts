// Readies a process to load tree models fast. A standby worker (src/worker/standby.ts) runs
// this before any replica needs it: it imports the tree runtime, then loads and runs a
// synthetic XGBoost model, UBJSON and JSON, balanced and lopsided trees (the WebAssembly walk
// and the compiled kernel), several times over, so V8 has optimized the decoder, the ensemble
// builder and the kernels' set-up before the first real model arrives. Measured on the bench
// model (fixtures/trees/bench-fraud.ubj, 200 trees, 760 KB): its load takes ~10 ms in a
// process warmed this way against 120–250 ms as the first load of a fresh one.
//
// The synthetic model is made here from numbers (nothing is read from disk but what this
// writes to a temp folder), through the same loadTreeRuntime a worker uses.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { endianness, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadTreeRuntime } from './load-tree-runtime.ts';

/** Loads of each synthetic model: enough for V8 to optimize the loops a load runs. */
const rounds = 8;
const numFeatures = 16;

export async function warmTreeRuntime(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-warm-'));
  try {
    const balanced = synthesize(40, 'balanced');
    const lopsided = synthesize(40, 'lopsided');
    const files = [
      { name: 'balanced.ubj', bytes: encodeUbjson(balanced) },
      { name: 'lopsided.ubj', bytes: encodeUbjson(lopsided) },
      { name: 'balanced.json', bytes: Buffer.from(JSON.stringify(balanced, plainArrays)) },
    ];
    for (const file of files) await writeFile(join(dir, file.name), file.bytes);
    const rows = Array.from({ length: 4 * numFeatures }, (_, i) => (i % 7) / 7 - 0.3);
    for (let round = 0; round < rounds; round++) {
      for (const file of files) {
        const outcome = await loadTreeRuntime({
          modelDir: dir,
          format: 'xgboost',
          files: [file.name],
          schema: null,
          config: {},
        });
        if (!outcome.ok) throw new Error(`the warm-up model did not load: ${outcome.reason}`);
        await outcome.runtime.warmup();
        await outcome.runtime.infer({
          inputs: [
            {
              name: 'input',
              datatype: 'FP32',
              shape: [4, numFeatures],
              data: Float32Array.from(rows),
            },
          ],
        });
        await outcome.runtime.unload();
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

type Document = { readonly [key: string]: Value };
type Value =
  | string
  | number
  | Document
  | readonly Value[]
  | Int32Array
  | Float32Array
  | Uint8Array
  | BigInt64Array;

/**
 * An XGBoost 1.7 `save_model` document of `numTrees` binary:logistic trees: complete trees
 * of depth 6 ('balanced'), or chains that split off one leaf per level ('lopsided').
 */
function synthesize(numTrees: number, shape: 'balanced' | 'lopsided'): Document {
  const trees: Document[] = [];
  for (let t = 0; t < numTrees; t++) {
    const left: number[] = [];
    const right: number[] = [];
    if (shape === 'balanced') {
      const internal = 2 ** 6 - 1;
      for (let i = 0; i < 2 * internal + 1; i++) {
        left.push(i < internal ? 2 * i + 1 : -1);
        right.push(i < internal ? 2 * i + 2 : -1);
      }
    } else {
      const depth = 12;
      for (let level = 0; level < depth; level++) {
        // node 2·level splits into a leaf (2·level + 1) and the next split (2·level + 2)
        left.push(2 * level + 1, -1);
        right.push(2 * level + 2, -1);
      }
      left.push(-1);
      right.push(-1);
    }
    const n = left.length;
    const parents = new Int32Array(n).fill(2147483647);
    for (let i = 0; i < n; i++) {
      if (left[i]! >= 0) parents[left[i]!] = i;
      if (right[i]! >= 0) parents[right[i]!] = i;
    }
    const conditions = Float32Array.from({ length: n }, (_, i) =>
      left[i] === -1 ? (((i * 37 + t) % 19) - 9) / 90 : ((i * 13 + t) % 11) / 11 - 0.5,
    );
    trees.push({
      base_weights: new Float32Array(n),
      categories: new Int32Array(0),
      categories_nodes: new Int32Array(0),
      categories_segments: new BigInt64Array(0),
      categories_sizes: new BigInt64Array(0),
      default_left: Uint8Array.from({ length: n }, (_, i) => (i + t) % 2),
      id: t,
      left_children: Int32Array.from(left),
      loss_changes: new Float32Array(n),
      parents,
      right_children: Int32Array.from(right),
      split_conditions: conditions,
      split_indices: Int32Array.from({ length: n }, (_, i) =>
        left[i] === -1 ? 0 : (i * 7 + t) % numFeatures,
      ),
      split_type: new Uint8Array(n),
      sum_hessian: new Float32Array(n).fill(1),
      tree_param: {
        num_deleted: '0',
        num_feature: String(numFeatures),
        num_nodes: String(n),
        size_leaf_vector: '0',
      },
    });
  }
  return {
    learner: {
      attributes: {},
      feature_names: [],
      feature_types: [],
      gradient_booster: {
        model: {
          gbtree_model_param: {
            num_parallel_tree: '1',
            num_trees: String(numTrees),
            size_leaf_vector: '0',
          },
          tree_info: trees.map(() => 0),
          trees,
        },
        name: 'gbtree',
      },
      learner_model_param: {
        base_score: '5E-1',
        boost_from_average: '1',
        num_class: '0',
        num_feature: String(numFeatures),
        num_target: '1',
      },
      objective: { name: 'binary:logistic', reg_loss_param: { scale_pos_weight: '1' } },
    },
    version: [1, 7, 4],
  };
}

/** JSON.stringify replacer: typed arrays as plain arrays (bigints as numbers). */
function plainArrays(_key: string, value: unknown): unknown {
  if (value instanceof BigInt64Array) return Array.from(value, Number);
  if (ArrayBuffer.isView(value)) return Array.from(value as unknown as ArrayLike<number>);
  return value;
}

/** UBJSON as XGBoost writes it: typed arrays as `[$<type>#L<count>`, integers as L. */
function encodeUbjson(value: Value): Buffer {
  const parts: Buffer[] = [];
  const int64 = (n: number | bigint): Buffer => {
    const b = Buffer.alloc(8);
    b.writeBigInt64BE(BigInt(n));
    return b;
  };
  const text = (s: string): Buffer => {
    const bytes = Buffer.from(s, 'utf8');
    return Buffer.concat([Buffer.from('L'), int64(bytes.length), bytes]);
  };
  const typed = (marker: string, bytes: Buffer, count: number, width: number): void => {
    const copy = Buffer.from(bytes);
    if (endianness() === 'BE') {
      // already big-endian
    } else if (width === 2) copy.swap16();
    else if (width === 4) copy.swap32();
    else if (width === 8) copy.swap64();
    parts.push(Buffer.from(`[$${marker}#L`), int64(count), copy);
  };
  const write = (v: Value): void => {
    if (typeof v === 'string') {
      parts.push(Buffer.from('S'), text(v));
    } else if (typeof v === 'number') {
      parts.push(Buffer.from('L'), int64(v));
    } else if (v instanceof Int32Array || v instanceof Float32Array) {
      const bytes = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
      typed(v instanceof Int32Array ? 'l' : 'd', bytes, v.length, 4);
    } else if (v instanceof Uint8Array) {
      typed('U', Buffer.from(v), v.length, 1);
    } else if (v instanceof BigInt64Array) {
      typed('L', Buffer.from(v.buffer, v.byteOffset, v.byteLength), v.length, 8);
    } else if (Array.isArray(v)) {
      parts.push(Buffer.from('['));
      for (const item of v as readonly Value[]) write(item);
      parts.push(Buffer.from(']'));
    } else {
      parts.push(Buffer.from('{'));
      for (const [key, item] of Object.entries(v as Document)) {
        parts.push(text(key));
        write(item);
      }
      parts.push(Buffer.from('}'));
    }
  };
  write(value);
  return Buffer.concat(parts);
}
