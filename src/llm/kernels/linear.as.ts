// AssemblyScript source of the WebAssembly SIMD kernels (compiled by `npm run build:kernels`
// to linear.wasm, which is committed; test/llm/kernels checks the two agree). Not TypeScript:
// tsc, eslint and the test runner skip *.as.ts.
//
// linear: y = x · Wᵀ with x [rows, inFeatures], W [outFeatures, inFeatures], y [rows,
// outFeatures], all f32, addressed by byte offsets into the shared memory; x and y row-major,
// W in the panel layout of packed-matrix.ts (four rows interleaved four floats at a time, so
// the four weight rows a pass reads are one sequential stream; the last outFeatures % 4 rows
// plain). Four weight rows by two input rows a pass: each weight vector loaded is used for
// two rows, each input vector for four outputs; eight f32x4 accumulators stay in registers.

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
  const tail = inF - vecEnd;
  let o = 0;
  for (; o + 4 <= outF; o += 4) {
    // The panel of rows o … o+3: chunk i of the four rows at panel + 4·(byte offset of i),
    // then the four rows' tails of `tail` floats each.
    const panel = w + (<usize>o) * rowBytes;
    const tails = panel + ((<usize>vecEnd) << 4);
    const t1 = tails + ((<usize>tail) << 2);
    const t2 = t1 + ((<usize>tail) << 2);
    const t3 = t2 + ((<usize>tail) << 2);
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
        const k = panel + (off << 2);
        const v0 = v128.load(x0 + off);
        const v1 = v128.load(x1 + off);
        const k0 = v128.load(k);
        const k1 = v128.load(k, 16);
        const k2 = v128.load(k, 32);
        const k3 = v128.load(k, 48);
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
      for (let j: usize = 0; i < inF; i++, j += 4) {
        const off = (<usize>i) << 2;
        const v0 = load<f32>(x0 + off);
        const v1 = load<f32>(x1 + off);
        const k0 = load<f32>(tails + j);
        const k1 = load<f32>(t1 + j);
        const k2 = load<f32>(t2 + j);
        const k3 = load<f32>(t3 + j);
        s00 += v0 * k0;
        s01 += v0 * k1;
        s02 += v0 * k2;
        s03 += v0 * k3;
        s10 += v1 * k0;
        s11 += v1 * k1;
        s12 += v1 * k2;
        s13 += v1 * k3;
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
    // The last odd row (and the whole of a one-row decode step): the panel against it in one
    // pass, four independent accumulators, so the adds do not wait on each other.
    for (; r < rows; r++) {
      const xr = x + (<usize>r) * rowBytes;
      let a0 = f32x4.splat(0);
      let a1 = f32x4.splat(0);
      let a2 = f32x4.splat(0);
      let a3 = f32x4.splat(0);
      let i = 0;
      for (; i < vecEnd; i += 4) {
        const off = (<usize>i) << 2;
        const k = panel + (off << 2);
        const v = v128.load(xr + off);
        a0 = f32x4.add(a0, f32x4.mul(v, v128.load(k)));
        a1 = f32x4.add(a1, f32x4.mul(v, v128.load(k, 16)));
        a2 = f32x4.add(a2, f32x4.mul(v, v128.load(k, 32)));
        a3 = f32x4.add(a3, f32x4.mul(v, v128.load(k, 48)));
      }
      let s0 = hsum(a0);
      let s1 = hsum(a1);
      let s2 = hsum(a2);
      let s3 = hsum(a3);
      for (let j: usize = 0; i < inF; i++, j += 4) {
        const v = load<f32>(xr + ((<usize>i) << 2));
        s0 += v * load<f32>(tails + j);
        s1 += v * load<f32>(t1 + j);
        s2 += v * load<f32>(t2 + j);
        s3 += v * load<f32>(t3 + j);
      }
      const yr = y + (<usize>r) * outBytes + ((<usize>o) << 2);
      store<f32>(yr, s0);
      store<f32>(yr + 4, s1);
      store<f32>(yr + 8, s2);
      store<f32>(yr + 12, s3);
    }
  }
  // The last outFeatures % 4 rows are stored plain.
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

// exp of four f32 lanes: Cephes' expf (range reduction by ln 2 in two parts, a degree-6
// polynomial, the exponent added to the bits), within ~2 ulp of the correctly rounded value.
// Inputs are clamped to [-87.3, 88.3], where 2^n stays a normal float: below, the result is
// ~1e-38 instead of 0, which a softmax sum of at least 1 cannot tell apart.
@inline
function expLanes(x: v128): v128 {
  // pmin/pmax: single instructions (min/max carry NaN and -0 rules that cost several).
  x = f32x4.pmin(f32x4.pmax(x, f32x4.splat(-87.33654)), f32x4.splat(88.37626));
  // n = round(x / ln 2) by the 1.5·2²³ trick: the sum's low mantissa bits hold n itself.
  const magic = f32x4.splat(12582912.0);
  const shifted = f32x4.add(f32x4.mul(x, f32x4.splat(1.442695041)), magic);
  const n = f32x4.sub(shifted, magic);
  let r = f32x4.sub(x, f32x4.mul(n, f32x4.splat(0.693359375)));
  r = f32x4.sub(r, f32x4.mul(n, f32x4.splat(-2.12194440e-4)));
  let p = f32x4.splat(1.9875691500e-4);
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(1.3981999507e-3));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(8.3334519073e-3));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(4.1665795894e-2));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(1.6666665459e-1));
  p = f32x4.add(f32x4.mul(p, r), f32x4.splat(5.0000001201e-1));
  p = f32x4.add(f32x4.add(f32x4.mul(f32x4.mul(p, r), r), r), f32x4.splat(1));
  // 2^n: n + 127 in the exponent field (n's bits are shifted's minus magic's).
  const exponent = i32x4.add(i32x4.sub(shifted, magic), i32x4.splat(127));
  return f32x4.mul(p, i32x4.shl(exponent, 23));
}

