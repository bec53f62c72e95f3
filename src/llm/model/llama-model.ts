// The Llama forward pass over the paged KV cache, in dataflow order (llama2.c's readability,
// Hugging Face's conventions). One call runs the new tokens of several sequences at once —
// a prompt's many tokens (prefill) or one token each (decode), mixed freely — and returns
// logits for each sequence's last new token (or for every new token, for tests).
//
// Per layer, for all T new tokens stacked as rows of x [T, hidden]:
//   h  = rmsNorm(x) ⊙ inputNorm                               [T, hidden]
//   q  = h·Wqᵀ [T, heads·headDim]   k = h·Wkᵀ, v = h·Wvᵀ [T, kvHeads·headDim]
//   q, k ← RoPE at each token's position (rotate_half: pairs (i, i + headDim/2))
//   k, v → the sequence's KV slots (block table: sequence-kv.ts)
//   a  = softmax(q·Kᵀ/√headDim, causal) · V, per head; query head h reads kv head
//        ⌊h / (heads/kvHeads)⌋ (grouped-query attention)         [T, heads·headDim]
//   x += a·Woᵀ
//   h  = rmsNorm(x) ⊙ postAttentionNorm
//   x += (silu(h·Wgateᵀ) ⊙ h·Wupᵀ)·Wdownᵀ                        (SwiGLU)
// then logits = rmsNorm(x) ⊙ norm · lmHeadᵀ                      [·, vocab]
//
// Weights are row-major [outFeatures, inFeatures] float32 as Hugging Face stores them. They
// are copied once into a kernel arena (WebAssembly memory), where SIMD kernels run every
// projection, norm, RoPE rotation, attention over the paged cache, silu and residual add
// (kernels/kernel-arena.ts); a step's activations live in the same arena, allocated once.
// JavaScript does the bookkeeping: embeddings in, block tables, RoPE angles, logits out. When
// the caller brings a KV pool outside the arena, attention runs in JavaScript (the reference).

import { attentionScratchFloats, KernelArena } from '../kernels/kernel-arena.ts';
import { unpackRow, type PackedMatrix } from '../kernels/packed-matrix.ts';
import { BlockPool, bytesPerBlock } from '../kv-cache/block-pool.ts';
import type { SequenceKv } from '../kv-cache/sequence-kv.ts';

export interface LlamaDims {
  readonly vocabSize: number;
  readonly hiddenSize: number;
  readonly intermediateSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly rmsNormEps: number;
}

export interface LlamaLayerTensors {
  /** [hidden] */ readonly inputNorm: Float32Array;
  /** [heads·headDim, hidden] */ readonly q: Float32Array;
  /** [kvHeads·headDim, hidden] */ readonly k: Float32Array;
  /** [kvHeads·headDim, hidden] */ readonly v: Float32Array;
  /** [hidden, heads·headDim] */ readonly o: Float32Array;
  /** [hidden] */ readonly postAttentionNorm: Float32Array;
  /** [intermediate, hidden] */ readonly gate: Float32Array;
  /** [intermediate, hidden] */ readonly up: Float32Array;
  /** [hidden, intermediate] */ readonly down: Float32Array;
}

export interface LlamaTensors {
  /** [vocab, hidden] */ readonly embedTokens: Float32Array;
  readonly layers: readonly LlamaLayerTensors[];
  /** [hidden] */ readonly norm: Float32Array;
  /** [vocab, hidden]; the embedding itself when tied. */ readonly lmHead: Float32Array;
}

/** The weights inside the arena: every projection packed for the linear kernel. */
interface ArenaLayer {
  readonly inputNorm: Float32Array;
  readonly q: PackedMatrix;
  readonly k: PackedMatrix;
  readonly v: PackedMatrix;
  readonly o: PackedMatrix;
  readonly postAttentionNorm: Float32Array;
  readonly gate: PackedMatrix;
  readonly up: PackedMatrix;
  readonly down: PackedMatrix;
}

interface ArenaTensors {
  /** Packed too: when tied it is the vocabulary projection (rows read by unpackRow). */
  readonly embedTokens: PackedMatrix;
  readonly layers: readonly ArenaLayer[];
  readonly norm: Float32Array;
  readonly lmHead: PackedMatrix;
}

/** One sequence's share of a forward call. Its KV must have room: `kv.reserve(tokens.length)`. */
export interface SequenceStep {
  readonly tokens: readonly number[];
  readonly kv: SequenceKv;
}

