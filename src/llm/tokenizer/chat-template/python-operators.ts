// Python's operators on template values: arithmetic and concatenation (`+` joins strings
// and lists, `*` repeats them, `//` and `%` floor like Python), comparisons (`==` is deep,
// `<` needs two numbers or two strings, `in` is substring / membership / key), and slicing
// with negative bounds and steps. Type mismatches throw TemplateRuntimeError with Python's
// wording.

import type { BinaryOperator, CompareOperator } from './template-ast.ts';
import {
  asNumber,
  isDict,
  Namespace,
  pyEquals,
  pyStr,
  TemplateRuntimeError,
  typeName,
} from './python-values.ts';

export type ArithmeticOperator = Exclude<BinaryOperator, 'and' | 'or'>;

/** `left op right` for the arithmetic operators and `~`, with Python's rules. */
export function pyArithmetic(op: ArithmeticOperator, left: unknown, right: unknown): unknown {
  if (op === '~') return pyStr(left) + pyStr(right);
  const a = asNumber(left);
  const b = asNumber(right);
  const bad = (): TemplateRuntimeError =>
    new TemplateRuntimeError(
      `unsupported operand type(s) for ${op}: '${typeName(left)}' and '${typeName(right)}'`,
    );
  if (op === '+') {
    if (typeof left === 'string' && typeof right === 'string') return left + right;
    if (Array.isArray(left) && Array.isArray(right))
      return [...(left as unknown[]), ...(right as unknown[])];
    if (a === null || b === null) throw bad();
    return a + b;
  }
  if (op === '*') {
    const repeat = (items: string | unknown[], count: number): unknown =>
      typeof items === 'string'
        ? items.repeat(Math.max(0, count))
        : Array.from({ length: Math.max(0, count) }, () => items).flat();
    if ((typeof left === 'string' || Array.isArray(left)) && b !== null && Number.isInteger(b))
      return repeat(left, b);
    if ((typeof right === 'string' || Array.isArray(right)) && a !== null && Number.isInteger(a))
      return repeat(right, a);
  }
  if (a === null || b === null) throw bad();
  switch (op) {
    case '-':
      return a - b;
    case '*':
      return a * b;
    case '**':
      return a ** b;
    case '/':
    case '//':
    case '%': {
      if (b === 0) throw new TemplateRuntimeError('division by zero');
      if (op === '/') return a / b;
      if (op === '//') return Math.floor(a / b);
      return a - b * Math.floor(a / b);
    }
  }
}

/** `left op right` for the comparison operators (`in` tests membership, as in Python). */
export function pyCompare(op: CompareOperator, left: unknown, right: unknown): boolean {
  switch (op) {
    case '==':
      return pyEquals(left, right);
    case '!=':
      return !pyEquals(left, right);
    case 'in':
      return contains(right, left);
    case 'not in':
      return !contains(right, left);
    case '<':
    case '<=':
    case '>':
    case '>=': {
      const a = asNumber(left);
      const b = asNumber(right);
      let order: number;
      if (a !== null && b !== null) order = a - b;
      else if (typeof left === 'string' && typeof right === 'string')
        order = left < right ? -1 : left > right ? 1 : 0;
      else {
        throw new TemplateRuntimeError(
          `'${op}' not supported between instances of '${typeName(left)}' and '${typeName(right)}'`,
        );
      }
      if (op === '<') return order < 0;
      if (op === '<=') return order <= 0;
      if (op === '>') return order > 0;
      return order >= 0;
    }
  }
}

function contains(container: unknown, item: unknown): boolean {
  if (container === undefined) return false;
  if (typeof container === 'string') {
    if (typeof item !== 'string') {
      throw new TemplateRuntimeError(
        `'in <string>' requires string as left operand, not ${typeName(item)}`,
      );
    }
    return container.includes(item);
  }
  if (Array.isArray(container)) return container.some((x) => pyEquals(x, item));
  if (isDict(container)) return typeof item === 'string' && Object.hasOwn(container, item);
  if (container instanceof Namespace)
    return typeof item === 'string' && container.attributes.has(item);
  throw new TemplateRuntimeError(`argument of type '${typeName(container)}' is not iterable`);
}

/** Python slicing (negative bounds count from the end; a negative step walks backwards). */
export function pySlice(object: unknown, start: unknown, stop: unknown, step: unknown): unknown {
  const isString = typeof object === 'string';
  if (!isString && !Array.isArray(object)) {
    throw new TemplateRuntimeError(`'${typeName(object)}' object is not subscriptable`);
  }
  const items: unknown[] = isString ? Array.from(object) : (object as unknown[]);
  const bound = (value: unknown, name: string): number | null => {
    if (value === null || value === undefined) return null;
    const n = asNumber(value);
    if (n === null || !Number.isInteger(n))
      throw new TemplateRuntimeError(`slice ${name} must be an int`);
    return n;
  };
  const stepValue = bound(step, 'step') ?? 1;
  if (stepValue === 0) throw new TemplateRuntimeError('slice step cannot be zero');
  const n = items.length;
  const clamp = (value: number | null, fallback: number, low: number, high: number): number => {
    if (value === null) return fallback;
    const v = value < 0 ? value + n : value;
    return Math.min(Math.max(v, low), high);
  };
  const out: unknown[] = [];
  if (stepValue > 0) {
    const from = clamp(bound(start, 'start'), 0, 0, n);
    const to = clamp(bound(stop, 'stop'), n, 0, n);
    for (let i = from; i < to; i += stepValue) out.push(items[i]);
  } else {
    const from = clamp(bound(start, 'start'), n - 1, -1, n - 1);
    const to = clamp(bound(stop, 'stop'), -1, -1, n - 1);
    for (let i = from; i > to; i += stepValue) out.push(items[i]);
  }
  return isString ? out.join('') : out;
}
