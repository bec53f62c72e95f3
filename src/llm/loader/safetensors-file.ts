// One safetensors file, opened for reading tensors by name. The header is parsed by the
// registry's parser (src/registry/formats/safetensors.ts, which reads only the 8 + N header
// bytes and already refuses overlapping tensors, bad sizes and tensors past the end of the
// file). The loader adds the rule the safetensors reference implementation enforces and the
// registry parser leaves out: the tensors must tile the data section exactly.
//
//   [ u64 N ][ JSON header (N bytes) ][ t0 bytes ][ t1 bytes ] ... [ tk bytes ]
//                                     ^ dataStart                             ^ file size
//   sorted by offset: t0.begin = 0, t(i).begin = t(i-1).end, tk.end = dataBytes
//
// A gap or trailing bytes mean the header does not describe the file it sits in (a writer
// bug, or a header edited after the fact), so the weights it points at cannot be trusted.

import { fileArtifact } from '../../registry/formats/file-artifact.ts';
import {
  readSafetensorsHeader,
  type SafetensorsHeader,
  type SafetensorsTensor,
} from '../../registry/formats/safetensors.ts';

export interface SafetensorsFile {
  /** Path on disk, as given to openSafetensorsFile; used in every message about this file. */
  readonly path: string;
  readonly header: SafetensorsHeader;
  readonly tensorsByName: ReadonlyMap<string, SafetensorsTensor>;
}

export type SafetensorsFileResult =
  | { readonly ok: true; readonly file: SafetensorsFile }
  /** `missing`: the file does not exist (callers name what should have been there). */
  | { readonly ok: false; readonly missing: boolean; readonly message: string };

export async function openSafetensorsFile(path: string): Promise<SafetensorsFileResult> {
  let parsed;
  try {
    parsed = await readSafetensorsHeader(await fileArtifact(path, path));
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
    const message = missing
      ? `${path}: not found`
      : `${path}: cannot be read (${describeError(error)})`;
    return { ok: false, missing, message };
  }
  if (!parsed.ok) return { ok: false, missing: false, message: parsed.reason };
  const { header } = parsed;
  const gap = findUncoveredBytes(header);
  if (gap !== null) return { ok: false, missing: false, message: `${path}: ${gap}` };
  const tensorsByName = new Map<string, SafetensorsTensor>();
  for (const tensor of header.tensors) tensorsByName.set(tensor.name, tensor);
  return { ok: true, file: { path, header, tensorsByName } };
}

/** Bytes of the data section that belong to no tensor, described; null when tiled exactly. */
function findUncoveredBytes(header: SafetensorsHeader): string | null {
  // Zero-size tensors occupy no bytes and may sit anywhere; overlaps were refused already.
  const sorted = header.tensors
    .filter((t) => t.dataOffsets[1] > t.dataOffsets[0])
    .sort((a, b) => a.dataOffsets[0] - b.dataOffsets[0]);
  let covered = 0;
  let previous: SafetensorsTensor | null = null;
  for (const tensor of sorted) {
    const [begin] = tensor.dataOffsets;
    if (begin > covered) {
      const where =
        previous === null
          ? `before the first tensor '${tensor.name}'`
          : `after tensor '${previous.name}' and before tensor '${tensor.name}'`;
      return `the header does not cover the data: bytes [${covered}, ${begin}) ${where} belong to no tensor`;
    }
    covered = tensor.dataOffsets[1];
    previous = tensor;
  }
  if (covered < header.dataBytes) {
    const where = previous === null ? '' : ` after the last tensor '${previous.name}'`;
    return (
      `the header does not cover the data: ${header.dataBytes - covered} bytes${where} ` +
      `belong to no tensor (the data section is ${header.dataBytes} bytes)`
    );
  }
  return null;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
