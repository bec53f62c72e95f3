// Recursive-descent parser for the Jinja subset chat templates use, with Jinja's operator
// precedence (loosest first):
//   a if b else c  →  or  →  and  →  not  →  == != < <= > >= in, not in  →  + -  →  ~
//   →  * / // %  →  **  →  unary -  →  primary with .attr [index] [a:b] (call) | filter
//   and `is` tests
// so `'x' + content | trim` trims only `content`, and `not x is defined` negates the test.
// Statements: if/elif/else/endif, for/else/endfor (with `if` filter and tuple targets),
// set (including `set ns.attr = …`). Any other tag or syntax is refused by name.

import type {
  BinaryOperator,
  CallArguments,
  CompareOperator,
  Expr,
  TemplateNode,
} from './template-ast.ts';
import type { TemplateToken } from './template-lexer.ts';
import { describeToken, ParseError, TokenCursor } from './token-cursor.ts';

export type ParseResult =
  | { readonly ok: true; readonly nodes: TemplateNode[] }
  | { readonly ok: false; readonly message: string };

export function parseTemplate(tokens: readonly TemplateToken[]): ParseResult {
  const parser = new Parser(tokens);
  try {
    const { nodes, tag } = parser.body(new Set());
    if (tag !== null) throw new ParseError(`template syntax error: unexpected {% ${tag} %}`);
    return { ok: true, nodes };
  } catch (error) {
    if (error instanceof ParseError) return { ok: false, message: error.message };
    // The parser recurses per nesting level: hundreds of nested brackets exhaust the stack.
    if (error instanceof RangeError)
      return { ok: false, message: 'template syntax error: nested too deeply' };
    throw error;
  }
}

const unsupported = (construct: string): ParseError =>
  new ParseError(`unsupported template: ${construct}`);

class Parser {
  readonly #c: TokenCursor;

  constructor(tokens: readonly TemplateToken[]) {
    this.#c = new TokenCursor(tokens);
  }

