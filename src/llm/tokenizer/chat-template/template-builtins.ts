// The filters, tests, methods and global functions the chat-template subset provides, with
// Python's behaviour (a filter applied to Undefined sees Jinja's Undefined: '' as text, 0 as
// a length). Anything not listed here is refused as an unsupported template construct.

import { pyCompare } from './python-operators.ts';
import {
  asNumber,
  isDict,
  Namespace,
  pyEquals,
  pyJson,
  pyStr,
  TemplateFunction,
  TemplateRuntimeError,
  truthy,
  typeName,
} from './python-values.ts';

type Builtin = (
  value: unknown,
  args: readonly unknown[],
  kwargs: ReadonlyMap<string, unknown>,
) => unknown;

// Python's str.strip() white space.
const space =
  '\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const leading = new RegExp(`^[${space}]+`, 'u');
const spaceChar = new RegExp(`^[${space}]$`, 'u');
const nonSpaceRuns = new RegExp(`[^${space}]+`, 'gu');

function strip(text: string, chars: unknown, left: boolean, right: boolean): string {
  if (chars === undefined || chars === null) {
    let out = left ? text.replace(leading, '') : text;
    if (right) {
      // A backward scan, not `[…]+$`: that regex retries from every space of a long run
      // inside the text (quadratic; a message with 40,000 spaces took most of a second).
      // Python's white space is all in the BMP: one code unit per character.
      let end = out.length;
      while (end > 0 && spaceChar.test(out[end - 1]!)) end -= 1;
      out = out.slice(0, end);
    }
    return out;
  }
  if (typeof chars !== 'string') throw new TemplateRuntimeError('strip arg must be None or str');
  const set = new Set(Array.from(chars));
  const codePoints = Array.from(text);
  let from = 0;
  let to = codePoints.length;
  while (left && from < to && set.has(codePoints[from] ?? '')) from += 1;
  while (right && to > from && set.has(codePoints[to - 1] ?? '')) to -= 1;
  return codePoints.slice(from, to).join('');
}

function capitalize(text: string): string {
  const first = text.codePointAt(0);
  if (first === undefined) return text;
  const head = String.fromCodePoint(first);
  return head.toUpperCase() + text.slice(head.length).toLowerCase();
}

