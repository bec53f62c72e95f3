// Walks Python pickle opcodes without executing anything, to tell a real pickle from bytes
// that merely start like one (a safetensors header length of 0x0280 also begins 80 02).
// It checks that each byte is an opcode and that its argument is well formed, and stops at
// STOP, at the end of the bytes given, or after `maxOpcodes`. It does not simulate the stack.
//
// Argument layouts (from CPython's pickletools):
//   fixed n bytes          K M J G h j q r PROTO EXT1/2/4 FRAME
//   n-byte length + data   U C SHORT_BINUNICODE LONG1 (1)  T X B LONG4 (4)  BINUNICODE8 BINBYTES8 BYTEARRAY8 (8)
//   one text line          I L F V P g p S (S quoted)      two lines: c i (module, name)

export interface PickleScan {
  /** Every byte walked was a valid opcode with a well-formed argument. */
  readonly valid: boolean;
  /** A STOP opcode was reached. */
  readonly stopped: boolean;
  /** Valid opcodes read (before the invalid byte, when not valid). joblib writes raw array
   * bytes in the middle of its pickles, so a long valid prefix is evidence enough there. */
  readonly opcodes: number;
  /**
   * Where the walk stopped, from bytes[0]: past the end of `bytes` when an argument runs on
   * beyond them (a caller with more of the stream can go on scanning from there).
   */
  readonly resumeAt: number;
  /** An opcode that imports a name was seen (GLOBAL, INST, STACK_GLOBAL): code can run. */
  readonly imports: boolean;
  /** The PROTO argument if present, else the lowest protocol that has every opcode seen. */
  readonly protocol: number;
}

export interface PickleScanOptions {
  /** Bytes in the whole stream from bytes[0]: an argument longer than what remains makes the
   * pickle invalid; one that merely runs past `bytes` ends the walk (valid so far). */
  readonly streamBytes?: number;
  readonly maxOpcodes?: number;
}

type Argument =
  | { readonly kind: 'none' }
  | { readonly kind: 'fixed'; readonly bytes: number }
  | { readonly kind: 'counted'; readonly lengthBytes: 1 | 4 | 8 }
  | { readonly kind: 'line'; readonly check: (line: Buffer) => boolean }
  | { readonly kind: 'twoLines' };

interface Opcode {
  readonly argument: Argument;
  readonly protocol: number;
}

const none: Argument = { kind: 'none' };
const fixed = (bytes: number): Argument => ({ kind: 'fixed', bytes });
const counted = (lengthBytes: 1 | 4 | 8): Argument => ({ kind: 'counted', lengthBytes });
const anyLine: Argument = { kind: 'line', check: () => true };
const decimalLine: Argument = {
  kind: 'line',
  check: (line) => /^\s*[+-]?\d+\s*$/.test(line.toString('latin1')),
};
const quotedLine: Argument = {
  kind: 'line',
  check: (line) =>
    line.length >= 2 && (line[0] === 0x22 || line[0] === 0x27) && line[line.length - 1] === line[0],
};

const opcodes = new Map<number, Opcode>();
function define(codes: string | number, protocol: number, argument: Argument): void {
  const list = typeof codes === 'number' ? [codes] : [...codes].map((c) => c.charCodeAt(0));
  for (const code of list) opcodes.set(code, { argument, protocol });
}
define('(.02NRabdlst', 0, none);
opcodes.set(0x63 /* c GLOBAL */, { argument: { kind: 'twoLines' }, protocol: 0 });
opcodes.set(0x69 /* i INST */, { argument: { kind: 'twoLines' }, protocol: 0 });
define('ILFVP', 0, anyLine);
define('gp', 0, decimalLine);
define('S', 0, quotedLine);
define('Q1e}])uo', 1, none);
define('Khq', 1, fixed(1));
define('M', 1, fixed(2));
define('Jjr', 1, fixed(4));
define('G', 1, fixed(8));
define('U', 1, counted(1));
define('TX', 1, counted(4));
for (const code of [0x81, 0x85, 0x86, 0x87, 0x88, 0x89]) define(code, 2, none);
define(0x80, 2, fixed(1)); // PROTO
define(0x82, 2, fixed(1));
define(0x83, 2, fixed(2));
define(0x84, 2, fixed(4));
define(0x8a, 2, counted(1)); // LONG1
define(0x8b, 2, counted(4)); // LONG4
define('C', 3, counted(1));
define('B', 3, counted(4));
define(0x8c, 4, counted(1)); // SHORT_BINUNICODE
define(0x8d, 4, counted(8));
define(0x8e, 4, counted(8));
for (const code of [0x8f, 0x90, 0x91, 0x92, 0x93, 0x94]) define(code, 4, none);
define(0x95, 4, fixed(8)); // FRAME
define(0x96, 5, counted(8)); // BYTEARRAY8
define(0x97, 5, none);
define(0x98, 5, none);

const maxLineBytes = 1 << 16;

export function scanPickle(bytes: Uint8Array, options: PickleScanOptions = {}): PickleScan {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const streamBytes = options.streamBytes ?? Number.POSITIVE_INFINITY;
  const maxOpcodes = options.maxOpcodes ?? 4096;
  let pos = 0;
  let count = 0;
  let protocol = 0;
  let declared: number | null = null;
  let imports = false;
  const result = (valid: boolean, stopped = false): PickleScan => ({
    valid,
    stopped,
    opcodes: count,
    resumeAt: pos,
    imports,
    protocol: declared ?? protocol,
  });
  while (pos < buf.length && count < maxOpcodes) {
    const code = buf[pos] ?? 0;
    const opcode = opcodes.get(code);
    if (opcode === undefined) return result(false);
    protocol = Math.max(protocol, opcode.protocol);
    if (code === 0x63 /* c GLOBAL */ || code === 0x69 /* i INST */ || code === 0x93) imports = true;
    pos += 1;
    if (code === 0x2e /* . STOP */) {
      count += 1;
      return result(true, true);
    }
    const argument = opcode.argument;
    switch (argument.kind) {
      case 'none':
        break;
      case 'fixed':
        if (code === 0x80 && pos < buf.length) declared = buf[pos] ?? null;
        pos += argument.bytes;
        break;
      case 'counted': {
        const width = argument.lengthBytes;
        if (pos + width > buf.length) return result(pos + width <= streamBytes);
        const length =
          width === 1
            ? buf.readUInt8(pos)
            : width === 4
              ? buf.readInt32LE(pos)
              : Number(buf.readBigInt64LE(pos));
        if (length < 0 || pos + width + length > streamBytes) return result(false);
        pos += width + length;
        break;
      }
      case 'line':
      case 'twoLines': {
        const lines = argument.kind === 'line' ? 1 : 2;
        for (let i = 0; i < lines; i += 1) {
          const end = buf.indexOf(0x0a, pos);
          if (end < 0 || end - pos > maxLineBytes) {
            // No newline in view: fine if the stream goes on past our window.
            return result(end < 0 && buf.length < streamBytes && buf.length - pos <= maxLineBytes);
          }
          const line = buf.subarray(pos, end);
          const ok = argument.kind === 'line' ? argument.check(line) : isGlobalName(line);
          if (!ok) return result(false);
          pos = end + 1;
        }
        break;
      }
    }
    count += 1;
  }
  if (pos > streamBytes) return result(false);
  return result(true);
}

/** A module or attribute name: non-empty, no whitespace or control bytes. */
function isGlobalName(line: Buffer): boolean {
  if (line.length === 0) return false;
  for (const byte of line) if (byte <= 0x20 || byte === 0x7f) return false;
  return true;
}
