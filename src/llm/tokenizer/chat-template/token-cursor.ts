// A read position over the lexer's tokens, with the peek/skip/expect helpers the template
// parser is written in, and its syntax errors (which carry the current line).

import type { TemplateToken } from './template-lexer.ts';

/** Thrown inside the parser only; parseTemplate turns it into a result. */
export class ParseError extends Error {}

export class TokenCursor {
  readonly #tokens: readonly TemplateToken[];
  #pos = 0;

  constructor(tokens: readonly TemplateToken[]) {
    this.#tokens = tokens;
  }

  peek(offset = 0): TemplateToken | undefined {
    return this.#tokens[this.#pos + offset];
  }

  next(): TemplateToken | undefined {
    const token = this.#tokens[this.#pos];
    if (token !== undefined) this.#pos += 1;
    return token;
  }

  advance(count: number): void {
    this.#pos += count;
  }

  peekName(name: string, offset = 0): boolean {
    const token = this.peek(offset);
    return token?.type === 'name' && token.value === name;
  }

  skipName(name: string): boolean {
    if (!this.peekName(name)) return false;
    this.#pos += 1;
    return true;
  }

  peekOperator(op: string): boolean {
    const token = this.peek();
    return token?.type === 'operator' && token.value === op;
  }

  skipOperator(op: string): boolean {
    if (!this.peekOperator(op)) return false;
    this.#pos += 1;
    return true;
  }

  expectName(): string {
    const token = this.next();
    if (token?.type !== 'name') throw this.syntax(`expected a name, found ${describeToken(token)}`);
    return token.value;
  }

  expectEnd(): void {
    const token = this.next();
    if (token?.type !== 'end') {
      throw this.syntax(`expected the end of the tag, found ${describeToken(token)}`);
    }
  }

  /** A syntax error at the last token read. */
  syntax(message: string): ParseError {
    const token = this.#tokens[Math.max(0, this.#pos - 1)];
    const line = token === undefined ? '' : ` (line ${token.line})`;
    return new ParseError(`template syntax error${line}: ${message}`);
  }
}

export function describeToken(token: TemplateToken | undefined): string {
  if (token === undefined) return 'end of the template';
  switch (token.type) {
    case 'text':
      return 'text';
    case 'output':
      return '"{{"';
    case 'block':
      return '"{%"';
    case 'end':
      return 'end of the tag';
    case 'string':
      return `string ${JSON.stringify(token.value)}`;
    case 'number':
      return `number ${token.value}`;
    case 'name':
    case 'operator':
      return `"${token.value}"`;
  }
}
