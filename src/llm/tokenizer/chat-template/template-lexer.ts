// Lexer for the Jinja subset of chat templates, with the settings Hugging Face transformers
// renders them with: trim_blocks (the first newline after a `%}` or `#}` is dropped),
// lstrip_blocks (spaces and tabs before a `{%` / `{#` alone on its line are dropped), and
// no trailing newline kept. `{%-` / `-%}` (and `{{-`, `-}}`, `{#-`, `-#}`) strip all white
// space on that side; `{%+` / `+%}` turn lstrip/trim off for that tag.
//
// Output: a flat token list. Text between tags is one `text` token; a tag is its opening
// token (`output` for `{{`, `block` for `{%`), the expression tokens inside it, then `end`.
// Comments leave nothing.

export type TemplateToken =
  | { readonly type: 'text'; readonly value: string; readonly line: number }
  | { readonly type: 'output' | 'block' | 'end'; readonly line: number }
  | { readonly type: 'name' | 'operator'; readonly value: string; readonly line: number }
  | { readonly type: 'string'; readonly value: string; readonly line: number }
  | { readonly type: 'number'; readonly value: number; readonly line: number };

export type LexResult =
  | { readonly ok: true; readonly tokens: TemplateToken[] }
  | { readonly ok: false; readonly message: string };

// Python's str.isspace set, as Jinja's `\s` and rstrip() see white space.
const space =
  '\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const trailingSpace = new RegExp(`[${space}]+$`, 'u');
const leadingSpace = new RegExp(`^[${space}]+`, 'u');
const spacesOnly = new RegExp(`^[${space}]+$`, 'u');

const operators = [
  '**',
  '//',
  '==',
  '!=',
  '>=',
  '<=',
  '+',
  '-',
  '*',
  '/',
  '%',
  '~',
  '[',
  ']',
  '(',
  ')',
  '{',
  '}',
  '>',
  '<',
  '=',
  '.',
  ':',
  '|',
  ',',
];
const namePattern = /[\p{L}_][\p{L}\p{N}_]*/uy;
const numberPattern = /\d+(?:_\d+)*(?:\.\d+(?:_\d+)*)?(?:[eE][+-]?\d+(?:_\d+)*)?/y;

export function lexTemplate(template: string): LexResult {
  // Jinja's line handling: \r\n and \r become \n, and one final newline is dropped.
  let source = template.replace(/\r\n?/g, '\n');
  if (source.endsWith('\n')) source = source.slice(0, -1);

  const tokens: TemplateToken[] = [];
  let pos = 0;
  let line = 1;
  // Whether the last thing consumed ended a line (lstrip_blocks looks at it).
  let lineStarting = true;
  const fail = (message: string): LexResult => ({
    ok: false,
    message: `template syntax error (line ${line}): ${message}`,
  });

  while (pos < source.length) {
    const open = findTagStart(source, pos);
    const textEnd = open === null ? source.length : open.index;
    let text = source.slice(pos, textEnd);
    if (open !== null) {
      const sign = source[open.index + 2];
      if (sign === '-') text = text.replace(trailingSpace, '');
      else if (sign !== '+' && open.kind !== 'output') {
        // lstrip_blocks: drop the spaces between the last newline and the tag.
        const lineStart = text.lastIndexOf('\n') + 1;
        if ((lineStart > 0 || lineStarting) && spacesOnly.test(text.slice(lineStart))) {
          text = text.slice(0, lineStart);
        }
      }
    }
    if (text.length > 0) tokens.push({ type: 'text', value: text, line });
    line += countNewlines(source.slice(pos, textEnd));
    if (open === null) break;

    pos = open.index + 2;
    const sign = source[pos];
    if (sign === '-' || sign === '+') pos += 1;

    if (open.kind === 'comment') {
      const close = source.indexOf('#}', pos);
      if (close < 0) return fail('unclosed comment');
      line += countNewlines(source.slice(pos, close));
      const stripAfter = source[close - 1] === '-';
      const keepNewline = source[close - 1] === '+';
      pos = skipAfterTag(source, close + 2, stripAfter, !keepNewline);
      lineStarting = source[pos - 1] === '\n';
      continue;
    }

    tokens.push({ type: open.kind, line });
    const closer = open.kind === 'output' ? '}}' : '%}';
    // Brackets must balance before a closer counts (`{{ {'a': 1} }}`).
    let depth = 0;
    for (;;) {
      const ws = /[ \t\n\r\f\v]+/y;
      ws.lastIndex = pos;
      const m = ws.exec(source);
      if (m !== null) {
        line += countNewlines(m[0]);
        pos += m[0].length;
      }
      if (pos >= source.length) return fail(`unclosed ${open.kind === 'output' ? '{{' : '{%'}`);
      if (depth === 0) {
        const closeAt = source.startsWith(closer, pos)
          ? { at: pos, sign: '' }
          : (source[pos] === '-' || source[pos] === '+') && source.startsWith(closer, pos + 1)
            ? { at: pos + 1, sign: source[pos] ?? '' }
            : null;
        if (closeAt !== null) {
          tokens.push({ type: 'end', line });
          const isBlock = open.kind === 'block';
          pos = skipAfterTag(
            source,
            closeAt.at + 2,
            closeAt.sign === '-',
            isBlock && closeAt.sign !== '+',
          );
          lineStarting = source[pos - 1] === '\n';
          break;
        }
      }
      const token = readToken(source, pos, line);
      if (token === null) return fail(`unexpected character ${JSON.stringify(source[pos])}`);
      if ('error' in token) return fail(token.error);
      if (token.token.type === 'operator') {
        const op = token.token.value;
        if (op === '(' || op === '[' || op === '{') depth += 1;
        else if (op === ')' || op === ']' || op === '}') depth -= 1;
        if (depth < 0) return fail(`unexpected ${JSON.stringify(op)}`);
      }
      tokens.push(token.token);
      line += token.newlines;
      pos = token.end;
    }
  }
  return { ok: true, tokens };
}