  /** Nodes up to a block tag named in `stopAt` (consumed up to its name) or the end. */
  body(stopAt: ReadonlySet<string>): { nodes: TemplateNode[]; tag: string | null } {
    const nodes: TemplateNode[] = [];
    for (;;) {
      const token = this.#c.peek();
      if (token === undefined) {
        if (stopAt.size > 0) {
          throw this.#c.syntax(`missing {% ${[...stopAt].join(' / ')} %} before the end`);
        }
        return { nodes, tag: null };
      }
      this.#c.advance(1);
      if (token.type === 'text') {
        nodes.push({ kind: 'text', value: token.value });
        continue;
      }
      if (token.type === 'output') {
        const expr = this.expression();
        this.#c.expectEnd();
        nodes.push({ kind: 'output', expr });
        continue;
      }
      if (token.type !== 'block') throw this.#c.syntax(`unexpected ${describeToken(token)}`);
      const name = this.#c.expectName();
      if (stopAt.has(name)) return { nodes, tag: name };
      switch (name) {
        case 'if':
          nodes.push(this.#ifStatement());
          break;
        case 'for':
          nodes.push(this.#forStatement());
          break;
        case 'set':
          nodes.push(this.#setStatement());
          break;
        case 'elif':
        case 'else':
        case 'endif':
        case 'endfor':
          throw this.#c.syntax(`unexpected {% ${name} %}`);
        default:
          throw unsupported(`{% ${name} %}`);
      }
    }
  }

  #ifStatement(): TemplateNode {
    const branches: Array<{ test: Expr; body: TemplateNode[] }> = [];
    let test = this.expression();
    this.#c.expectEnd();
    for (;;) {
      const { nodes, tag } = this.body(new Set(['elif', 'else', 'endif']));
      branches.push({ test, body: nodes });
      if (tag === 'elif') {
        test = this.expression();
        this.#c.expectEnd();
        continue;
      }
      this.#c.expectEnd();
      if (tag === 'endif') return { kind: 'if', branches, otherwise: [] };
      const otherwise = this.body(new Set(['endif']));
      this.#c.expectEnd();
      return { kind: 'if', branches, otherwise: otherwise.nodes };
    }
  }

  #forStatement(): TemplateNode {
    const targets = [this.#c.expectName()];
    while (this.#c.skipOperator(',')) targets.push(this.#c.expectName());
    if (this.#c.expectName() !== 'in') throw this.#c.syntax('expected "in" in {% for %}');
    const iterable = this.#or();
    const filter = this.#c.skipName('if') ? this.expression() : null;
    if (this.#c.skipName('recursive')) throw unsupported('recursive for loops');
    this.#c.expectEnd();
    const body = this.body(new Set(['else', 'endfor']));
    this.#c.expectEnd();
    let otherwise: TemplateNode[] = [];
    if (body.tag === 'else') {
      otherwise = this.body(new Set(['endfor'])).nodes;
      this.#c.expectEnd();
    }
    return { kind: 'for', targets, iterable, filter, body: body.nodes, otherwise };
  }

  #setStatement(): TemplateNode {
    const target = this.#c.expectName();
    if (this.#c.skipOperator('.')) {
      const attribute = this.#c.expectName();
      if (!this.#c.skipOperator('=')) throw this.#c.syntax('expected "=" in {% set %}');
      const expr = this.expression();
      this.#c.expectEnd();
      return { kind: 'setAttribute', target, attribute, expr };
    }
    if (this.#c.peekOperator(',')) throw unsupported('{% set %} with several targets');
    if (this.#c.peek()?.type === 'end') throw unsupported('block {% set %}…{% endset %}');
    if (!this.#c.skipOperator('=')) throw this.#c.syntax('expected "=" in {% set %}');
    const expr = this.expression();
    this.#c.expectEnd();
    return { kind: 'set', target, expr };
  }

  expression(): Expr {
    let expr = this.#or();
    while (this.#c.skipName('if')) {
      const test = this.#or();
      const otherwise = this.#c.skipName('else') ? this.expression() : null;
      expr = { kind: 'conditional', test, then: expr, otherwise };
    }
    return expr;
  }

  #or(): Expr {
    let left = this.#and();
    while (this.#c.skipName('or')) left = { kind: 'binary', op: 'or', left, right: this.#and() };
    return left;
  }

  #and(): Expr {
    let left = this.#not();
    while (this.#c.skipName('and')) left = { kind: 'binary', op: 'and', left, right: this.#not() };
    return left;
  }

  #not(): Expr {
    if (this.#c.skipName('not')) return { kind: 'not', operand: this.#not() };
    return this.#compare();
  }

  #compare(): Expr {
    const first = this.#sum();
    const rest: Array<[CompareOperator, Expr]> = [];
    for (;;) {
      const token = this.#c.peek();
      if (token?.type === 'operator' && ['==', '!=', '<', '<=', '>', '>='].includes(token.value)) {
        this.#c.advance(1);
        rest.push([token.value as CompareOperator, this.#sum()]);
      } else if (this.#c.skipName('in')) {
        rest.push(['in', this.#sum()]);
      } else if (this.#c.peekName('not') && this.#c.peekName('in', 1)) {
        this.#c.advance(2);
        rest.push(['not in', this.#sum()]);
      } else {
        break;
      }
    }
    return rest.length === 0 ? first : { kind: 'compare', first, rest };
  }

  #sum(): Expr {
    return this.#binaryLevel(['+', '-'], () => this.#concat());
  }

  #concat(): Expr {
    return this.#binaryLevel(['~'], () => this.#product());
  }

  #product(): Expr {
    return this.#binaryLevel(['*', '/', '//', '%'], () => this.#power());
  }

  #power(): Expr {
    return this.#binaryLevel(['**'], () => this.#unary());
  }

  #binaryLevel(ops: readonly string[], next: () => Expr): Expr {
    let left = next();
    for (;;) {
      const token = this.#c.peek();
      if (token?.type !== 'operator' || !ops.includes(token.value)) return left;
      this.#c.advance(1);
      left = { kind: 'binary', op: token.value as BinaryOperator, left, right: next() };
    }
  }

  #unary(): Expr {
    let expr: Expr;
    if (this.#c.skipOperator('-')) expr = { kind: 'negate', operand: this.#unaryNoFilter() };
    else if (this.#c.skipOperator('+')) expr = this.#unaryNoFilter();
    else expr = this.#postfix(this.#primary());
    return this.#filters(expr);
  }

  #unaryNoFilter(): Expr {
    if (this.#c.skipOperator('-')) return { kind: 'negate', operand: this.#unaryNoFilter() };
    if (this.#c.skipOperator('+')) return this.#unaryNoFilter();
    return this.#postfix(this.#primary());
  }

  #filters(value: Expr): Expr {
    let expr = value;
    for (;;) {
      if (this.#c.skipOperator('|')) {
        const name = this.#c.expectName();
        const call = this.#c.peekOperator('(') ? this.#callArguments() : { args: [], kwargs: [] };
        expr = this.#postfix({ kind: 'filter', value: expr, name, call });
      } else if (this.#c.skipName('is')) {
        const negated = this.#c.skipName('not');
        const name = this.#c.expectName();
        let args: Expr[] = [];
        if (this.#c.peekOperator('(')) {
          const call = this.#callArguments();
          if (call.kwargs.length > 0) throw unsupported(`keyword arguments to test "${name}"`);
          args = [...call.args];
        } else if (this.#startsPrimary()) {
          args = [this.#postfix(this.#primary())];
        }
        expr = { kind: 'test', value: expr, name, negated, args };
      } else {
        return expr;
      }
    }
  }

  #startsPrimary(): boolean {
    const token = this.#c.peek();
    if (token === undefined) return false;
    if (token.type === 'string' || token.type === 'number') return true;
    if (token.type === 'name')
      return !['else', 'or', 'and', 'if', 'in', 'not', 'is'].includes(token.value);
    return token.type === 'operator' && (token.value === '[' || token.value === '{');
  }

  #postfix(value: Expr): Expr {
    let expr = value;
    for (;;) {
      if (this.#c.skipOperator('.')) {
        const token = this.#c.next();
        if (token?.type === 'name') expr = { kind: 'attribute', object: expr, name: token.value };
        else if (token?.type === 'number' && Number.isInteger(token.value)) {
          expr = { kind: 'item', object: expr, index: { kind: 'literal', value: token.value } };
        } else throw this.#c.syntax('expected an attribute name after "."');
      } else if (this.#c.skipOperator('[')) {
        expr = this.#subscript(expr);
      } else if (this.#c.peekOperator('(')) {
        expr = { kind: 'call', callee: expr, call: this.#callArguments() };
      } else {
        return expr;
      }
    }
  }

  #subscript(object: Expr): Expr {
    const part = (): Expr | null =>
      this.#c.peekOperator(':') || this.#c.peekOperator(']') ? null : this.expression();
    const start = part();
    if (this.#c.skipOperator(']')) {
      if (start === null) throw this.#c.syntax('empty subscript');
      return { kind: 'item', object, index: start };
    }
    if (!this.#c.skipOperator(':')) throw this.#c.syntax('expected "]" or ":" in a subscript');
    const stop = part();
    const step = this.#c.skipOperator(':') ? part() : null;
    if (!this.#c.skipOperator(']')) throw this.#c.syntax('expected "]" after a slice');
    return { kind: 'slice', object, start, stop, step };
  }

  #callArguments(): CallArguments {
    this.#c.skipOperator('(');
    const args: Expr[] = [];
    const kwargs: Array<[string, Expr]> = [];
    while (!this.#c.skipOperator(')')) {
      if (args.length + kwargs.length > 0 && !this.#c.skipOperator(',')) {
        throw this.#c.syntax('expected "," or ")" in arguments');
      }
      if (this.#c.skipOperator(')')) break;
      const token = this.#c.peek();
      const after = this.#c.peek(1);
      if (token?.type === 'name' && after?.type === 'operator' && after.value === '=') {
        this.#c.advance(2);
        kwargs.push([token.value, this.expression()]);
      } else {
        if (kwargs.length > 0) throw this.#c.syntax('positional argument after keyword argument');
        args.push(this.expression());
      }
    }
    return { args, kwargs };
  }

  #primary(): Expr {
    const token = this.#c.next();
    if (token === undefined) throw this.#c.syntax('unexpected end of template');
    switch (token.type) {
      case 'name':
        switch (token.value) {
          case 'true':
          case 'True':
            return { kind: 'literal', value: true };
          case 'false':
          case 'False':
            return { kind: 'literal', value: false };
          case 'none':
          case 'None':
            return { kind: 'literal', value: null };
          default:
            return { kind: 'name', name: token.value };
        }
      case 'string': {
        // Adjacent literals concatenate, as in Python.
        let value = token.value;
        for (let next = this.#c.peek(); next?.type === 'string'; next = this.#c.peek()) {
          value += next.value;
          this.#c.advance(1);
        }
        return { kind: 'literal', value };
      }
      case 'number':
        return { kind: 'literal', value: token.value };
      case 'operator':
        if (token.value === '(') {
          const inner = this.expression();
          if (this.#c.peekOperator(',')) throw unsupported('tuples');
          if (!this.#c.skipOperator(')')) throw this.#c.syntax('expected ")"');
          return inner;
        }
        if (token.value === '[') {
          const items: Expr[] = [];
          while (!this.#c.skipOperator(']')) {
            if (items.length > 0 && !this.#c.skipOperator(','))
              throw this.#c.syntax('expected "," in a list');
            if (this.#c.skipOperator(']')) break;
            items.push(this.expression());
          }
          return { kind: 'list', items };
        }
        if (token.value === '{') {
          const entries: Array<[Expr, Expr]> = [];
          while (!this.#c.skipOperator('}')) {
            if (entries.length > 0 && !this.#c.skipOperator(','))
              throw this.#c.syntax('expected "," in a dict');
            if (this.#c.skipOperator('}')) break;
            const key = this.expression();
            if (!this.#c.skipOperator(':')) throw this.#c.syntax('expected ":" in a dict');
            entries.push([key, this.expression()]);
          }
          return { kind: 'dict', entries };
        }
        throw this.#c.syntax(`unexpected ${describeToken(token)}`);
      case 'text':
      case 'output':
      case 'block':
      case 'end':
        throw this.#c.syntax(`unexpected ${describeToken(token)}`);
    }
  }
}