/** [Σa, Σb, Σc, Σd]: the four lanes of each of four vectors summed, as one vector. */
@inline
function sum4(a: v128, b: v128, c: v128, d: v128): v128 {
  const ab = f32x4.add(i32x4.shuffle(a, b, 0, 4, 1, 5), i32x4.shuffle(a, b, 2, 6, 3, 7));
  const cd = f32x4.add(i32x4.shuffle(c, d, 0, 4, 1, 5), i32x4.shuffle(c, d, 2, 6, 3, 7));
  return f32x4.add(i32x4.shuffle(ab, cd, 0, 1, 4, 5), i32x4.shuffle(ab, cd, 2, 3, 6, 7));
}

/** gate[i] = silu(gate[i]) · up[i] = gate[i] / (1 + e^-gate[i]) · up[i], n % 4 == 0 or not. */
export function siluMul(gate: usize, up: usize, n: i32): void {
  const one = f32x4.splat(1);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = (<usize>i) << 2;
    const g = v128.load(gate + o);
    const e = expLanes(f32x4.neg(g));
    v128.store(gate + o, f32x4.mul(f32x4.div(g, f32x4.add(one, e)), v128.load(up + o)));
  }
  for (; i < n; i++) {
    const o = (<usize>i) << 2;
    const g = load<f32>(gate + o);
    const e = f32x4.extract_lane(expLanes(f32x4.splat(-g)), 0);
    store<f32>(gate + o, (g / (1 + e)) * load<f32>(up + o));
  }
}

/**
 * out[r] = x[r] / √(mean(x[r]²) + eps) ⊙ weight, per row of `width` floats: Hugging Face's
 * LlamaRMSNorm (the mean of squares in float32, here summed in float64 first; the inverse
 * root rounded to float32; x·inverse rounded, then times the weight).
 */