export interface LlamaModelOptions {
  /** Most new tokens one forward call may carry (prefill is chunked to this). Default 512. */
  readonly maxTokensPerStep?: number;
  /**
   * A paged KV cache of this many blocks inside the model's kernel arena (`model.pool`),
   * where the attention kernel reads it in place. Without it, the caller brings its own pool
   * and attention runs in JavaScript.
   */
  readonly kvCache?: { readonly numBlocks: number; readonly blockSize: number };
  /** Most positions a sequence may have (sizes the attention scratch). Default 4096. */
  readonly maxPositions?: number;
}

interface StepActivations {
  readonly x: Float32Array;
  readonly h: Float32Array;
  readonly q: Float32Array;
  readonly k: Float32Array;
  readonly v: Float32Array;
  readonly attention: Float32Array;
  readonly projected: Float32Array;
  readonly gate: Float32Array;
  readonly up: Float32Array;
  readonly normed: Float32Array;
  readonly logits: Float32Array;
  /** Each row's RoPE cos and sin [T, headDim/2]. */
  readonly cos: Float32Array;
  readonly sin: Float32Array;
}

/** Most rows of logits one vocabulary product makes: bounds the largest scratch buffer. */
const maxLogitRows = 64;

function logitRowsFor(options: LlamaModelOptions): number {
  return Math.min(options.maxTokensPerStep ?? 512, maxLogitRows);
}

function kvShape(dims: LlamaDims, options: LlamaModelOptions) {
  return {
    numLayers: dims.numLayers,
    numKvHeads: dims.numKvHeads,
    headDim: dims.headDim,
    blockSize: options.kvCache?.blockSize ?? 16,
  };
}

/** Floats of every weight tensor (the tied vocabulary projection counted once). */
export function weightFloatsOf(tensors: LlamaTensors): number {
  let floats = tensors.embedTokens.length + tensors.norm.length;
  if (tensors.lmHead !== tensors.embedTokens) floats += tensors.lmHead.length;
  for (const layer of tensors.layers)
    for (const w of Object.values(layer) as Float32Array[]) floats += w.length;
  return floats;
}

export class LlamaModel {
  private readonly groupSize: number;
  readonly maxTokensPerStep: number;
  private readonly arena: KernelArena;
  /** The weights, inside the arena. */
  private readonly tensors: ArenaTensors;
  /** The KV cache inside the arena, when the options asked for one. */
  readonly pool: BlockPool | null;
  readonly maxPositions: number;
  /** Attention scratch, kept for the model's life: one step's slots (bytes) and scores. */
  private readonly slotScratch: Int32Array;
  private readonly scoreScratch: Float32Array;
  /** A step's activations, sized for maxTokensPerStep rows and reused by every step. */
  private readonly activations: StepActivations;
  /** Rows of logits one vocabulary product makes (more rows take several products). */
  private readonly logitRows: number;
  private ropeCos = new Float32Array(0);
  private ropeSin = new Float32Array(0);

  constructor(
    readonly dims: LlamaDims,
    tensors: LlamaTensors,
    /** RoPE inverse frequencies [headDim / 2], scaling already applied. */
    private readonly inverseFrequencies: Float64Array | Float32Array,
    options: LlamaModelOptions = {},
  ) {
    if (dims.numHeads % dims.numKvHeads !== 0)
      throw new RangeError(`${dims.numHeads} heads do not group over ${dims.numKvHeads} kv heads`);
    if (inverseFrequencies.length !== dims.headDim / 2)
      throw new RangeError(
        `${inverseFrequencies.length} RoPE frequencies for headDim ${dims.headDim}`,
      );
    this.groupSize = dims.numHeads / dims.numKvHeads;
    this.maxTokensPerStep = options.maxTokensPerStep ?? 512;
    this.maxPositions = options.maxPositions ?? 4096;
    const tied = tensors.lmHead === tensors.embedTokens;
    const shape = kvShape(dims, options);
    this.arena = new KernelArena(LlamaModel.arenaBytes(dims, weightFloatsOf(tensors), options));
    const arena = this.arena;
    const hidden = dims.hiddenSize;
    const qWidth = dims.numHeads * dims.headDim;
    const kvWidth = dims.numKvHeads * dims.headDim;
    const inter = dims.intermediateSize;
    const packed = (data: Float32Array, rows: number, cols: number): PackedMatrix =>
      arena.copyInPacked(data, rows, cols);
    const embedTokens = packed(tensors.embedTokens, dims.vocabSize, hidden);
    this.tensors = {
      embedTokens,
      layers: tensors.layers.map((l) => ({
        inputNorm: arena.copyIn(l.inputNorm),
        q: packed(l.q, qWidth, hidden),
        k: packed(l.k, kvWidth, hidden),
        v: packed(l.v, kvWidth, hidden),
        o: packed(l.o, hidden, qWidth),
        postAttentionNorm: arena.copyIn(l.postAttentionNorm),
        gate: packed(l.gate, inter, hidden),
        up: packed(l.up, inter, hidden),
        down: packed(l.down, hidden, inter),
      })),
      norm: arena.copyIn(tensors.norm),
      lmHead: tied ? embedTokens : packed(tensors.lmHead, dims.vocabSize, hidden),
    };
    this.pool =
      options.kvCache === undefined
        ? null
        : new BlockPool(shape, options.kvCache.numBlocks, (floats) => arena.alloc(floats));
    this.slotScratch = arena.allocInt32(this.maxPositions);
    this.scoreScratch = arena.alloc(attentionScratchFloats(this.groupSize, this.maxPositions));
    const rows = this.maxTokensPerStep;
    this.logitRows = logitRowsFor(options);
    this.activations = {
      x: arena.alloc(rows * dims.hiddenSize),
      h: arena.alloc(rows * dims.hiddenSize),
      q: arena.alloc(rows * qWidth),
      k: arena.alloc(rows * kvWidth),
      v: arena.alloc(rows * kvWidth),
      attention: arena.alloc(rows * qWidth),
      projected: arena.alloc(rows * dims.hiddenSize),
      gate: arena.alloc(rows * dims.intermediateSize),
      up: arena.alloc(rows * dims.intermediateSize),
      normed: arena.alloc(rows * dims.hiddenSize),
      logits: arena.alloc(this.logitRows * dims.vocabSize),
      cos: arena.alloc((rows * dims.headDim) / 2),
      sin: arena.alloc((rows * dims.headDim) / 2),
    };
  }

