// y = x · Wᵀ: the dense layer of every projection in the model.
//   x [rows, inFeatures], W [outFeatures, inFeatures] (row-major, as Hugging Face stores it),
//   y [rows, outFeatures]
// The portable scalar kernel: each weight row is read once and used for every input row, so
// batched decode (many sequences, one token each) streams the weights once per step. Four
// independent accumulators keep the loop from serializing on one addition chain.

export function linear(
  x: Float32Array,
  rows: number,
  inFeatures: number,
  weight: Float32Array,
  outFeatures: number,
  y: Float32Array,
): void {
  const tail = inFeatures & ~3;
  for (let o = 0; o < outFeatures; o++) {
    const w = o * inFeatures;
    for (let r = 0; r < rows; r++) {
      const a = r * inFeatures;
      let s0 = 0;
      let s1 = 0;
      let s2 = 0;
      let s3 = 0;
      let i = 0;
      for (; i < tail; i += 4) {
        s0 += x[a + i]! * weight[w + i]!;
        s1 += x[a + i + 1]! * weight[w + i + 1]!;
        s2 += x[a + i + 2]! * weight[w + i + 2]!;
        s3 += x[a + i + 3]! * weight[w + i + 3]!;
      }
      for (; i < inFeatures; i++) s0 += x[a + i]! * weight[w + i]!;
      y[r * outFeatures + o] = s0 + s1 + s2 + s3;
    }
  }
}
