// Pickle detection. Loading a pickle runs code chosen by whoever wrote it, so the registry
// refuses pickle-based files whatever they are called. Detection is by content (names lie:
// Hugging Face's pytorch_model.bin is a pickle) and, for the usual extensions, by name.
//
// What counts, in the order checked:
//   ZIP archive listing a *.pkl (PyTorch >= 1.6 `torch.save`), or a ZIP we cannot list
//   NumPy .npy of dtype object (np.load(allow_pickle=True) unpickles it)
//   0x80 <protocol 2..5> + valid opcodes (pickle.dumps, joblib.dump, legacy torch.save)
//   zlib / gzip stream whose first bytes inflate to a pickle (joblib.dump(compress=...))
//   joblib's legacy "ZF0x" header; xz, lz4, bzip2, lzma streams (joblib's other compressors,
//   which node:zlib cannot open: a model artifact of ours never needs them)
//   protocol 0/1 pickles: valid opcodes from byte 0 to a final STOP ('.'); or, followed
//   through the file window by window (a long string argument is skipped, not read), valid
//   opcodes up to a STOP anywhere that import a name (GLOBAL, INST, STACK_GLOBAL: what
//   running code needs), since Python ignores whatever follows the STOP

import { constants, gunzipSync, inflateSync } from 'node:zlib';
import type { ArtifactFile, PickleFinding } from './artifact-file.ts';
import { scanPickle } from './pickle-opcodes.ts';
import { readZipDirectory } from './zip-directory.ts';

const headBytes = 64 << 10;
/** Compressed bytes inflated to look inside (zlib's worst-case ratio keeps the output < 4 MiB). */
const compressedPeekBytes = 4 << 10;
/** PROTO plus this many valid opcodes is a pickle even if raw bytes follow (joblib arrays). */
const minBinaryPrefixOpcodes = 8;

// LONG1 of torch's legacy magic number 0x1950a86a20f9469cfc6c, right after PROTO 2.
const torchLegacyMagic = Buffer.from([
  0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19,
]);

const numpyMagic = Buffer.from('\x93NUMPY', 'latin1');

const names: readonly [RegExp, string][] = [
  [/\.(pkl|pickle)$/, 'Python pickle'],
  [/\.joblib$/, 'joblib file'],
  [/\.(pt|pth)$/, 'PyTorch checkpoint'],
  [/\.ckpt$/, 'checkpoint (usually a PyTorch Lightning pickle)'],
  [/\.(pkl|pickle|joblib)\.(gz|bz2|xz|lzma|z|lz4|zip)$/, 'compressed Python pickle'],
];

/** Refuses by extension alone: .pkl .pickle .joblib .pt .pth .ckpt (and compressed pickles). */
export function pickleByName(path: string): PickleFinding | null {
  const lower = path.toLowerCase();
  for (const [pattern, what] of names) {
    const match = pattern.exec(lower);
    if (match !== null) return { kind: `${what} (by its ${match[0]} name)` };
  }
  return null;
}

export async function detectPickle(file: ArtifactFile): Promise<PickleFinding | null> {
  if (file.size < 2) return null;
  const head = await file.read(0, Math.min(file.size, headBytes));
  if (head.length >= 4 && head.readUInt32BE(0) === 0x504b0304 /* PK\3\4 */) return zipFinding(file);
  if (head.subarray(0, 6).equals(numpyMagic)) return numpyFinding(head);
  return binaryPickle(head, file.size) ?? compressedPickle(head) ?? (await textPickle(file, head));
}

/** The first pickle among `files`, checked by name and then by content. */
export async function findPickle(
  files: readonly ArtifactFile[],
): Promise<{ readonly path: string; readonly kind: string } | null> {
  for (const file of files) {
    const finding = pickleByName(file.path) ?? (await detectPickle(file));
    if (finding !== null) return { path: file.path, kind: finding.kind };
  }
  return null;
}

async function zipFinding(file: ArtifactFile): Promise<PickleFinding | null> {
  const directory = await readZipDirectory(file);
  if (!directory.ok) {
    return {
      kind: `ZIP archive whose entries cannot be listed (${directory.reason}); PyTorch checkpoints are ZIP archives`,
    };
  }
  const pickled = directory.entries.find((entry) => entry.toLowerCase().endsWith('.pkl'));
  if (pickled !== undefined) {
    const torch =
      pickled.endsWith('data.pkl') || directory.entries.some((e) => e.endsWith('/version'));
    return {
      kind: torch
        ? `PyTorch zip checkpoint (contains ${pickled})`
        : `ZIP archive containing a pickle (${pickled})`,
    };
  }
  const named = directory.entries.find((entry) => pickleByName(entry) !== null);
  return named === undefined ? null : { kind: `ZIP archive containing a pickle (${named})` };
}

/**
 * A .npy of dtype object ('O', '|O', alone or in a record) stores its items as a pickle. A
 * header longer than we read (numpy lifts its limit with allow_pickle) is refused too.
 */
