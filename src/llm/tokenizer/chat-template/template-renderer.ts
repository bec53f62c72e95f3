// Evaluates a parsed chat template. Scoping follows Jinja: `set` at the top level or inside
// `if` assigns in the enclosing scope, while each iteration of a `for` body has its own scope
// (a variable set in iteration 1 is gone in iteration 2 and after the loop); only a
// namespace() object carries state out of a loop. Runtime errors (a failed
// raise_exception, `'a' + 1`, an attribute of an undefined value) throw
// TemplateRuntimeError, which chat-template.ts turns into an error value.

import type { Expr, TemplateNode } from './template-ast.ts';
import {
  callMethod,
  filterKeywords,
  filters,
  isHarmlessKeyword,
  iterate,
  tests,
} from './template-builtins.ts';
import { pyArithmetic, pyCompare, pySlice } from './python-operators.ts';
import {
  asNumber,
  isDict,
  Namespace,
  pyStr,
  TemplateFunction,
  TemplateRuntimeError,
  truthy,
  typeName,
} from './python-values.ts';

class Scope {
  readonly #vars = new Map<string, unknown>();
  readonly #parent: Scope | null;

  constructor(parent: Scope | null) {
    this.#parent = parent;
  }

  get(name: string): unknown {
    if (this.#vars.has(name)) return this.#vars.get(name);
    return this.#parent === null ? undefined : this.#parent.get(name);
  }

  set(name: string, value: unknown): void {
    this.#vars.set(name, value);
  }
}

/** Renders the nodes with the given variables; throws TemplateRuntimeError. */
export function renderNodes(
  nodes: readonly TemplateNode[],
  variables: ReadonlyMap<string, unknown>,
): string {
  const root = new Scope(null);
  for (const [name, value] of variables) root.set(name, value);
  const out: string[] = [];
  renderInto(nodes, new Scope(root), out);
  return out.join('');
}

function renderInto(nodes: readonly TemplateNode[], scope: Scope, out: string[]): void {
  for (const node of nodes) {
    switch (node.kind) {
      case 'text':
        out.push(node.value);
        break;
      case 'output':
        out.push(pyStr(evaluate(node.expr, scope)));
        break;
      case 'if': {
        const branch = node.branches.find((b) => truthy(evaluate(b.test, scope)));
        renderInto(branch === undefined ? node.otherwise : branch.body, scope, out);
        break;
      }
      case 'for':
        renderFor(node, scope, out);
        break;
      case 'set':
        scope.set(node.target, evaluate(node.expr, scope));
        break;
      case 'setAttribute': {
        const target = scope.get(node.target);
        if (!(target instanceof Namespace)) {
          throw new TemplateRuntimeError(
            `cannot assign attribute on non-namespace object '${node.target}'`,
          );
        }
        target.attributes.set(node.attribute, evaluate(node.expr, scope));
        break;
      }
    }
  }
}

function renderFor(
  node: Extract<TemplateNode, { kind: 'for' }>,
  scope: Scope,
  out: string[],
): void {
  const bind = (itemScope: Scope, item: unknown): void => {
    if (node.targets.length === 1) {
      itemScope.set(node.targets[0] ?? '', item);
      return;
    }
    const parts = Array.isArray(item) ? item : typeof item === 'string' ? Array.from(item) : null;
    if (parts?.length !== node.targets.length) {
      throw new TemplateRuntimeError(
        `cannot unpack ${typeName(item)} into ${node.targets.length} names`,
      );
    }
    node.targets.forEach((name, i) => itemScope.set(name, parts[i]));
  };
  let items = iterate(evaluate(node.iterable, scope));
  if (node.filter !== null) {
    const filter = node.filter;
    items = items.filter((item) => {
      const filterScope = new Scope(scope);
      bind(filterScope, item);
      return truthy(evaluate(filter, filterScope));
    });
  }
  if (items.length === 0) {
    renderInto(node.otherwise, scope, out);
    return;
  }
  items.forEach((item, i) => {
    const itemScope = new Scope(scope);
    bind(itemScope, item);
    itemScope.set('loop', {
      index: i + 1,
      index0: i,
      revindex: items.length - i,
      revindex0: items.length - i - 1,
      first: i === 0,
      last: i === items.length - 1,
      length: items.length,
      previtem: i > 0 ? items[i - 1] : undefined,
      nextitem: i + 1 < items.length ? items[i + 1] : undefined,
    });
    renderInto(node.body, itemScope, out);
  });
}

function evaluate(expr: Expr, scope: Scope): unknown {
  switch (expr.kind) {
    case 'literal':
      return expr.value;
    case 'name':
      return scope.get(expr.name);
    case 'list':
      return expr.items.map((item) => evaluate(item, scope));
    case 'dict': {
      const dict: Record<string, unknown> = {};
      for (const [keyExpr, valueExpr] of expr.entries) {
        const key = evaluate(keyExpr, scope);
        if (typeof key !== 'string') throw new TemplateRuntimeError('dict keys must be strings');
        dict[key] = evaluate(valueExpr, scope);
      }
      return dict;
    }
    case 'attribute':
      return getAttribute(evaluate(expr.object, scope), expr.name, expr.object);
    case 'item':
      return getItem(evaluate(expr.object, scope), evaluate(expr.index, scope), expr.object);
    case 'slice':
      return pySlice(
        evaluate(expr.object, scope),
        expr.start === null ? null : evaluate(expr.start, scope),
        expr.stop === null ? null : evaluate(expr.stop, scope),
        expr.step === null ? null : evaluate(expr.step, scope),
      );
    case 'call':
      return call(expr, scope);
    case 'filter': {
      const filter = filters.get(expr.name);
      if (filter === undefined)
        throw new TemplateRuntimeError(`unsupported template: filter "${expr.name}"`);
      const { args, kwargs } = evaluateArguments(expr.call, scope);
      // A keyword this filter does not implement would be ignored silently: refuse it.
      const known = filterKeywords.get(expr.name) ?? [];
      for (const [name, value] of kwargs) {
        if (known.includes(name) || isHarmlessKeyword(expr.name, name, value)) continue;
        throw new TemplateRuntimeError(
          `unsupported template: filter "${expr.name}" with keyword argument "${name}"`,
        );
      }
      return filter(evaluate(expr.value, scope), args, kwargs);
    }
    case 'test': {
      const test = tests.get(expr.name);
      if (test === undefined)
        throw new TemplateRuntimeError(`unsupported template: test "${expr.name}"`);
      const result = test(
        evaluate(expr.value, scope),
        expr.args.map((a) => evaluate(a, scope)),
      );
      return expr.negated ? !result : result;
    }
    case 'not':
      return !truthy(evaluate(expr.operand, scope));
    case 'negate': {
      const value = evaluate(expr.operand, scope);
      const n = asNumber(value);
      if (n === null)
        throw new TemplateRuntimeError(`bad operand type for unary -: '${typeName(value)}'`);
      return -n;
    }
    case 'binary': {
      const left = evaluate(expr.left, scope);
      // `and` / `or` return an operand, and short-circuit, as in Python.
      if (expr.op === 'and') return truthy(left) ? evaluate(expr.right, scope) : left;
      if (expr.op === 'or') return truthy(left) ? left : evaluate(expr.right, scope);
      return pyArithmetic(expr.op, left, evaluate(expr.right, scope));
    }
    case 'compare': {
      let left = evaluate(expr.first, scope);
      for (const [op, rightExpr] of expr.rest) {
        const right = evaluate(rightExpr, scope);
        if (!pyCompare(op, left, right)) return false;
        left = right;
      }
      return true;
    }
    case 'conditional':
      if (truthy(evaluate(expr.test, scope))) return evaluate(expr.then, scope);
      return expr.otherwise === null ? undefined : evaluate(expr.otherwise, scope);
  }
}

/** How an error message names the expression: 'messages', 'message'.content, or value. */
function describeExpr(expr: Expr): string {
  if (expr.kind === 'name') return `'${expr.name}'`;
  if (expr.kind === 'attribute') return `${describeExpr(expr.object)}.${expr.name}`;
  return 'value';
}

function getAttribute(object: unknown, name: string, objectExpr: Expr): unknown {
  if (object === undefined) {
    throw new TemplateRuntimeError(`${describeExpr(objectExpr)} is undefined (reading .${name})`);
  }
  if (object instanceof Namespace) return object.attributes.get(name);
  if (isDict(object)) return Object.hasOwn(object, name) ? object[name] : undefined;
  return undefined;
}

function getItem(object: unknown, index: unknown, objectExpr: Expr): unknown {
  if (object === undefined) {
    throw new TemplateRuntimeError(
      `${describeExpr(objectExpr)} is undefined (reading [${pyStr(index)}])`,
    );
  }
  if (Array.isArray(object) || typeof object === 'string') {
    const items = typeof object === 'string' ? Array.from(object) : object;
    const i = asNumber(index);
    if (i === null || !Number.isInteger(i)) return undefined;
    return items[i < 0 ? items.length + i : i];
  }
  if (object instanceof Namespace && typeof index === 'string') return object.attributes.get(index);
  if (isDict(object) && typeof index === 'string')
    return Object.hasOwn(object, index) ? object[index] : undefined;
  return undefined;
}

function evaluateArguments(
  call: { readonly args: readonly Expr[]; readonly kwargs: ReadonlyArray<readonly [string, Expr]> },
  scope: Scope,
): { args: unknown[]; kwargs: Map<string, unknown> } {
  return {
    args: call.args.map((a) => evaluate(a, scope)),
    kwargs: new Map(call.kwargs.map(([k, v]) => [k, evaluate(v, scope)])),
  };
}

function call(expr: Extract<Expr, { kind: 'call' }>, scope: Scope): unknown {
  const { args, kwargs } = evaluateArguments(expr.call, scope);
  if (expr.callee.kind === 'attribute') {
    const object = evaluate(expr.callee.object, scope);
    if (object === undefined) {
      throw new TemplateRuntimeError(
        `${describeExpr(expr.callee.object)} is undefined (calling .${expr.callee.name}())`,
      );
    }
    const member = getAttribute(object, expr.callee.name, expr.callee.object);
    if (member instanceof TemplateFunction) return member.call(args, kwargs);
    if (kwargs.size > 0)
      throw new TemplateRuntimeError('unsupported template: keyword arguments to methods');
    return callMethod(object, expr.callee.name, args);
  }
  const callee = evaluate(expr.callee, scope);
  if (callee instanceof TemplateFunction) return callee.call(args, kwargs);
  if (callee === undefined)
    throw new TemplateRuntimeError(
      `${describeExpr(expr.callee)} is undefined (called as a function)`,
    );
  throw new TemplateRuntimeError(`'${typeName(callee)}' object is not callable`);
}
