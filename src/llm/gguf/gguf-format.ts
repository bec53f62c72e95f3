// GGUF (version 3), the file format of llama.cpp / ggml, as far as an F32 writer and its
// reader need it. All integers little-endian.
//
//   "GGUF" u32 version=3  u64 tensorCount  u64 metadataCount
//   metadata × metadataCount:  string key  u32 valueType  value
//   tensor info × tensorCount: string name  u32 nDims  u64 dims[nDims]  u32 ggmlType  u64 offset
//   zero padding to `alignment`, then the tensor data, each tensor at dataStart + offset
//   (offsets are multiples of `alignment`, ggml's default 32 unless general.alignment says).
//
// A string is u64 byte length + UTF-8 bytes (no terminator); an array is u32 item type +
// u64 count + items. Tensor dims are ggml's order, innermost first: a row-major PyTorch
// [outFeatures, inFeatures] matrix is dims [inFeatures, outFeatures] with the same bytes.

export const ggufMagic = 0x46554747; // "GGUF" read as a little-endian u32
export const ggufVersion = 3;
export const ggufDefaultAlignment = 32;
/** ggml_type of float32 tensors. */
export const ggmlTypeF32 = 0;

/** gguf_type codes of metadata values. */
export const ggufValueTypes = {
  uint8: 0,
  int8: 1,
  uint16: 2,
  int16: 3,
  uint32: 4,
  int32: 5,
  float32: 6,
  bool: 7,
  string: 8,
  array: 9,
  uint64: 10,
  int64: 11,
  float64: 12,
} as const;

export type GgufScalarType = Exclude<keyof typeof ggufValueTypes, 'array'>;

/** A metadata value as written: scalars, and arrays of one scalar type. */
export type GgufValue =
  | {
      readonly type:
        'uint32' | 'int32' | 'float32' | 'uint8' | 'int8' | 'uint16' | 'int16' | 'float64';
      readonly value: number;
    }
  | { readonly type: 'uint64' | 'int64'; readonly value: bigint }
  | { readonly type: 'bool'; readonly value: boolean }
  | { readonly type: 'string'; readonly value: string }
  | { readonly type: 'array'; readonly itemType: 'string'; readonly value: readonly string[] }
  | {
      readonly type: 'array';
      readonly itemType: 'uint32' | 'int32' | 'float32';
      readonly value: readonly number[];
    };

/** llama.cpp's token types (tokenizer.ggml.token_type). */
export const ggufTokenTypes = {
  normal: 1,
  unknown: 2,
  control: 3,
  userDefined: 4,
  unused: 5,
  byte: 6,
} as const;
