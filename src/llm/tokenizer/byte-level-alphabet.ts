// GPT-2's bytes_to_unicode: every byte 0..255 maps to one printable character so that BPE can
// run on text-like symbols. Printable Latin-1 bytes map to themselves ('!'..'~', '¡'..'¬',
// '®'..'ÿ'); the other 68 (controls, space, soft hyphen…) map to U+0100 upwards in byte
// order, which is why a space shows up as 'Ġ' (U+0120) and a newline as 'Ċ' (U+010A).

export interface ByteLevelAlphabet {
  /** [256] byte → its one-character symbol. */
  readonly byteToChar: readonly string[];
  /** Symbol → byte, the inverse, for decoding. */
  readonly charToByte: ReadonlyMap<string, number>;
}

function build(): ByteLevelAlphabet {
  const printable = (b: number): boolean =>
    (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const byteToChar: string[] = [];
  const charToByte = new Map<string, number>();
  let shifted = 0;
  for (let b = 0; b < 256; b += 1) {
    const code = printable(b) ? b : 256 + shifted++;
    const char = String.fromCharCode(code);
    byteToChar.push(char);
    charToByte.set(char, b);
  }
  return { byteToChar, charToByte };
}

export const byteLevelAlphabet: ByteLevelAlphabet = build();

const encoder = new TextEncoder();

/** The text's UTF-8 bytes, each written as its byte-level symbol. */
export function toByteLevel(text: string): string {
  const bytes = encoder.encode(text);
  let out = '';
  for (const b of bytes) out += byteLevelAlphabet.byteToChar[b] ?? '';
  return out;
}