  /**
   * Bytes of WebAssembly memory a model of `dims` with `weightFloats` of weights takes under
   * `options`: weights, KV cache, attention scratch and a step's activations (createModel
   * checks this against wasm32's 4 GiB before anything is allocated).
   */
  static arenaBytes(dims: LlamaDims, weightFloats: number, options: LlamaModelOptions): number {
    const rows = options.maxTokensPerStep ?? 512;
    const maxPositions = options.maxPositions ?? 4096;
    const q = dims.numHeads * dims.headDim;
    const kv = dims.numKvHeads * dims.headDim;
    const activations =
      rows * (4 * dims.hiddenSize + 2 * q + 2 * kv + 2 * dims.intermediateSize + dims.headDim) +
      logitRowsFor(options) * dims.vocabSize;
    // Attention: byte slots and every group head's scores for the longest sequence.
    const attention =
      maxPositions + attentionScratchFloats(dims.numHeads / dims.numKvHeads, maxPositions);
    const cacheBytes =
      options.kvCache === undefined
        ? 0
        : options.kvCache.numBlocks * bytesPerBlock(kvShape(dims, options));
    // Each allocation may lose up to 15 bytes to alignment: 64 bytes an allocation is plenty.
    const allocations = 4 + dims.numLayers * 11 + 16;
    return (weightFloats + activations + attention) * 4 + cacheBytes + allocations * 64;
  }

  /**
   * Runs every step's new tokens, writes their keys and values into each step's KV (and
   * commits them), and returns logits: one [vocab] array per step for its last token, or,
   * with `allPositions`, one [tokens, vocab] array per step.
   */
  forward(steps: readonly SequenceStep[], allPositions = false): Float32Array[] {
    let total = 0;
    for (const step of steps) {
      if (step.tokens.length === 0) throw new RangeError('a step needs at least one token');
      const positions = step.kv.numTokens + step.tokens.length;
      if (positions > this.maxPositions)
        throw new RangeError(
          `a sequence would reach ${positions} positions; this model takes at most ${this.maxPositions}`,
        );
      total += step.tokens.length;
    }
    if (total > this.maxTokensPerStep)
      throw new RangeError(`${total} tokens in one step; at most ${this.maxTokensPerStep}`);
    return this.run(steps, total, allPositions);
  }

