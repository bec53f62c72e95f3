// AssemblyScript source of the WebAssembly SIMD kernels (compiled by `npm run build:kernels`
// to linear.wasm, which is committed; test/llm/kernels checks the two agree). Not TypeScript:
// tsc, eslint and the test runner skip *.as.ts.
//
// linear: y = x · Wᵀ with x [rows, inFeatures], W [outFeatures, inFeatures], y [rows,
// outFeatures], all f32, row-major, addressed by byte offsets into the shared memory.
// Four weight rows by two input rows a pass: each weight vector loaded is used for two
// rows, each input vector for four outputs; eight f32x4 accumulators stay in registers.

@inline
function hsum(v: v128): f32 {
  return (
    f32x4.extract_lane(v, 0) +
    f32x4.extract_lane(v, 1) +
    (f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3))
  );
}

/** Dot product of n f32 at byte offsets a and b. */
@inline
function dot(a: usize, b: usize, n: i32): f32 {
  const vecEnd = n & ~3;
  let acc = f32x4.splat(0);
  let i = 0;
  for (; i < vecEnd; i += 4) {
    const o = (<usize>i) << 2;
    acc = f32x4.add(acc, f32x4.mul(v128.load(a + o), v128.load(b + o)));
  }
  let s = hsum(acc);
  for (; i < n; i++) s += load<f32>(a + ((<usize>i) << 2)) * load<f32>(b + ((<usize>i) << 2));
  return s;
}

export function linear(x: usize, rows: i32, inF: i32, w: usize, outF: i32, y: usize): void {
  const rowBytes = (<usize>inF) << 2;
  const outBytes = (<usize>outF) << 2;
  const vecEnd = inF & ~3;
  let o = 0;
  for (; o + 4 <= outF; o += 4) {
    const w0 = w + (<usize>o) * rowBytes;
    const w1 = w0 + rowBytes;
    const w2 = w1 + rowBytes;
    const w3 = w2 + rowBytes;
    let r = 0;
    for (; r + 2 <= rows; r += 2) {
      const x0 = x + (<usize>r) * rowBytes;
      const x1 = x0 + rowBytes;
      let a00 = f32x4.splat(0);
      let a01 = f32x4.splat(0);
      let a02 = f32x4.splat(0);
      let a03 = f32x4.splat(0);
      let a10 = f32x4.splat(0);
      let a11 = f32x4.splat(0);
      let a12 = f32x4.splat(0);
      let a13 = f32x4.splat(0);
      let i = 0;
      for (; i < vecEnd; i += 4) {
        const off = (<usize>i) << 2;
        const v0 = v128.load(x0 + off);
        const v1 = v128.load(x1 + off);
        const k0 = v128.load(w0 + off);
        const k1 = v128.load(w1 + off);
        const k2 = v128.load(w2 + off);
        const k3 = v128.load(w3 + off);
        a00 = f32x4.add(a00, f32x4.mul(v0, k0));
        a01 = f32x4.add(a01, f32x4.mul(v0, k1));
        a02 = f32x4.add(a02, f32x4.mul(v0, k2));
        a03 = f32x4.add(a03, f32x4.mul(v0, k3));
        a10 = f32x4.add(a10, f32x4.mul(v1, k0));
        a11 = f32x4.add(a11, f32x4.mul(v1, k1));
        a12 = f32x4.add(a12, f32x4.mul(v1, k2));
        a13 = f32x4.add(a13, f32x4.mul(v1, k3));
      }
      let s00 = hsum(a00);
      let s01 = hsum(a01);
      let s02 = hsum(a02);
      let s03 = hsum(a03);
      let s10 = hsum(a10);
      let s11 = hsum(a11);
      let s12 = hsum(a12);
      let s13 = hsum(a13);
      for (; i < inF; i++) {
        const off = (<usize>i) << 2;
        const v0 = load<f32>(x0 + off);
        const v1 = load<f32>(x1 + off);
        s00 += v0 * load<f32>(w0 + off);
        s01 += v0 * load<f32>(w1 + off);
        s02 += v0 * load<f32>(w2 + off);
        s03 += v0 * load<f32>(w3 + off);
        s10 += v1 * load<f32>(w0 + off);
        s11 += v1 * load<f32>(w1 + off);
        s12 += v1 * load<f32>(w2 + off);
        s13 += v1 * load<f32>(w3 + off);
      }
      const y0 = y + (<usize>r) * outBytes + ((<usize>o) << 2);
      const y1 = y0 + outBytes;
      store<f32>(y0, s00);
      store<f32>(y0 + 4, s01);
      store<f32>(y0 + 8, s02);
      store<f32>(y0 + 12, s03);
      store<f32>(y1, s10);
      store<f32>(y1 + 4, s11);
      store<f32>(y1 + 8, s12);
      store<f32>(y1 + 12, s13);
    }
    for (; r < rows; r++) {
      const xr = x + (<usize>r) * rowBytes;
      const yr = y + (<usize>r) * outBytes + ((<usize>o) << 2);
      store<f32>(yr, dot(xr, w0, inF));
      store<f32>(yr + 4, dot(xr, w1, inF));
      store<f32>(yr + 8, dot(xr, w2, inF));
      store<f32>(yr + 12, dot(xr, w3, inF));
    }
  }
  for (; o < outF; o++) {
    const wo = w + (<usize>o) * rowBytes;
    for (let r = 0; r < rows; r++) {
      store<f32>(
        y + (<usize>r) * outBytes + ((<usize>o) << 2),
        dot(x + (<usize>r) * rowBytes, wo, inF),
      );
    }
  }
}

