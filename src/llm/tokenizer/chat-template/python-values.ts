// Python semantics for the values a chat template sees. Templates are Jinja, Jinja is Python,
// and the text a template produces depends on Python's rules: `{{ true }}` prints "True",
// `{{ ['a'] }}` prints "['a']", `1 == true` holds, `{{ x }}` of an undefined x prints "".
// Values are JavaScript's JSON values (messages arrive as JSON) plus `undefined` for
// Jinja's Undefined and a few runtime objects (Namespace, TemplateFunction).

/** A `namespace(...)` object: the one mutable value templates have (`set ns.x = …`). */
export class Namespace {
  readonly attributes = new Map<string, unknown>();
}

/** A global function callable from a template (`raise_exception`, `namespace`, `range`). */
export class TemplateFunction {
  readonly name: string;
  readonly call: (args: readonly unknown[], kwargs: ReadonlyMap<string, unknown>) => unknown;

  constructor(
    name: string,
    call: (args: readonly unknown[], kwargs: ReadonlyMap<string, unknown>) => unknown,
  ) {
    this.name = name;
    this.call = call;
  }
}

/** Thrown while rendering; the template's caller gets it back as an error value. */
export class TemplateRuntimeError extends Error {}

export type Dict = Readonly<Record<string, unknown>>;

export function isDict(value: unknown): value is Dict {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Python's type name, for error messages. */
export function typeName(value: unknown): string {
  if (value === undefined) return 'Undefined';
  if (value === null) return 'NoneType';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  if (typeof value === 'string') return 'str';
  if (Array.isArray(value)) return 'list';
  if (value instanceof Namespace) return 'Namespace';
  if (value instanceof TemplateFunction) return 'function';
  return 'dict';
}

export function truthy(value: unknown): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return value !== 0;
  if (typeof value === 'string') return value.length > 0;
  if (Array.isArray(value)) return value.length > 0;
  if (isDict(value)) return Object.keys(value).length > 0;
  return true;
}

/** A bool or number as a number (Python's bool is an int), or null for anything else. */
export function asNumber(value: unknown): number | null {
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  return null;
}

/** Python `==` (Undefined equals only Undefined). */
export function pyEquals(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b;
  const na = asNumber(a);
  const nb = asNumber(b);
  if (na !== null || nb !== null) return na !== null && nb !== null && na === nb;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => pyEquals(item, b[i]));
  }
  if (isDict(a) && isDict(b)) {
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    return keys.every((k) => Object.hasOwn(b, k) && pyEquals(a[k], b[k]));
  }
  return a === b;
}

/** Python str(): what `{{ value }}` prints. */
export function pyStr(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  return pyRepr(value);
}

export function pyRepr(value: unknown): string {
  if (value === undefined) return 'Undefined';
  if (value === null) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') return numberText(value);
  if (typeof value === 'string') return stringRepr(value);
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(', ')}]`;
  if (value instanceof Namespace) return '<Namespace>';
  if (value instanceof TemplateFunction) return `<function ${value.name}>`;
  if (isDict(value)) {
    const entries = Object.entries(value).map(([k, v]) => `${stringRepr(k)}: ${pyRepr(v)}`);
    return `{${entries.join(', ')}}`;
  }
  return `<${typeName(value)} object>`;
}

/**
 * A number as Python prints it. JSON numbers carry no int/float distinction, so integral
 * values print as ints ("2", where Python would print a float 2.0 as "2.0").
 */
function numberText(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (value === Infinity) return 'inf';
  if (value === -Infinity) return '-inf';
  return String(value);
}

const unprintable = /[\p{C}\p{Z}]/u;

function stringRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const c of text) {
    if (c === '\\') out += '\\\\';
    else if (c === quote) out += `\\${quote}`;
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (c !== ' ' && unprintable.test(c)) {
      const code = c.codePointAt(0) ?? 0;
      if (code < 0x100) out += `\\x${hex(code, 2)}`;
      else if (code < 0x10000) out += `\\u${hex(code, 4)}`;
      else out += `\\U${hex(code, 8)}`;
    } else out += c;
  }
  return out + quote;
}

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, '0');
}

/**
 * Python's json.dumps(value, ensure_ascii=False, indent=indent), which transformers
 * installs as the `tojson` filter: ", " and ": " separators on one line, or one item a line
 * with `indent` spaces (and "," at line ends) when indent is given. Keys keep their order.
 */
export function pyJson(value: unknown, indent: number | null, depth = 0): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'NaN';
    if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity';
    return String(value);
  }
  if (typeof value === 'string') return JSON.stringify(value);
  const items: string[] = [];
  let open: string;
  let close: string;
  if (Array.isArray(value)) {
    [open, close] = ['[', ']'];
    for (const item of value) items.push(pyJson(item, indent, depth + 1));
  } else if (isDict(value)) {
    [open, close] = ['{', '}'];
    for (const [k, v] of Object.entries(value)) {
      items.push(`${JSON.stringify(k)}: ${pyJson(v, indent, depth + 1)}`);
    }
  } else {
    throw new TemplateRuntimeError(`Object of type ${typeName(value)} is not JSON serializable`);
  }
  if (items.length === 0) return open + close;
  if (indent === null) return open + items.join(', ') + close;
  const inner = '\n' + ' '.repeat(indent * (depth + 1));
  const outer = '\n' + ' '.repeat(indent * depth);
  return open + inner + items.join(',' + inner) + outer + close;
}