export function rmsNorm(
  x: usize,
  weight: usize,
  out: usize,
  rows: i32,
  width: i32,
  eps: f64,
): void {
  const rowBytes = (<usize>width) << 2;
  const vecEnd = width & ~3;
  for (let r = 0; r < rows; r++) {
    const xr = x + (<usize>r) * rowBytes;
    const or = out + (<usize>r) * rowBytes;
    let acc0 = f64x2.splat(0);
    let acc1 = f64x2.splat(0);
    let i = 0;
    for (; i < vecEnd; i += 4) {
      const v = v128.load(xr + ((<usize>i) << 2));
      const lo = f64x2.promote_low_f32x4(v);
      const hi = f64x2.promote_low_f32x4(i32x4.shuffle(v, v, 2, 3, 0, 1));
      acc0 = f64x2.add(acc0, f64x2.mul(lo, lo));
      acc1 = f64x2.add(acc1, f64x2.mul(hi, hi));
    }
    const acc = f64x2.add(acc0, acc1);
    let squares = f64x2.extract_lane(acc, 0) + f64x2.extract_lane(acc, 1);
    for (; i < width; i++) {
      const value = <f64>load<f32>(xr + ((<usize>i) << 2));
      squares += value * value;
    }
    const inverse = <f32>(1 / Math.sqrt(<f64>(<f32>(squares / <f64>width)) + eps));
    const inverse4 = f32x4.splat(inverse);
    i = 0;
    for (; i < vecEnd; i += 4) {
      const o = (<usize>i) << 2;
      const scaled = f32x4.mul(v128.load(xr + o), inverse4);
      v128.store(or + o, f32x4.mul(v128.load(weight + o), scaled));
    }
    for (; i < width; i++) {
      const o = (<usize>i) << 2;
      store<f32>(or + o, load<f32>(weight + o) * (load<f32>(xr + o) * inverse));
    }
  }
}

/**
 * Rotary position embedding in place, Hugging Face's rotate_half convention: in each head of
 * each row, the pair (i, i + headDim/2) is rotated by that row's angle i:
 *   a' = a·cos − b·sin,  b' = b·cos + a·sin
 * data f32 [rows, heads, headDim]; cos, sin f32 [rows, headDim/2] (each row's position).
 */
export function rope(
  data: usize,
  rows: i32,
  heads: i32,
  headDim: i32,
  cos: usize,
  sin: usize,
): void {
  const half = headDim >> 1;
  const halfBytes = (<usize>half) << 2;
  const headBytes = (<usize>headDim) << 2;
  const vecEnd = half & ~3;
  for (let r = 0; r < rows; r++) {
    const cr = cos + (<usize>r) * halfBytes;
    const sr = sin + (<usize>r) * halfBytes;
    for (let h = 0; h < heads; h++) {
      const a = data + (<usize>(r * heads + h)) * headBytes;
      const b = a + halfBytes;
      let i = 0;
      for (; i < vecEnd; i += 4) {
        const o = (<usize>i) << 2;
        const av = v128.load(a + o);
        const bv = v128.load(b + o);
        const c = v128.load(cr + o);
        const s = v128.load(sr + o);
        v128.store(a + o, f32x4.sub(f32x4.mul(av, c), f32x4.mul(bv, s)));
        v128.store(b + o, f32x4.add(f32x4.mul(bv, c), f32x4.mul(av, s)));
      }
      for (; i < half; i++) {
        const o = (<usize>i) << 2;
        const av = load<f32>(a + o);
        const bv = load<f32>(b + o);
        const c = load<f32>(cr + o);
        const s = load<f32>(sr + o);
        store<f32>(a + o, av * c - bv * s);
        store<f32>(b + o, bv * c + av * s);
      }
    }
  }
}

/** x[i] += y[i] for n floats. */
export function addInPlace(x: usize, y: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = (<usize>i) << 2;
    v128.store(x + o, f32x4.add(v128.load(x + o), v128.load(y + o)));
  }
  for (; i < n; i++) {
    const o = (<usize>i) << 2;
    store<f32>(x + o, load<f32>(x + o) + load<f32>(y + o));
  }
}