  private run(
    steps: readonly SequenceStep[],
    total: number,
    allPositions: boolean,
  ): Float32Array[] {
    const d = this.dims;
    const hidden = d.hiddenSize;
    const qWidth = d.numHeads * d.headDim;
    const kvWidth = d.numKvHeads * d.headDim;
    const arena = this.arena;
    const linear = (
      x: Float32Array,
      rows: number,
      inF: number,
      w: PackedMatrix,
      outF: number,
      y: Float32Array,
    ): void => arena.linear(x, rows, inF, w, outF, y);
    // Row r of every activation belongs to step rowStep[r], at position rowPosition[r].
    const rowPosition = new Int32Array(total);
    // Every activation is [T, width] at the start of its buffer (sized for the largest T).
    const { x, h, q, k, v, attention, projected, gate, up, normed, logits, cos, sin } =
      this.activations;
    let row = 0;
    for (const step of steps) {
      const start = step.kv.numTokens;
      for (let i = 0; i < step.tokens.length; i++, row++) {
        const token = step.tokens[i]!;
        if (!Number.isInteger(token) || token < 0 || token >= d.vocabSize)
          throw new RangeError(`token id ${token} is outside the vocabulary (${d.vocabSize})`);
        rowPosition[row] = start + i;
        unpackRow(this.tensors.embedTokens, token, x, row * hidden);
      }
    }

    this.ropeRows(rowPosition, total, cos, sin);
    // Every layer shares the block tables: look up each step's slots (in bytes) once a call.
    const stepSlots = steps.map((step) => {
      const length = step.kv.numTokens + step.tokens.length;
      const slots = new Int32Array(length);
      for (let p = 0; p < length; p++) slots[p] = step.kv.slotOffset(p) << 2;
      return slots;
    });
    for (let layer = 0; layer < d.numLayers; layer++) {
      const w = this.tensors.layers[layer]!;
      arena.rmsNorm(x, w.inputNorm, h, total, hidden, d.rmsNormEps);
      linear(h, total, hidden, w.q, qWidth, q);
      linear(h, total, hidden, w.k, kvWidth, k);
      linear(h, total, hidden, w.v, kvWidth, v);
      arena.rope(q, total, d.numHeads, d.headDim, cos, sin);
      arena.rope(k, total, d.numKvHeads, d.headDim, cos, sin);
      this.attend(steps, stepSlots, layer, q, k, v, attention);
      linear(attention, total, qWidth, w.o, hidden, projected);
      arena.addInPlace(x, projected, total * hidden);

      arena.rmsNorm(x, w.postAttentionNorm, h, total, hidden, d.rmsNormEps);
      linear(h, total, hidden, w.gate, d.intermediateSize, gate);
      linear(h, total, hidden, w.up, d.intermediateSize, up);
      arena.siluMul(gate, up, total * d.intermediateSize); // gate = silu(gate) · up
      linear(gate, total, d.intermediateSize, w.down, hidden, projected);
      arena.addInPlace(x, projected, total * hidden);
    }
    for (const step of steps) step.kv.commit(step.tokens.length);

    // Final norm and the vocabulary projection, only for the rows asked for, many rows a
    // product (the vocabulary's weights are read once for up to 64 sequences, not once each).
    const wanted = allPositions ? total : steps.length;
    const vocab = d.vocabSize;
    if (allPositions) arena.rmsNorm(x, this.tensors.norm, normed, total, hidden, d.rmsNormEps);
    else {
      row = 0;
      for (const [index, step] of steps.entries()) {
        row += step.tokens.length;
        const last = x.subarray((row - 1) * hidden, row * hidden);
        const into = normed.subarray(index * hidden, (index + 1) * hidden);
        arena.rmsNorm(last, this.tensors.norm, into, 1, hidden, d.rmsNormEps);
      }
    }
    // Copies out of the scratch, which the next step reuses; at most logitRows a product.
    const all = new Float32Array(wanted * vocab);
    for (let first = 0; first < wanted; first += this.logitRows) {
      const rows = Math.min(this.logitRows, wanted - first);
      const inputs = normed.subarray(first * hidden, (first + rows) * hidden);
      linear(inputs, rows, hidden, this.tensors.lmHead, vocab, logits);
      all.set(logits.subarray(0, rows * vocab), first * vocab);
    }
    const out: Float32Array[] = [];
    row = 0;
    for (const step of steps) {
      const rows = allPositions ? step.tokens.length : 1;
      out.push(all.subarray(row * vocab, (row + rows) * vocab));
      row += rows;
    }
    return out;
  }

  /**
   * cos and sin of position · inverseFrequency[i] for positions below `positions`, as
   * Float32Array [positions, headDim/2] each, grown on demand. Hugging Face computes the
   * angle in float32 ((position · inv_freq) as float32), then its cos and sin.
   */
  private ropeTable(positions: number): { cos: Float32Array; sin: Float32Array } {
    const half = this.dims.headDim / 2;
    if (this.ropeCos.length >= positions * half) return { cos: this.ropeCos, sin: this.ropeSin };
    const size = Math.max(positions, 2 * (this.ropeCos.length / half), 256);
    const cos = new Float32Array(size * half);
    const sin = new Float32Array(size * half);
    for (let position = 0; position < size; position++) {
      for (let i = 0; i < half; i++) {
        const angle = Math.fround(position * Math.fround(this.inverseFrequencies[i]!));
        cos[position * half + i] = Math.cos(angle);
        sin[position * half + i] = Math.sin(angle);
      }
    }
    this.ropeCos = cos;
    this.ropeSin = sin;
    return { cos, sin };
  }