function findTagStart(
  source: string,
  from: number,
): { index: number; kind: 'output' | 'block' | 'comment' } | null {
  for (let i = source.indexOf('{', from); i >= 0; i = source.indexOf('{', i + 1)) {
    const next = source[i + 1];
    if (next === '{') return { index: i, kind: 'output' };
    if (next === '%') return { index: i, kind: 'block' };
    if (next === '#') return { index: i, kind: 'comment' };
  }
  return null;
}

/** Position after a closing delimiter, past the white space that tag swallows. */
function skipAfterTag(
  source: string,
  pos: number,
  stripAll: boolean,
  trimNewline: boolean,
): number {
  if (stripAll) return pos + (leadingSpace.exec(source.slice(pos))?.[0].length ?? 0);
  if (trimNewline && source[pos] === '\n') return pos + 1;
  return pos;
}

function countNewlines(text: string): number {
  let n = 0;
  for (const c of text) if (c === '\n') n += 1;
  return n;
}

type ReadToken =
  | { readonly token: TemplateToken; readonly end: number; readonly newlines: number }
  | { readonly error: string };

function readToken(source: string, pos: number, line: number): ReadToken | null {
  const c = source[pos] ?? '';
  if (c === "'" || c === '"') return readString(source, pos, line);
  numberPattern.lastIndex = pos;
  const number = /\d/.test(c) ? numberPattern.exec(source) : null;
  if (number !== null) {
    const value = Number(number[0].replaceAll('_', ''));
    return { token: { type: 'number', value, line }, end: pos + number[0].length, newlines: 0 };
  }
  namePattern.lastIndex = pos;
  const name = namePattern.exec(source);
  if (name !== null) {
    return {
      token: { type: 'name', value: name[0], line },
      end: pos + name[0].length,
      newlines: 0,
    };
  }
  for (const op of operators) {
    if (source.startsWith(op, pos)) {
      return { token: { type: 'operator', value: op, line }, end: pos + op.length, newlines: 0 };
    }
  }
  return null;
}

const simpleEscapes: Readonly<Record<string, string>> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '\\': '\\',
  "'": "'",
  '"': '"',
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
  '\n': '',
};

/** A quoted literal, with Python's escapes (\n, \t, \xHH, \uHHHH, \UHHHHHHHH, …). */
function readString(source: string, start: number, line: number): ReadToken {
  const quote = source[start];
  let value = '';
  let i = start + 1;
  while (i < source.length && source[i] !== quote) {
    const c = source[i] ?? '';
    if (c !== '\\') {
      value += c;
      i += 1;
      continue;
    }
    const e = source[i + 1] ?? '';
    const simple = simpleEscapes[e];
    if (simple !== undefined) {
      value += simple;
      i += 2;
      continue;
    }
    const width = e === 'x' ? 2 : e === 'u' ? 4 : e === 'U' ? 8 : 0;
    const hex = source.slice(i + 2, i + 2 + width);
    if (width > 0 && hex.length === width && /^[0-9a-fA-F]+$/.test(hex)) {
      const code = Number.parseInt(hex, 16);
      if (code > 0x10ffff) return { error: `invalid escape \\${e}${hex}` };
      value += String.fromCodePoint(code);
      i += 2 + width;
      continue;
    }
    // Python keeps an unknown escape as written.
    value += c + e;
    i += 2;
  }
  if (i >= source.length) return { error: 'unterminated string literal' };
  const raw = source.slice(start, i + 1);
  return { token: { type: 'string', value, line }, end: i + 1, newlines: countNewlines(raw) };
}