/**
 * Causal attention of one token row over its sequence's cached positions, every head:
 *   q      f32 [numHeads, headDim]                 at byte offset q (headDim % 4 == 0)
 *   keys / values: the layer's block-pool arrays; position p's kv head g starts at byte
 *          offset keys + slots[p] + g·headDim·4 (slots: i32 [visible], byte offsets of kv head 0)
 *   out    f32 [numHeads, headDim]
 *   scores f32 [groupSize, stride] scratch, stride = visible rounded up to a multiple of 4
 * Query head h reads kv head ⌊h / groupSize⌋ (grouped-query attention). The heads of a group
 * are done together, so each cached key and value is loaded once a group, not once a head.
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
  const strideBytes = (<usize>((visible + 3) & ~3)) << 2;
  const numGroups = numHeads / groupSize;
  const scale4 = f32x4.splat(scale);
  for (let g = 0; g < numGroups; g++) {
    const kvOffset = (<usize>g) * headBytes;
    const firstHead = g * groupSize;
    // Scores: four positions at a time, their four partial-sum vectors reduced together.
    for (let j = 0; j < groupSize; j++) {
      const qh = q + (<usize>(firstHead + j)) * headBytes;
      const sh = scores + (<usize>j) * strideBytes;
      let p = 0;
      for (; p + 4 <= visible; p += 4) {
        const k0 = keys + (<usize>load<i32>(slots + ((<usize>p) << 2))) + kvOffset;
        const k1 = keys + (<usize>load<i32>(slots + ((<usize>p) << 2) + 4)) + kvOffset;
        const k2 = keys + (<usize>load<i32>(slots + ((<usize>p) << 2) + 8)) + kvOffset;
        const k3 = keys + (<usize>load<i32>(slots + ((<usize>p) << 2) + 12)) + kvOffset;
        let a0 = f32x4.splat(0);
        let a1 = f32x4.splat(0);
        let a2 = f32x4.splat(0);
        let a3 = f32x4.splat(0);
        for (let c: usize = 0; c < headBytes; c += 16) {
          const qv = v128.load(qh + c);
          a0 = f32x4.add(a0, f32x4.mul(qv, v128.load(k0 + c)));
          a1 = f32x4.add(a1, f32x4.mul(qv, v128.load(k1 + c)));
          a2 = f32x4.add(a2, f32x4.mul(qv, v128.load(k2 + c)));
          a3 = f32x4.add(a3, f32x4.mul(qv, v128.load(k3 + c)));
        }
        v128.store(sh + ((<usize>p) << 2), f32x4.mul(sum4(a0, a1, a2, a3), scale4));
      }
      for (; p < visible; p++) {
        const slot = <usize>load<i32>(slots + ((<usize>p) << 2));
        store<f32>(sh + ((<usize>p) << 2), dot(qh, keys + slot + kvOffset, headDim) * scale);
      }
    }
    // Softmax numerators in place (normalised at the end): e^(s - max), and their sum.
    for (let j = 0; j < groupSize; j++) {
      const sh = scores + (<usize>j) * strideBytes;
      let maxLanes = f32x4.splat(-Infinity);
      let p = 0;
      for (; p + 4 <= visible; p += 4)
        maxLanes = f32x4.pmax(maxLanes, v128.load(sh + ((<usize>p) << 2)));
      maxLanes = f32x4.pmax(maxLanes, i32x4.shuffle(maxLanes, maxLanes, 2, 3, 0, 1));
      maxLanes = f32x4.pmax(maxLanes, i32x4.shuffle(maxLanes, maxLanes, 1, 0, 3, 2));
      let max = f32x4.extract_lane(maxLanes, 0);
      for (; p < visible; p++) {
        const s = load<f32>(sh + ((<usize>p) << 2));
        if (s > max) max = s;
      }
      const max4 = f32x4.splat(max);
      let sum4v = f32x4.splat(0);
      p = 0;
      for (; p + 4 <= visible; p += 4) {
        const at = sh + ((<usize>p) << 2);
        const e = expLanes(f32x4.sub(v128.load(at), max4));
        v128.store(at, e);
        sum4v = f32x4.add(sum4v, e);
      }
      let sum = hsum(sum4v);
      for (; p < visible; p++) {
        const at = sh + ((<usize>p) << 2);
        const e = f32x4.extract_lane(expLanes(f32x4.splat(load<f32>(at) - max)), 0);
        store<f32>(at, e);
        sum += e;
      }
      // Keep 1/sum where the head's output goes; it is read back once the weighted sum is done.
      store<f32>(out + (<usize>(firstHead + j)) * headBytes, 1 / sum);
    }
    // out_h = Σ_p weight_hp · v_p / sum_h: two heads at a time share each value vector loaded.
    let j = 0;
    for (; j + 2 <= groupSize; j += 2) {
      const s0 = scores + (<usize>j) * strideBytes;
      const s1 = s0 + strideBytes;
      const o0 = out + (<usize>(firstHead + j)) * headBytes;
      const o1 = o0 + headBytes;
      const inverse0 = f32x4.splat(load<f32>(o0));
      const inverse1 = f32x4.splat(load<f32>(o1));
      let c: usize = 0;
      for (; c + 32 <= headBytes; c += 32) {
        let a0 = f32x4.splat(0);
        let a1 = f32x4.splat(0);
        let b0 = f32x4.splat(0);
        let b1 = f32x4.splat(0);
        for (let p = 0; p < visible; p++) {
          const base = values + (<usize>load<i32>(slots + ((<usize>p) << 2))) + kvOffset + c;
          const v0 = v128.load(base);
          const v1 = v128.load(base + 16);
          const w0 = f32x4.splat(load<f32>(s0 + ((<usize>p) << 2)));
          const w1 = f32x4.splat(load<f32>(s1 + ((<usize>p) << 2)));
          a0 = f32x4.add(a0, f32x4.mul(w0, v0));
          a1 = f32x4.add(a1, f32x4.mul(w0, v1));
          b0 = f32x4.add(b0, f32x4.mul(w1, v0));
          b1 = f32x4.add(b1, f32x4.mul(w1, v1));
        }
        v128.store(o0 + c, f32x4.mul(a0, inverse0));
        v128.store(o0 + c + 16, f32x4.mul(a1, inverse0));
        v128.store(o1 + c, f32x4.mul(b0, inverse1));
        v128.store(o1 + c + 16, f32x4.mul(b1, inverse1));
      }
      for (; c < headBytes; c += 16) {
        let a0 = f32x4.splat(0);
        let b0 = f32x4.splat(0);
        for (let p = 0; p < visible; p++) {
          const v0 = v128.load(
            values + (<usize>load<i32>(slots + ((<usize>p) << 2))) + kvOffset + c,
          );
          a0 = f32x4.add(a0, f32x4.mul(f32x4.splat(load<f32>(s0 + ((<usize>p) << 2))), v0));
          b0 = f32x4.add(b0, f32x4.mul(f32x4.splat(load<f32>(s1 + ((<usize>p) << 2))), v0));
        }
        v128.store(o0 + c, f32x4.mul(a0, inverse0));
        v128.store(o1 + c, f32x4.mul(b0, inverse1));
      }
    }
    if (j < groupSize) {
      const s0 = scores + (<usize>j) * strideBytes;
      const o0 = out + (<usize>(firstHead + j)) * headBytes;
      const inverse0 = f32x4.splat(load<f32>(o0));
      for (let c: usize = 0; c < headBytes; c += 16) {
        let a0 = f32x4.splat(0);
        for (let p = 0; p < visible; p++) {
          const v0 = v128.load(
            values + (<usize>load<i32>(slots + ((<usize>p) << 2))) + kvOffset + c,
          );
          a0 = f32x4.add(a0, f32x4.mul(f32x4.splat(load<f32>(s0 + ((<usize>p) << 2))), v0));
        }
        v128.store(o0 + c, f32x4.mul(a0, inverse0));
      }
    }
  }
}
