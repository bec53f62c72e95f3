// RoPE inverse frequencies, computed as transformers computes them (modeling_rope_utils.py),
// step by step in float32 so the result matches PyTorch's `inv_freq` buffer:
//
//   default:  inv_freq[i] = 1 / theta^(2i / headDim)              i = 0 .. headDim/2 - 1
//             (arange(0, dim, 2).float() / dim, then pow, then reciprocal: each rounded to f32)
//   linear:   inv_freq / factor           (transformers divides positions by factor; the
//                                           angle position * inv_freq is the same)
//   llama3:   wavelen = 2π / inv_freq
//             wavelen < original / high_freq_factor  → inv_freq                 (high freq)
//             wavelen > original / low_freq_factor   → inv_freq / factor        (low freq)
//             otherwise, with s = (original / wavelen - low) / (high - low):
//                            (1 - s) * inv_freq / factor + s * inv_freq         (smooth ramp)
//
// PyTorch evaluates `scalar / tensor` as `tensor.reciprocal() * scalar` and rounds Python
// scalars to float32 before combining them with a float32 tensor; the helpers below do the
// same. The one libm call (pow) can differ from PyTorch's by an ulp on some inputs; that is
// far inside the 1e-3 logits tolerance, and the tests pin the values PyTorch gives.

import type { LlamaConfig } from './llama-config.ts';

const f = Math.fround;

/** Length headDim / 2: the rotation speed of each dimension pair, in radians per position. */
export function ropeInverseFrequencies(
  config: Pick<LlamaConfig, 'headDim' | 'ropeTheta' | 'ropeScaling'>,
): Float32Array {
  const { headDim, ropeTheta, ropeScaling } = config;
  const half = headDim / 2;
  const inverse = new Float32Array(half);
  const base = f(ropeTheta);
  for (let i = 0; i < half; i += 1) {
    const exponent = f((2 * i) / headDim);
    inverse[i] = f(1 / f(Math.pow(base, exponent)));
  }
  if (ropeScaling === null) return inverse;
  switch (ropeScaling.type) {
    case 'linear': {
      const factor = f(ropeScaling.factor);
      for (let i = 0; i < half; i += 1) inverse[i] = f((inverse[i] ?? 0) / factor);
      return inverse;
    }
    case 'llama3':
      return llama3Scaling(inverse, ropeScaling);
  }
}

function llama3Scaling(
  inverse: Float32Array,
  scaling: Extract<NonNullable<LlamaConfig['ropeScaling']>, { type: 'llama3' }>,
): Float32Array {
  const original = scaling.originalMaxPositionEmbeddings;
  // Python float arithmetic (double), then rounded when compared with the float32 tensor.
  const lowFreqWavelen = f(original / scaling.lowFreqFactor);
  const highFreqWavelen = f(original / scaling.highFreqFactor);
  const factor = f(scaling.factor);
  const low = f(scaling.lowFreqFactor);
  const ramp = f(scaling.highFreqFactor - scaling.lowFreqFactor);
  const twoPi = f(2 * Math.PI);
  const originalF32 = f(original);
  const out = new Float32Array(inverse.length);
  for (let i = 0; i < inverse.length; i += 1) {
    const frequency = inverse[i] ?? 0;
    const wavelen = f(f(1 / frequency) * twoPi);
    const scaled = wavelen > lowFreqWavelen ? f(frequency / factor) : frequency;
    const isMedium = !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen);
    if (!isMedium) {
      out[i] = scaled;
      continue;
    }
    const smooth = f(f(f(f(1 / wavelen) * originalF32) - low) / ramp);
    out[i] = f(f(f(f(1 - smooth) * scaled) / factor) + f(smooth * scaled));
  }
  return out;
}