function numpyFinding(head: Buffer): PickleFinding | null {
  if (head.length < 12) return null;
  const major = head[6];
  const headerLength = major === 1 ? head.readUInt16LE(8) : head.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  if (start + headerLength > head.length)
    return { kind: 'NumPy array whose header is too long to inspect (object arrays are pickles)' };
  const header = head.toString('latin1', start, start + headerLength);
  return /['"][|<>=]?O\d*['"]/.test(header)
    ? { kind: 'NumPy object array (its items are stored as a pickle)' }
    : null;
}

/** Protocol 2-5: PROTO opcode first. */
function binaryPickle(bytes: Buffer, streamBytes: number): PickleFinding | null {
  const protocol = binaryPickleProtocol(bytes, streamBytes);
  if (protocol === null) return null;
  if (bytes.subarray(2, 2 + torchLegacyMagic.length).equals(torchLegacyMagic)) {
    return { kind: `PyTorch legacy checkpoint (Python pickle, protocol ${protocol})` };
  }
  if (bytes.includes('joblib.numpy_pickle')) {
    return { kind: `joblib file (Python pickle, protocol ${protocol})` };
  }
  return { kind: `Python pickle (protocol ${protocol})` };
}

function binaryPickleProtocol(bytes: Buffer, streamBytes: number): number | null {
  // Python accepts PROTO with any version up to its highest (0 and 1 included).
  const protocol = bytes[1] ?? 0;
  if (bytes[0] !== 0x80 || protocol > 5) return null;
  const scan = scanPickle(bytes, { streamBytes });
  return (scan.valid ? scan.opcodes >= 2 : scan.opcodes >= minBinaryPrefixOpcodes)
    ? protocol
    : null;
}

function compressedPickle(head: Buffer): PickleFinding | null {
  const b0 = head[0] ?? 0;
  const b1 = head[1] ?? 0;
  if (b0 === 0x78 && (b0 * 256 + b1) % 31 === 0) return inflatedPickle(head, 'zlib');
  if (b0 === 0x1f && b1 === 0x8b && head[2] === 0x08) return inflatedPickle(head, 'gzip');
  if (head.subarray(0, 4).toString('latin1') === 'ZF0x')
    return { kind: 'joblib file (legacy zlib format)' };
  const opaque = opaqueCompression(head);
  return opaque === null
    ? null
    : {
        kind: `${opaque}-compressed data (cannot be inspected; joblib saves compressed pickles this way)`,
      };
}

function inflatedPickle(head: Buffer, method: 'zlib' | 'gzip'): PickleFinding | null {
  let inner: Buffer;
  try {
    const input = head.subarray(0, compressedPeekBytes);
    // SYNC_FLUSH returns what the partial stream yields instead of failing at its end.
    const options = { finishFlush: constants.Z_SYNC_FLUSH };
    inner = method === 'zlib' ? inflateSync(input, options) : gunzipSync(input, options);
  } catch {
    return null; // Not a real zlib/gzip stream.
  }
  const protocol = binaryPickleProtocol(inner, Number.POSITIVE_INFINITY) ?? textLike(inner);
  if (protocol === null) return null;
  return { kind: `joblib file (${method}-compressed Python pickle, protocol ${protocol})` };
}

function opaqueCompression(head: Buffer): string | null {
  if (head.subarray(0, 6).equals(Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]))) return 'xz';
  if (head.length >= 4 && head.readUInt32LE(0) === 0x184d2204) return 'lz4';
  if (
    head.subarray(0, 3).toString('latin1') === 'BZh' &&
    head.subarray(4, 10).toString('latin1') === '1AY&SY'
  ) {
    return 'bzip2';
  }
  // LZMA "alone" header: properties 0x5d, a dictionary of >= 4 KiB, then the size (-1 when
  // streamed). A safetensors header length of 0x5d has zeros there instead.
  if (head[0] === 0x5d && head.length >= 13) {
    const dictionary = head.readUInt32LE(1);
    const size = head.readBigUInt64LE(5);
    if (dictionary >= 4096 && (size === 0xffffffffffffffffn || size < 1n << 48n)) return 'lzma';
  }
  return null;
}

/**
 * Protocol 0/1 (no PROTO opcode): valid opcodes from byte 0 up to a STOP. The walk follows
 * the file window by window: an argument longer than the window (a big string) is skipped
 * by its length and the walk goes on after it, so size cannot hide the STOP.
 */
async function textPickle(file: ArtifactFile, head: Buffer): Promise<PickleFinding | null> {
  // A whole-file walk ending with the file's last byte, STOP: a pickle of any content.
  const last =
    head.length === file.size ? head[head.length - 1] : (await file.read(file.size - 1, 1))[0];
  const first = scanPickle(head, { streamBytes: file.size });
  if (
    last === 0x2e &&
    first.valid &&
    first.opcodes >= 2 &&
    (head.length === file.size ? first.stopped : first.stopped || first.opcodes >= 16)
  )
    return { kind: `Python pickle (protocol ${first.protocol})` };
  // Else a STOP anywhere (Python ignores what follows it), found by following the walk
  // window by window, counts when the walk imports a name: what running code needs. Text
  // that happens to parse as opcodes up to a '.' does not.
  let window = head;
  let offset = 0;
  let protocol = 0;
  let imports = false;
  for (let windows = 0; windows < 4096; windows += 1) {
    const scan = windows === 0 ? first : scanPickle(window, { streamBytes: file.size - offset });
    protocol = Math.max(protocol, scan.protocol);
    imports ||= scan.imports;
    if (!scan.valid) return null;
    if (scan.stopped) return imports ? { kind: `Python pickle (protocol ${protocol})` } : null;
    const next = offset + scan.resumeAt;
    if (next <= offset || next >= file.size) return null; // no progress, or the end: no STOP
    offset = next;
    window = await file.read(offset, Math.min(file.size - offset, headBytes));
  }
  return null;
}

/** The protocol of a protocol 0/1 pickle at the start of `bytes`, or null. */
function textLike(bytes: Buffer): number | null {
  const scan = scanPickle(bytes);
  return scan.valid && (scan.stopped || scan.opcodes >= 16) ? scan.protocol : null;
}
