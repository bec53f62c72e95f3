// What a format validator sees of an artifact: its files, by manifest path, readable by range.
// The registry backs these with verified blobs in the content-addressed store; tests back
// them with plain files. Validators must read only what they need (headers, a directory at
// the end of a zip), never whole multi-gigabyte weight files.

export interface ArtifactFile {
  /** POSIX path inside the artifact, e.g. `model.onnx` or `tokenizer.json`. */
  readonly path: string;
  /** Size in bytes. */
  readonly size: number;
  /** Reads `length` bytes from `offset` (fewer only at end of file). */
  read(offset: number, length: number): Promise<Buffer>;
}

export type ModelFormat = 'onnx' | 'xgboost' | 'lightgbm' | 'hf-llm' | 'external';

export const modelFormats: readonly ModelFormat[] = [
  'onnx',
  'xgboost',
  'lightgbm',
  'hf-llm',
  'external',
];

/** What a format check learned about the artifact; stored with the version as `formatInfo`. */
export type FormatInfo = Readonly<Record<string, unknown>>;

export type FormatCheck =
  | { readonly ok: true; readonly info: FormatInfo }
  | { readonly ok: false; readonly reason: string; readonly path?: string };

export type PickleFinding = {
  /** Human words for what was found, e.g. "Python pickle (protocol 4)", "PyTorch zip checkpoint". */
  readonly kind: string;
};
