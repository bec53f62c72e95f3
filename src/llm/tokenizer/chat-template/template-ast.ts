// The syntax tree of a parsed chat template (the Jinja subset; see template-parser.ts).

export type TemplateNode =
  | { readonly kind: 'text'; readonly value: string }
  | { readonly kind: 'output'; readonly expr: Expr }
  | {
      readonly kind: 'if';
      readonly branches: ReadonlyArray<{ readonly test: Expr; readonly body: TemplateNode[] }>;
      readonly otherwise: TemplateNode[];
    }
  | {
      readonly kind: 'for';
      /** One name, or several to unpack each item into (`for key, value in …`). */
      readonly targets: readonly string[];
      readonly iterable: Expr;
      /** `for x in xs if cond`: items failing it are skipped (and not counted by `loop`). */
      readonly filter: Expr | null;
      readonly body: TemplateNode[];
      /** `{% else %}` inside a for: rendered when nothing was iterated. */
      readonly otherwise: TemplateNode[];
    }
  | { readonly kind: 'set'; readonly target: string; readonly expr: Expr }
  /** `{% set ns.attr = … %}`: assignment to a namespace() object's attribute. */
  | {
      readonly kind: 'setAttribute';
      readonly target: string;
      readonly attribute: string;
      readonly expr: Expr;
    };

export type BinaryOperator = '+' | '-' | '*' | '/' | '//' | '%' | '**' | '~' | 'and' | 'or';
export type CompareOperator = '==' | '!=' | '<' | '<=' | '>' | '>=' | 'in' | 'not in';

export interface CallArguments {
  readonly args: readonly Expr[];
  readonly kwargs: ReadonlyArray<readonly [string, Expr]>;
}

export type Expr =
  | { readonly kind: 'literal'; readonly value: string | number | boolean | null }
  | { readonly kind: 'name'; readonly name: string }
  | { readonly kind: 'list'; readonly items: readonly Expr[] }
  | { readonly kind: 'dict'; readonly entries: ReadonlyArray<readonly [Expr, Expr]> }
  | { readonly kind: 'attribute'; readonly object: Expr; readonly name: string }
  | { readonly kind: 'item'; readonly object: Expr; readonly index: Expr }
  | {
      readonly kind: 'slice';
      readonly object: Expr;
      readonly start: Expr | null;
      readonly stop: Expr | null;
      readonly step: Expr | null;
    }
  | { readonly kind: 'call'; readonly callee: Expr; readonly call: CallArguments }
  | {
      readonly kind: 'filter';
      readonly value: Expr;
      readonly name: string;
      readonly call: CallArguments;
    }
  | {
      readonly kind: 'test';
      readonly value: Expr;
      readonly name: string;
      readonly negated: boolean;
      readonly args: readonly Expr[];
    }
  | { readonly kind: 'not'; readonly operand: Expr }
  | { readonly kind: 'negate'; readonly operand: Expr }
  | {
      readonly kind: 'binary';
      readonly op: BinaryOperator;
      readonly left: Expr;
      readonly right: Expr;
    }
  | {
      readonly kind: 'compare';
      readonly first: Expr;
      readonly rest: ReadonlyArray<readonly [CompareOperator, Expr]>;
    }
  | {
      readonly kind: 'conditional';
      readonly test: Expr;
      readonly then: Expr;
      readonly otherwise: Expr | null;
    };
