// What an objective does to the summed margins to make predictions. Each library applies the
// same few functions; only the precision differs, and that is the caller's choice of output
// array (XGBoost works in float32, LightGBM in double).

export type OutputTransform =
  | { readonly kind: 'identity' }
  /** 1 / (1 + exp(-scale·x)) per column (binary, LightGBM multiclassova, cross_entropy). */
  | { readonly kind: 'sigmoid'; readonly scale: number }
  /** exp(x) (poisson, gamma, tweedie). */
  | { readonly kind: 'exp' }
  /** softmax over each row's columns (multiclass probabilities). */
  | { readonly kind: 'softmax' }
  /** the index of each row's largest margin, as a number (XGBoost multi:softmax). */
  | { readonly kind: 'argmax' }
  /** x > 0 ? 1 : 0 (XGBoost binary:hinge). */
  | { readonly kind: 'hinge' }
  /** sign(x)·x² (LightGBM regression with reg_sqrt). */
  | { readonly kind: 'signed-square' }
  /** log(1 + exp(x)) (LightGBM cross_entropy_lambda). */
  | { readonly kind: 'softplus' };

/** Columns a prediction has per row for a model with `numGroups` margin columns. */
export function outputColumns(transform: OutputTransform, numGroups: number): number {
  return transform.kind === 'argmax' ? 1 : numGroups;
}

/**
 * margins: numRows × numGroups; out: numRows × outputColumns. `out` may be a Float32Array,
 * in which case every result is rounded to float32 as it is stored.
 */
export function applyTransform(
  transform: OutputTransform,
  margins: Float32Array | Float64Array,
  numRows: number,
  numGroups: number,
  out: Float32Array | Float64Array,
): void {
  const n = numRows * numGroups;
  switch (transform.kind) {
    case 'identity':
      out.set(margins);
      return;
    case 'sigmoid': {
      const scale = transform.scale;
      for (let i = 0; i < n; i += 1) out[i] = 1 / (1 + Math.exp(-scale * (margins[i] ?? 0)));
      return;
    }
    case 'exp':
      for (let i = 0; i < n; i += 1) out[i] = Math.exp(margins[i] ?? 0);
      return;
    case 'hinge':
      for (let i = 0; i < n; i += 1) out[i] = (margins[i] ?? 0) > 0 ? 1 : 0;
      return;
    case 'signed-square':
      for (let i = 0; i < n; i += 1) {
        const x = margins[i] ?? 0;
        out[i] = Math.sign(x) * x * x;
      }
      return;
    case 'softplus':
      for (let i = 0; i < n; i += 1) out[i] = Math.log1p(Math.exp(margins[i] ?? 0));
      return;
    case 'softmax':
      for (let r = 0; r < numRows; r += 1) softmaxRow(margins, r * numGroups, numGroups, out);
      return;
    case 'argmax':
      for (let r = 0; r < numRows; r += 1) {
        const base = r * numGroups;
        let best = 0;
        for (let k = 1; k < numGroups; k += 1) {
          if ((margins[base + k] ?? 0) > (margins[base + best] ?? 0)) best = k;
        }
        out[r] = best;
      }
      return;
  }
}

/** exp(x - max) / sum, as both libraries write it (the max keeps exp from overflowing). */
function softmaxRow(
  margins: Float32Array | Float64Array,
  base: number,
  numGroups: number,
  out: Float32Array | Float64Array,
): void {
  let max = margins[base] ?? 0;
  for (let k = 1; k < numGroups; k += 1) max = Math.max(max, margins[base + k] ?? 0);
  let sum = 0;
  for (let k = 0; k < numGroups; k += 1) {
    const e = Math.exp((margins[base + k] ?? 0) - max);
    out[base + k] = e;
    sum += e;
  }
  for (let k = 0; k < numGroups; k += 1) out[base + k] = (out[base + k] ?? 0) / sum;
}
