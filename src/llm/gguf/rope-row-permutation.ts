// The q/k row order llama.cpp's "llama" architecture expects.
//
// Hugging Face's Llama applies RoPE with rotate_half: within a head of width D, dimension i
// turns with dimension i + D/2. llama.cpp's LLAMA_ROPE_TYPE_NORM turns adjacent pairs
// (2i, 2i + 1) instead. Both use frequency i for pair i, so reordering each head's output
// rows of W_q and W_k makes the two graphs identical (the attention scores q·k are the same
// sum in another order); convert_hf_to_gguf.py does the same (`permute`, swapaxes(1, 2)):
//
//   HF row of head h:        h·D + i         h·D + D/2 + i        (i < D/2)
//   llama.cpp row of head h: h·D + 2i        h·D + 2i + 1
//
// For W_k the heads are the key/value heads.

/** Rows of a [numHeads·headDim, inFeatures] matrix from HF order to llama.cpp's. */
export function permuteRopeRows(
  weight: Float32Array,
  numHeads: number,
  headDim: number,
  inFeatures: number,
): Float32Array {
  return reorderRows(weight, numHeads, headDim, inFeatures, true);
}

/** The inverse of permuteRopeRows: llama.cpp's row order back to Hugging Face's. */
export function unpermuteRopeRows(
  weight: Float32Array,
  numHeads: number,
  headDim: number,
  inFeatures: number,
): Float32Array {
  return reorderRows(weight, numHeads, headDim, inFeatures, false);
}

function reorderRows(
  weight: Float32Array,
  numHeads: number,
  headDim: number,
  inFeatures: number,
  toLlamaCpp: boolean,
): Float32Array {
  if (headDim % 2 !== 0 || weight.length !== numHeads * headDim * inFeatures) {
    throw new RangeError(
      `cannot reorder ${weight.length} elements as ${numHeads} heads × ${headDim} rows × ${inFeatures}`,
    );
  }
  const out = new Float32Array(weight.length);
  const half = headDim / 2;
  for (let h = 0; h < numHeads; h += 1) {
    for (let i = 0; i < half; i += 1) {
      for (let j = 0; j < 2; j += 1) {
        const hfRow = h * headDim + j * half + i;
        const cppRow = h * headDim + 2 * i + j;
        const [from, to] = toLlamaCpp ? [hfRow, cppRow] : [cppRow, hfRow];
        out.set(weight.subarray(from * inFeatures, (from + 1) * inFeatures), to * inFeatures);
      }
    }
  }
  return out;
}