  /** Each row's cos and sin of position · inverseFrequency[i] into `cos`, `sin` [rows, half]. */
  private ropeRows(
    rowPosition: Int32Array,
    rows: number,
    cos: Float32Array,
    sin: Float32Array,
  ): void {
    const half = this.dims.headDim / 2;
    let maxPosition = 0;
    for (let r = 0; r < rows; r++) maxPosition = Math.max(maxPosition, rowPosition[r]!);
    const table = this.ropeTable(maxPosition + 1);
    for (let r = 0; r < rows; r++) {
      const from = rowPosition[r]! * half;
      for (let i = 0; i < half; i++) {
        cos[r * half + i] = table.cos[from + i]!;
        sin[r * half + i] = table.sin[from + i]!;
      }
    }
  }

  /** Writes each row's k, v into its sequence's slots, then causal attention per step. */
  private attend(
    steps: readonly SequenceStep[],
    /** Per step, the slot offset in bytes of every position it can see (slotOffset · 4). */
    stepSlots: readonly Int32Array[],
    layer: number,
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    out: Float32Array,
  ): void {
    const d = this.dims;
    const headDim = d.headDim;
    const kvWidth = d.numKvHeads * headDim;
    const qWidth = d.numHeads * headDim;
    const scale = 1 / Math.sqrt(headDim);
    let row = 0;
    for (const [index, step] of steps.entries()) {
      const kv = step.kv;
      const keys = kv.pool.keys[layer]!;
      const values = kv.pool.values[layer]!;
      const start = kv.numTokens;
      const length = start + step.tokens.length;
      const slots = stepSlots[index]!;
      const arena = this.arena;
      const inArena = arena.holds(keys) && arena.holds(values);
      for (let i = 0; i < step.tokens.length; i++) {
        const slot = slots[start + i]! >> 2;
        if (inArena) {
          arena.copyFloats(keys, slot, k, (row + i) * kvWidth, kvWidth);
          arena.copyFloats(values, slot, v, (row + i) * kvWidth, kvWidth);
        } else {
          keys.set(k.subarray((row + i) * kvWidth, (row + i + 1) * kvWidth), slot);
          values.set(v.subarray((row + i) * kvWidth, (row + i + 1) * kvWidth), slot);
        }
      }
      if (inArena && headDim % 4 === 0) {
        // The cache lives in the kernel arena: the SIMD kernel reads it in place.
        const byteSlots = this.slotScratch;
        byteSlots.set(slots);
        for (let i = 0; i < step.tokens.length; i++, row++) {
          arena.attendRow(
            q,
            row * qWidth,
            d.numHeads,
            this.groupSize,
            headDim,
            keys,
            values,
            byteSlots,
            start + i + 1,
            scale,
            out,
            row * qWidth,
            this.scoreScratch,
          );
        }
        continue;
      }
      const scores = new Float64Array(length);
      const accumulator = new Float64Array(headDim);
      for (let i = 0; i < step.tokens.length; i++, row++) {
        const visible = start + i + 1; // causal: positions 0 … start + i
        for (let head = 0; head < d.numHeads; head++) {
          const qBase = row * qWidth + head * headDim;
          const kvHead = Math.floor(head / this.groupSize) * headDim;
          let max = Number.NEGATIVE_INFINITY;
          for (let p = 0; p < visible; p++) {
            const kBase = (slots[p]! >> 2) + kvHead;
            let dot = 0;
            for (let j = 0; j < headDim; j++) dot += q[qBase + j]! * keys[kBase + j]!;
            const score = dot * scale;
            scores[p] = score;
            if (score > max) max = score;
          }
          let sum = 0;
          for (let p = 0; p < visible; p++) {
            const e = Math.exp(scores[p]! - max);
            scores[p] = e;
            sum += e;
          }
          const oBase = row * qWidth + head * headDim;
          accumulator.fill(0);
          for (let p = 0; p < visible; p++) {
            const weight = scores[p]! / sum;
            const vBase = (slots[p]! >> 2) + kvHead;
            for (let j = 0; j < headDim; j++) accumulator[j]! += weight * values[vBase + j]!;
          }
          for (let j = 0; j < headDim; j++) out[oBase + j] = accumulator[j]!;
        }
      }
    }
  }
}
