// Chat templates (tokenizer_config.json's `chat_template`): a Jinja subset interpreter
// sufficient for the Llama-2, Llama-3, ChatML, Zephyr and Mistral templates and others built
// from the same parts: if/elif/else, for (with loop.index0/first/last/length…), set and
// namespace(), filters (trim, length, tojson, select/reject/selectattr/rejectattr/map, …),
// `is defined`-style tests, slicing, + / ~ concatenation, comparisons, and/or/not/in,
// raise_exception, strftime_now (Llama-3.2's date line), whitespace control.
// Rendering matches transformers' apply_chat_template (trim_blocks, lstrip_blocks).
//
// A template that uses anything else is refused when compiled, as
// "unsupported template: <construct>"; errors at render time (a raise_exception call,
// a type error) come back as values too.

import type { Expr, TemplateNode } from './template-ast.ts';
import { filters, globalFunctions, strftimeNow, tests } from './template-builtins.ts';
import { lexTemplate } from './template-lexer.ts';
import { parseTemplate } from './template-parser.ts';
import { TemplateRuntimeError } from './python-values.ts';
import { renderNodes } from './template-renderer.ts';

/** One chat message; templates read `role` and `content`, and may read other fields. */
export interface ChatMessage {
  readonly role: string;
  readonly content: unknown;
  readonly [field: string]: unknown;
}

export type RenderResult =
  { readonly ok: true; readonly text: string } | { readonly ok: false; readonly message: string };

export class ChatTemplate {
  readonly #nodes: readonly TemplateNode[];

  private constructor(nodes: readonly TemplateNode[]) {
    this.#nodes = nodes;
  }

  static compile(
    source: string,
  ): { ok: true; template: ChatTemplate } | { ok: false; message: string } {
    const lexed = lexTemplate(source);
    if (!lexed.ok) return lexed;
    const parsed = parseTemplate(lexed.tokens);
    if (!parsed.ok) return parsed;
    const problem = findUnsupported(parsed.nodes);
    if (problem !== null) return { ok: false, message: `unsupported template: ${problem}` };
    return { ok: true, template: new ChatTemplate(parsed.nodes) };
  }

  /**
   * Renders with the given variables (JSON-like values: messages, add_generation_prompt,
   * bos_token, …) plus the global functions. Never throws for template behaviour.
   */
  render(
    variables: Readonly<Record<string, unknown>>,
    options: { readonly now?: () => Date } = {},
  ): RenderResult {
    const scope = new Map<string, unknown>();
    for (const fn of globalFunctions) scope.set(fn.name, fn);
    scope.set('strftime_now', strftimeNow(options.now ?? (() => new Date())));
    for (const [name, value] of Object.entries(variables)) scope.set(name, value);
    try {
      return { ok: true, text: renderNodes(this.#nodes, scope) };
    } catch (error) {
      if (error instanceof TemplateRuntimeError) return { ok: false, message: error.message };
      if (error instanceof RangeError) {
        // Call stack exhausted by a pathologically nested value.
        return { ok: false, message: `template error: ${error.message}` };
      }
      throw error;
    }
  }
}

/** The first filter or test name the runtime does not implement, described; else null. */
function findUnsupported(nodes: readonly TemplateNode[]): string | null {
  for (const node of nodes) {
    let found: string | null = null;
    switch (node.kind) {
      case 'text':
        break;
      case 'output':
      case 'set':
      case 'setAttribute':
        found = checkExpr(node.expr);
        break;
      case 'if':
        for (const branch of node.branches) {
          found ??= checkExpr(branch.test) ?? findUnsupported(branch.body);
        }
        found ??= findUnsupported(node.otherwise);
        break;
      case 'for':
        found =
          checkExpr(node.iterable) ??
          (node.filter === null ? null : checkExpr(node.filter)) ??
          findUnsupported(node.body) ??
          findUnsupported(node.otherwise);
        break;
    }
    if (found !== null) return found;
  }
  return null;
}

function checkExpr(expr: Expr): string | null {
  const children: Expr[] = [];
  switch (expr.kind) {
    case 'literal':
    case 'name':
      return null;
    case 'list':
      children.push(...expr.items);
      break;
    case 'dict':
      for (const [k, v] of expr.entries) children.push(k, v);
      break;
    case 'attribute':
      children.push(expr.object);
      break;
    case 'item':
      children.push(expr.object, expr.index);
      break;
    case 'slice':
      for (const part of [expr.object, expr.start, expr.stop, expr.step]) {
        if (part !== null) children.push(part);
      }
      break;
    case 'call':
      children.push(expr.callee, ...expr.call.args, ...expr.call.kwargs.map(([, v]) => v));
      break;
    case 'filter':
      if (!filters.has(expr.name)) return `filter "${expr.name}"`;
      children.push(expr.value, ...expr.call.args, ...expr.call.kwargs.map(([, v]) => v));
      break;
    case 'test':
      if (!tests.has(expr.name)) return `test "${expr.name}"`;
      children.push(expr.value, ...expr.args);
      break;
    case 'not':
    case 'negate':
      children.push(expr.operand);
      break;
    case 'binary':
      children.push(expr.left, expr.right);
      break;
    case 'compare':
      children.push(expr.first, ...expr.rest.map(([, e]) => e));
      break;
    case 'conditional':
      children.push(expr.test, expr.then);
      if (expr.otherwise !== null) children.push(expr.otherwise);
      break;
  }
  for (const child of children) {
    const found = checkExpr(child);
    if (found !== null) return found;
  }
  return null;
}