/**
 * Causal attention of one token row over its sequence's cached positions, every head:
 *   q      f32 [numHeads, headDim]                 at byte offset q
 *   keys / values: the layer's block-pool arrays; position p's kv head g starts at byte
 *          offset keys + slots[p] + g·headDim·4 (slots: i32 [visible], byte offsets of kv head 0)
 *   out    f32 [numHeads, headDim]
 *   scores f32 [visible] scratch
 * Query head h reads kv head ⌊h / groupSize⌋ (grouped-query attention).
 */
export function attendRow(
  q: usize,
  numHeads: i32,
  groupSize: i32,
  headDim: i32,
  keys: usize,
  values: usize,
  slots: usize,
  visible: i32,
  scale: f32,
  out: usize,
  scores: usize,
): void {
  const headBytes = (<usize>headDim) << 2;
  const vecEnd = headDim & ~3;
  for (let h = 0; h < numHeads; h++) {
    const qh = q + (<usize>h) * headBytes;
    const kvOffset = (<usize>(h / groupSize)) * headBytes;
    let max = -Infinity as f32;
    for (let p = 0; p < visible; p++) {
      const slot = <usize>load<i32>(slots + ((<usize>p) << 2));
      const s = dot(qh, keys + slot + kvOffset, headDim) * scale;
      store<f32>(scores + ((<usize>p) << 2), s);
      if (s > max) max = s;
    }
    let sum: f32 = 0;
    for (let p = 0; p < visible; p++) {
      const at = scores + ((<usize>p) << 2);
      const e = Mathf.exp(load<f32>(at) - max);
      store<f32>(at, e);
      sum += e;
    }
    const inverse: f32 = 1 / sum;
    const oh = out + (<usize>h) * headBytes;
    // out = Σ_p weight_p · v_p, 16 floats (four vectors) of the head at a time, positions in
    // the inner loop so each weight and slot is read once per chunk.
    let i = 0;
    for (; i + 16 <= vecEnd; i += 16) {
      const off = (<usize>i) << 2;
      let a0 = f32x4.splat(0);
      let a1 = f32x4.splat(0);
      let a2 = f32x4.splat(0);
      let a3 = f32x4.splat(0);
      for (let p = 0; p < visible; p++) {
        const base = values + (<usize>load<i32>(slots + ((<usize>p) << 2))) + kvOffset + off;
        const weight = f32x4.splat(load<f32>(scores + ((<usize>p) << 2)));
        a0 = f32x4.add(a0, f32x4.mul(weight, v128.load(base)));
        a1 = f32x4.add(a1, f32x4.mul(weight, v128.load(base + 16)));
        a2 = f32x4.add(a2, f32x4.mul(weight, v128.load(base + 32)));
        a3 = f32x4.add(a3, f32x4.mul(weight, v128.load(base + 48)));
      }
      const scale4 = f32x4.splat(inverse);
      v128.store(oh + off, f32x4.mul(a0, scale4));
      v128.store(oh + off + 16, f32x4.mul(a1, scale4));
      v128.store(oh + off + 32, f32x4.mul(a2, scale4));
      v128.store(oh + off + 48, f32x4.mul(a3, scale4));
    }
    for (; i < vecEnd; i += 4) {
      const off = (<usize>i) << 2;
      let acc = f32x4.splat(0);
      for (let p = 0; p < visible; p++) {
        const slot = <usize>load<i32>(slots + ((<usize>p) << 2));
        const weight = f32x4.splat(load<f32>(scores + ((<usize>p) << 2)));
        acc = f32x4.add(acc, f32x4.mul(weight, v128.load(values + slot + kvOffset + off)));
      }
      v128.store(oh + off, f32x4.mul(acc, f32x4.splat(inverse)));
    }
    for (; i < headDim; i++) {
      const off = (<usize>i) << 2;
      let acc: f32 = 0;
      for (let p = 0; p < visible; p++) {
        const slot = <usize>load<i32>(slots + ((<usize>p) << 2));
        acc += load<f32>(scores + ((<usize>p) << 2)) * load<f32>(values + slot + kvOffset + off);
      }
      store<f32>(oh + off, acc * inverse);
    }
  }
}