function title(text: string): string {
  return text.replace(/[\p{L}\p{N}']+/gu, (word) => capitalize(word));
}

/** Python len(); Undefined has length 0. */
export function length(value: unknown): number {
  if (value === undefined) return 0;
  if (typeof value === 'string') return Array.from(value).length;
  if (Array.isArray(value)) return value.length;
  if (isDict(value)) return Object.keys(value).length;
  throw new TemplateRuntimeError(`object of type '${typeName(value)}' has no len()`);
}

/** The items a `for` loop (or a filter) walks: list items, characters, or dict keys. */
export function iterate(value: unknown): unknown[] {
  if (value === undefined) return [];
  if (Array.isArray(value)) return value;
  if (typeof value === 'string') return Array.from(value);
  if (isDict(value)) return Object.keys(value);
  throw new TemplateRuntimeError(`'${typeName(value)}' object is not iterable`);
}

function integerArg(value: unknown, what: string): number {
  const n = asNumber(value);
  if (n === null || !Number.isInteger(n)) throw new TemplateRuntimeError(`${what} must be an int`);
  return n;
}

export const filters: ReadonlyMap<string, Builtin> = new Map<string, Builtin>([
  ['trim', (v, args, kwargs) => strip(pyStr(v), kwargs.get('chars') ?? args[0], true, true)],
  ['length', (v) => length(v)],
  ['count', (v) => length(v)],
  [
    'tojson',
    (v, args, kwargs) => {
      const indent = kwargs.get('indent') ?? args[0];
      return pyJson(
        v,
        indent === undefined || indent === null ? null : integerArg(indent, 'indent'),
      );
    },
  ],
  ['upper', (v) => pyStr(v).toUpperCase()],
  ['lower', (v) => pyStr(v).toLowerCase()],
  ['capitalize', (v) => capitalize(pyStr(v))],
  ['title', (v) => title(pyStr(v))],
  ['string', (v) => pyStr(v)],
  ['first', (v) => iterate(v)[0]],
  ['last', (v) => iterate(v).at(-1)],
  [
    'join',
    (v, args, kwargs) => {
      const attribute = kwargs.get('attribute') ?? args[1];
      const items =
        attribute === undefined || attribute === null
          ? iterate(v)
          : iterate(v).map((item) => attributeOf(item, attribute));
      const separator = kwargs.get('d') ?? args[0];
      return items.map(pyStr).join(separator === undefined ? '' : pyStr(separator));
    },
  ],
  ['default', defaultFilter],
  ['d', defaultFilter],
  ['list', (v) => [...iterate(v)]],
  [
    'reverse',
    (v) => (typeof v === 'string' ? Array.from(v).reverse().join('') : [...iterate(v)].reverse()),
  ],
  ['replace', (v, args) => replace(pyStr(v), args)],
  ['items', (v) => (isDict(v) ? Object.entries(v) : iterate(v))],
  [
    'int',
    (v) => {
      const n = typeof v === 'string' ? Number(v.trim()) : asNumber(v);
      return n === null || Number.isNaN(n) ? 0 : Math.trunc(n);
    },
  ],
  ['select', (v, args) => iterate(v).filter((item) => passes(item, args))],
  ['reject', (v, args) => iterate(v).filter((item) => !passes(item, args))],
  [
    'selectattr',
    (v, args) => iterate(v).filter((item) => passes(attributeOf(item, args[0]), args.slice(1))),
  ],
  [
    'rejectattr',
    (v, args) => iterate(v).filter((item) => !passes(attributeOf(item, args[0]), args.slice(1))),
  ],
  ['map', mapFilter],
  [
    'abs',
    (v) => {
      const n = asNumber(v);
      if (n === null)
        throw new TemplateRuntimeError(`bad operand type for abs(): '${typeName(v)}'`);
      return Math.abs(n);
    },
  ],
]);

/**
 * select/reject and their attr forms: a test by name and its arguments (`reject('equalto',
 * 'x')`), or with no test, the item's truth.
 */
function passes(value: unknown, testAndArgs: readonly unknown[]): boolean {
  if (testAndArgs.length === 0) return truthy(value);
  const name = testAndArgs[0];
  const test = typeof name === 'string' ? tests.get(name) : undefined;
  if (test === undefined)
    throw new TemplateRuntimeError(`unsupported template: test "${pyStr(name)}"`);
  return test(value, testAndArgs.slice(1));
}

/** map(attribute='x', default=…) takes an attribute of each item; map('f', …) applies a filter. */
function mapFilter(
  value: unknown,
  args: readonly unknown[],
  kwargs: ReadonlyMap<string, unknown>,
): unknown[] {
  const items = iterate(value);
  if (kwargs.has('attribute')) {
    if (args.length > 0)
      throw new TemplateRuntimeError('map() takes an attribute or a filter, not both');
    const attribute = kwargs.get('attribute');
    return items.map((item) => {
      const found = attributeOf(item, attribute);
      return found === undefined && kwargs.has('default') ? kwargs.get('default') : found;
    });
  }
  if (kwargs.has('default')) throw new TemplateRuntimeError('map(default=…) needs attribute=…');
  const name = args[0];
  const filter = typeof name === 'string' ? filters.get(name) : undefined;
  if (filter === undefined)
    throw new TemplateRuntimeError(`unsupported template: filter "${pyStr(name)}"`);
  return items.map((item) => filter(item, args.slice(1), new Map()));
}

/** Keyword arguments each filter implements (any other is refused, not ignored). */
export const filterKeywords: ReadonlyMap<string, readonly string[]> = new Map([
  ['map', ['attribute', 'default']],
  ['tojson', ['indent']],
  ['join', ['d', 'attribute']],
  ['default', ['default_value', 'boolean']],
  ['d', ['default_value', 'boolean']],
  ['trim', ['chars']],
]);

/**
 * Keywords that only restate what the filter does anyway (transformers' tojson defaults:
 * ensure_ascii=False, sort_keys=False, separators=None), so they need no support.
 */
export function isHarmlessKeyword(filter: string, name: string, value: unknown): boolean {
  if (filter !== 'tojson') return false;
  if (name === 'ensure_ascii' || name === 'sort_keys') return value === false;
  return name === 'separators' && (value === null || value === undefined);
}

/** item.attribute as Jinja reads it for a dict: the key (dotted paths and list indexes). */
function attributeOf(item: unknown, attribute: unknown): unknown {
  let value = item;
  for (const part of String(attribute).split('.')) {
    // Own keys only, as getAttribute reads them: `constructor` is not an attribute of a dict.
    if (isDict(value))
      value = Object.hasOwn(value, part) ? (value as Record<string, unknown>)[part] : undefined;
    else if (Array.isArray(value) && /^\d+$/.test(part)) value = value[Number(part)];
    else return undefined;
  }
  return value;
}

function defaultFilter(
  value: unknown,
  args: readonly unknown[],
  kwargs: ReadonlyMap<string, unknown>,
): unknown {
  // An explicit None is a value (default(none) gives None), so presence, not ??, decides.
  const fallback =
    args.length > 0 ? args[0] : kwargs.has('default_value') ? kwargs.get('default_value') : '';
  const boolean = truthy(args[1] ?? kwargs.get('boolean') ?? false);
  return value === undefined || (boolean && !truthy(value)) ? fallback : value;
}

function replace(text: string, args: readonly unknown[]): string {
  const [from, to, count] = args;
  if (typeof from !== 'string' || typeof to !== 'string') {
    throw new TemplateRuntimeError('replace() arguments must be str');
  }
  if (count === undefined) return text.replaceAll(from, to);
  let remaining = integerArg(count, 'count');
  let out = text;
  let at = 0;
  while (remaining > 0) {
    const i = out.indexOf(from, at);
    if (i < 0) break;
    out = out.slice(0, i) + to + out.slice(i + from.length);
    at = i + to.length;
    remaining -= 1;
  }
  return out;
}

export const tests: ReadonlyMap<string, (value: unknown, args: readonly unknown[]) => boolean> =
  new Map<string, (value: unknown, args: readonly unknown[]) => boolean>([
    ['defined', (v) => v !== undefined],
    ['undefined', (v) => v === undefined],
    ['none', (v) => v === null],
    ['string', (v) => typeof v === 'string'],
    ['number', (v) => typeof v === 'number'],
    ['integer', (v) => typeof v === 'number' && Number.isInteger(v)],
    ['float', (v) => typeof v === 'number' && !Number.isInteger(v)],
    ['boolean', (v) => typeof v === 'boolean'],
    ['true', (v) => v === true],
    ['false', (v) => v === false],
    ['mapping', (v) => isDict(v)],
    ['sequence', (v) => typeof v === 'string' || Array.isArray(v) || isDict(v)],
    ['iterable', (v) => typeof v === 'string' || Array.isArray(v) || isDict(v)],
    ['even', (v) => integerArg(v, 'even test value') % 2 === 0],
    ['odd', (v) => Math.abs(integerArg(v, 'odd test value') % 2) === 1],
    ['divisibleby', (v, args) => integerArg(v, 'value') % integerArg(args[0], 'divisor') === 0],
    ['equalto', (v, args) => pyEquals(v, args[0])],
    ['eq', (v, args) => pyEquals(v, args[0])],
    ['ne', (v, args) => !pyEquals(v, args[0])],
    ['in', (v, args) => pyCompare('in', v, args[0])],
    ['lt', (v, args) => pyCompare('<', v, args[0])],
    ['le', (v, args) => pyCompare('<=', v, args[0])],
    ['gt', (v, args) => pyCompare('>', v, args[0])],
    ['ge', (v, args) => pyCompare('>=', v, args[0])],
    ['lessthan', (v, args) => pyCompare('<', v, args[0])],
    ['greaterthan', (v, args) => pyCompare('>', v, args[0])],
  ]);

/** `value.name(args)`: the str and dict methods templates call. */
export function callMethod(value: unknown, name: string, args: readonly unknown[]): unknown {
  if (typeof value === 'string') {
    switch (name) {
      case 'strip':
        return strip(value, args[0], true, true);
      case 'lstrip':
        return strip(value, args[0], true, false);
      case 'rstrip':
        return strip(value, args[0], false, true);
      case 'upper':
        return value.toUpperCase();
      case 'lower':
        return value.toLowerCase();
      case 'title':
        return title(value);
      case 'capitalize':
        return capitalize(value);
      case 'startswith':
      case 'endswith': {
        const affixes = Array.isArray(args[0]) ? args[0] : [args[0]];
        if (!affixes.every((a) => typeof a === 'string')) {
          throw new TemplateRuntimeError(`${name} first arg must be str or a list of str`);
        }
        return affixes.some((a: string) =>
          name === 'startswith' ? value.startsWith(a) : value.endsWith(a),
        );
      }
      case 'split':
        return splitString(value, args[0], args[1]);
      case 'replace':
        return replace(value, args);
    }
  } else if (isDict(value)) {
    switch (name) {
      case 'get': {
        const key = args[0];
        return typeof key === 'string' && Object.hasOwn(value, key)
          ? value[key]
          : (args[1] ?? null);
      }
      case 'items':
        return Object.entries(value);
      case 'keys':
        return Object.keys(value);
      case 'values':
        return Object.values(value);
    }
  }
  throw new TemplateRuntimeError(`unsupported template: method ${typeName(value)}.${name}()`);
}

function splitString(text: string, separator: unknown, maxSplit: unknown): string[] {
  const limit = maxSplit === undefined ? -1 : integerArg(maxSplit, 'maxsplit');
  if (separator === undefined || separator === null) {
    const words = [...text.matchAll(nonSpaceRuns)];
    if (limit < 0 || words.length <= limit + 1) return words.map((m) => m[0]);
    // Python keeps the rest of the text, its inner and trailing white space included.
    return [...words.slice(0, limit).map((m) => m[0]), text.slice(words[limit]?.index ?? 0)];
  }
  if (typeof separator !== 'string' || separator.length === 0) {
    throw new TemplateRuntimeError('split separator must be a non-empty str');
  }
  const parts = text.split(separator);
  if (limit < 0 || parts.length <= limit + 1) return parts;
  return [...parts.slice(0, limit), parts.slice(limit).join(separator)];
}

/** Global functions every chat template can call. */
export const globalFunctions: readonly TemplateFunction[] = [
  new TemplateFunction('raise_exception', (args) => {
    throw new TemplateRuntimeError(`template raised an exception: ${pyStr(args[0])}`);
  }),
  new TemplateFunction('namespace', (_args, kwargs) => {
    const ns = new Namespace();
    for (const [k, v] of kwargs) ns.attributes.set(k, v);
    return ns;
  }),
  new TemplateFunction('range', (args) => {
    const numbers = args.map((a) => integerArg(a, 'range() argument'));
    const [start, stop, step] =
      numbers.length === 1
        ? [0, numbers[0] ?? 0, 1]
        : [numbers[0] ?? 0, numbers[1] ?? 0, numbers[2] ?? 1];
    if (step === 0) throw new TemplateRuntimeError('range() arg 3 must not be zero');
    const count = Math.max(0, Math.ceil((stop - start) / step));
    if (count > 100_000) throw new TemplateRuntimeError('range() too large');
    const out: number[] = [];
    for (let i = 0; i < count; i += 1) out.push(start + i * step);
    return out;
  }),
];

const monthNames = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const dayNames = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/**
 * Python's `datetime.strftime` for the directives chat templates use (Llama-3.2's
 * `strftime_now("%d %b %Y")`), in local time as transformers' `datetime.now()` is, with the
 * C locale's names. Any other directive is refused rather than printed wrong.
 */
export function strftime(date: Date, format: string): string {
  const pad = (n: number, width = 2): string => String(n).padStart(width, '0');
  return format.replace(/%(.)/gsu, (_match, directive: string) => {
    const hours = date.getHours();
    switch (directive) {
      case 'd':
        return pad(date.getDate());
      case 'm':
        return pad(date.getMonth() + 1);
      case 'Y':
        return String(date.getFullYear());
      case 'y':
        return pad(date.getFullYear() % 100);
      case 'b':
        return (monthNames[date.getMonth()] ?? '').slice(0, 3);
      case 'B':
        return monthNames[date.getMonth()] ?? '';
      case 'a':
        return (dayNames[date.getDay()] ?? '').slice(0, 3);
      case 'A':
        return dayNames[date.getDay()] ?? '';
      case 'H':
        return pad(hours);
      case 'I':
        return pad(hours % 12 === 0 ? 12 : hours % 12);
      case 'p':
        return hours < 12 ? 'AM' : 'PM';
      case 'M':
        return pad(date.getMinutes());
      case 'S':
        return pad(date.getSeconds());
      case 'j': {
        const startOfYear = new Date(date.getFullYear(), 0, 1);
        const day = Math.round((dateOnly(date) - dateOnly(startOfYear)) / 86_400_000) + 1;
        return pad(day, 3);
      }
      case '%':
        return '%';
      default:
        throw new TemplateRuntimeError(`unsupported template: strftime directive %${directive}`);
    }
  });
}

function dateOnly(date: Date): number {
  return Date.UTC(date.getFullYear(), date.getMonth(), date.getDate());
}

/** `strftime_now(format)`: the time of the render (transformers defines it the same way). */
export function strftimeNow(now: () => Date): TemplateFunction {
  return new TemplateFunction('strftime_now', (args) => {
    if (typeof args[0] !== 'string')
      throw new TemplateRuntimeError('strftime_now() needs a format string');
    return strftime(now(), args[0]);
  });
}
