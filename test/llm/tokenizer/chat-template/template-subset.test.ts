// The Jinja subset feature by feature. Every expected output below is what Jinja2 (with
// transformers' trim_blocks / lstrip_blocks and its tojson) renders for the same template
// and variables; constructs outside the subset must be refused by name.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ChatTemplate } from '../../../../src/llm/tokenizer/chat-template/chat-template.ts';

const messages = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: ' Hi! ' },
  { role: 'assistant', content: 'Hello.' },
];

function render(
  source: string,
  extra: Record<string, unknown> = {},
): { ok: true; text: string } | { ok: false; message: string } {
  const compiled = ChatTemplate.compile(source);
  if (!compiled.ok) return compiled;
  return compiled.template.render({
    messages,
    add_generation_prompt: true,
    bos_token: '<s>',
    eos_token: '</s>',
    ...extra,
  });
}

const cases: ReadonlyArray<readonly [string, string, string, Record<string, unknown>?]> = [
  [
    'loop variables',
    '{% for m in messages %}{{ loop.index0 }}{{ loop.index }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}|{% endfor %}',
    '01TrueFalse33|12FalseFalse32|23FalseTrue31|',
  ],
  [
    'indexing and slicing',
    "{{ messages[1:]|length }} {{ messages[-1].content }} {{ messages[0]['role'] }} {{ (messages[::-1]|first).role }}",
    '2 Hello. system assistant',
  ],
  [
    'trim filter and string methods',
    "{{ messages[1].content|trim }}|{{ messages[1].content.strip() }}|{{ '  x  '.lstrip() }}|{{ 'xxaxx'.rstrip('x') }}|{{ 'abc'|upper }}",
    'Hi!|Hi!|x  |xxa|ABC',
  ],
  [
    'arithmetic and concatenation with Python semantics',
    "{{ 'a' + 'b' ~ 1 ~ none }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 % 3 }} {{ 2 ** 10 }} {{ -3 // 2 }} {{ 'ab' * 3 }}",
    'ab1None 7 9 1 1024 -2 ababab',
  ],
  [
    'and/or return an operand; not; conditional expressions',
    "{{ 1 < 2 and 'x' or 'y' }} {{ 0 or '' or 'last' }} {{ not 0 }} {{ 1 if false }}|{{ 'y' if 0 else 'n' }}",
    'x last True |n',
  ],
  [
    'in and not in',
    "{{ 'user' in ['user', 'assistant'] }} {{ 'ss' in 'assistant' }} {{ 'role' in messages[0] }} {{ 'x' not in messages[0] }}",
    'True True True True',
  ],
  [
    'tests',
    "{{ x is defined }} {{ x is not defined }} {{ messages is defined }} {{ none is none }} {{ 3 is odd }} {{ 'a' is string }} {{ {} is mapping }}",
    'False True True True True True True',
  ],
  [
    'tojson as transformers defines it (no HTML escaping, ", " and ": ")',
    "{{ messages[0]|tojson }}\n{{ [1, 'a', true, none, {'k': [1.5]}]|tojson }}\n{{ 'é\"\\\\'|tojson }}",
    '{"role": "system", "content": "Be brief."}\n[1, "a", true, null, {"k": [1.5]}]\n"é\\"\\\\"',
  ],
  [
    'tojson with indent',
    '{{ tools|tojson(indent=4) }}',
    '[\n    {\n        "a": {\n            "b": []\n        },\n        "c": {}\n    }\n]',
    { tools: [{ a: { b: [] }, c: {} }] },
  ],
  [
    'namespace() carries state out of a loop',
    "{% set ns = namespace(found=false) %}{% for m in messages %}{% if m.role == 'assistant' %}{% set ns.found = true %}{% endif %}{% endfor %}{{ ns.found }}",
    'True',
  ],
  [
    'set inside a loop is local to each iteration',
    '{% set x = 1 %}{% for m in messages %}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}',
    '2221',
  ],
  [
    'for … if filter and for … else',
    "{% for m in messages if m.role != 'system' %}{{ loop.index }}{{ m.role }}{% else %}empty{% endfor %}|{% for m in [] %}x{% else %}empty{% endfor %}",
    '1user2assistant|empty',
  ],
  [
    'tuple targets over items()',
    '{% for k, v in messages[0].items() %}{{ k }}={{ v }};{% endfor %}',
    'role=system;content=Be brief.;',
  ],
  [
    'whitespace control with - on both sides',
    "  {%- if true -%}  a  {%- endif -%}  \n  b {{- ' c ' -}} d\n",
    'ab c d',
  ],
  [
    'trim_blocks, lstrip_blocks and comments',
    "<{% if true %}\n  x\n  {% endif %}\n>\n    {# comment #}\n<{{ 'v' }}\n>",
    '<  x\n>\n<v\n>',
  ],
  ['+ turns lstrip/trim off for one tag', '{%+ if true %}a{% endif +%}\nb', 'a\nb'],
  [
    'string escapes and adjacent literals',
    "{{ 'a\\tb\\x41\\u00e9' }}{{ \"it's\" }}{{ 'x' 'y' }}",
    "a\tbAéit'sxy",
  ],
  [
    'lists, dicts, and list filters',
    "{{ [1, 2] + [3] }} {{ {'a': 1}['a'] }} {{ [3, 1, 2]|last }} {{ ['a', 'b']|join(', ') }} {{ undefined_thing|default('d') }} {{ ''|default('e', true) }}",
    '[1, 2, 3] 1 2 a, b d e',
  ],
  [
    'range, split, replace, title, capitalize',
    "{{ range(3)|list }} {{ 'Hello World'.split(' ') }} {{ 'a-b-c'.replace('-', '+') }} {{ 'hello world'|title }} {{ 'hELLO'|capitalize }}",
    "[0, 1, 2] ['Hello', 'World'] a+b+c Hello World Hello",
  ],
  [
    'dict methods',
    "{{ messages[0].get('name', 'none') }} {{ messages[0].get('role') }} {{ messages[0].keys()|list }}",
    "none system ['role', 'content']",
  ],
  [
    'comparisons, chained',
    "{{ 1 == 1.0 }} {{ true == 1 }} {{ [1, [2]] == [1, [2]] }} {{ 'a' < 'b' }} {{ 3 >= 3 }} {{ 1 < 2 < 3 }} {{ 2 != 2 }}",
    'True True True True True True False',
  ],
  [
    'missing items and attributes are undefined',
    '{{ messages[10] is defined }} {{ messages[0].missing }}|{{ messages[0].missing is defined }}',
    'False |False',
  ],
];

for (const [name, source, expected, extra] of cases) {
  test(`renders: ${name}`, () => {
    assert.deepEqual(render(source, extra), { ok: true, text: expected });
  });
}

// select/reject/selectattr/rejectattr/map and strftime_now (Llama-3.1 and 3.2 templates use
// them: `builtin_tools | reject('equalto', 'code_interpreter')`, `strftime_now("%d %b %Y")`).
// Expected outputs rendered by Jinja2 3.1.2 with transformers' environment, strftime_now
// fixed at 2026-03-07 15:04:05 local time.
const toolMessages = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: ' Hi! ' },
  {
    role: 'assistant',
    content: 'Hello.',
    tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }],
  },
  { role: 'tool', content: 'sunny' },
];
const fixedNow = (): Date => new Date(2026, 2, 7, 15, 4, 5);

for (const [source, expected] of [
  [
    "{{ ['a', 'code_interpreter', 'b'] | reject('equalto', 'code_interpreter') | join(', ') }}",
    'a, b',
  ],
  [
    "{{ [0, 1, '', 'x', none] | select | list }} {{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3] | reject('divisibleby', 3) | list }}",
    "[1, 'x'] [1, 3] [1, 2]",
  ],
  [
    "{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join('|') }}",
    ' Hi! ',
  ],
  [
    "{{ messages | rejectattr('role', 'in', ['system', 'tool']) | map(attribute='role') | list }}",
    "['user', 'assistant']",
  ],
  [
    "{{ messages | selectattr('tool_calls', 'defined') | list | length }} {{ messages | selectattr('tool_calls') | map(attribute='tool_calls.0.function.name') | first }}",
    '1 get_weather',
  ],
  [
    "{{ messages | map(attribute='name', default='anon') | list }} {{ messages | map(attribute='role') | map('upper') | join(',') }}",
    "['anon', 'anon', 'anon', 'anon'] SYSTEM,USER,ASSISTANT,TOOL",
  ],
  [
    // Inherited JS properties are not attributes (Jinja: Undefined, so nothing selected).
    "{{ messages | selectattr('constructor') | list | length }} {{ messages | map(attribute='toString') | select | list | length }}",
    '0 0',
  ],
  [
    "{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%a %y-%m-%d %H:%M:%S %I%p %j %%') }}",
    '07 Mar 2026|Sat 26-03-07 15:04:05 03PM 066 %',
  ],
  [
    "{%- set date_string = strftime_now('%d %b %Y') %}{{ 'Today Date: ' + date_string }}",
    'Today Date: 07 Mar 2026',
  ],
] as const) {
  test(`renders: ${source}`, () => {
    const compiled = ChatTemplate.compile(source);
    assert.ok(compiled.ok, JSON.stringify(compiled));
    assert.deepEqual(compiled.template.render({ messages: toolMessages }, { now: fixedNow }), {
      ok: true,
      text: expected,
    });
  });
}

test('strftime_now: a directive outside the supported set is refused, not printed wrong', () => {
  const compiled = ChatTemplate.compile("{{ strftime_now('%d %Z') }}");
  assert.ok(compiled.ok);
  assert.deepEqual(compiled.template.render({}, { now: fixedNow }), {
    ok: false,
    message: 'unsupported template: strftime directive %Z',
  });
});

test('constructs outside the subset are refused as "unsupported template: …"', () => {
  for (const [source, construct] of [
    ['{% macro f() %}x{% endmacro %}', '{% macro %}'],
    ['{% raw %}x{% endraw %}', '{% raw %}'],
    ['{% set x %}block{% endset %}', 'block {% set %}…{% endset %}'],
    ['{{ messages|groupby("role") }}', 'filter "groupby"'],
    ['{{ messages|map("nosuchfilter")|list }}', 'filter "nosuchfilter"'],
    ['{{ messages|selectattr("role", "sameas", "x")|list }}', 'test "sameas"'],
    ['{{ x is sameas y }}', 'test "sameas"'],
    ['{% for m in messages recursive %}{% endfor %}', 'recursive for loops'],
    ['{% include "other.jinja" %}', '{% include %}'],
    ['{% for m in messages %}{% break %}{% endfor %}', '{% break %}'],
    ['{{ (1, 2) }}', 'tuples'],
    // Keywords a filter does not implement are refused, never silently ignored.
    [
      '{{ messages[0]|tojson(sort_keys=true) }}',
      'filter "tojson" with keyword argument "sort_keys"',
    ],
    ['{{ messages|join(", ", unknown=1) }}', 'filter "join" with keyword argument "unknown"'],
  ] as const) {
    assert.deepEqual(
      render(source),
      { ok: false, message: `unsupported template: ${construct}` },
      source,
    );
  }
  assert.deepEqual(render("{{ 'abc'.zfill(5) }}"), {
    ok: false,
    message: 'unsupported template: method str.zfill()',
  });
});

test('default(none) is None; join by attribute; tojson keywords that restate the defaults', () => {
  assert.deepEqual(render('{{ x|default(none) is none }} {{ x|default(none) }}'), {
    ok: true,
    text: 'True None',
  });
  assert.deepEqual(render('{{ messages|join(", ", attribute="role") }}'), {
    ok: true,
    text: 'system, user, assistant',
  });
  assert.deepEqual(render('{{ {"b": 1}|tojson(ensure_ascii=false, separators=none) }}'), {
    ok: true,
    text: '{"b": 1}',
  });
});

test('a template nested past the parser stack is refused, not thrown', () => {
  const deep = `{{ ${'('.repeat(20_000)}1${')'.repeat(20_000)} }}`;
  assert.deepEqual(render(deep), {
    ok: false,
    message: 'template syntax error: nested too deeply',
  });
});

test('syntax errors name the line', () => {
  assert.deepEqual(render('a\n{% if x %}b'), {
    ok: false,
    message: 'template syntax error (line 2): missing {% elif / else / endif %} before the end',
  });
  assert.deepEqual(render('{{ 1 + }}'), {
    ok: false,
    message: 'template syntax error (line 1): unexpected end of the tag',
  });
  assert.deepEqual(render('{% endfor %}'), {
    ok: false,
    message: 'template syntax error (line 1): unexpected {% endfor %}',
  });
  assert.deepEqual(render("{{ 'abc }}"), {
    ok: false,
    message: 'template syntax error (line 1): unterminated string literal',
  });
  assert.deepEqual(render('x {{ y'), {
    ok: false,
    message: 'template syntax error (line 1): unclosed {{',
  });
});

test('runtime errors are values: raise_exception, type errors, undefined attributes', () => {
  assert.deepEqual(render("{{ raise_exception('no system role') }}"), {
    ok: false,
    message: 'template raised an exception: no system role',
  });
  assert.deepEqual(render("{{ 'a' + 1 }}"), {
    ok: false,
    message: "unsupported operand type(s) for +: 'str' and 'int'",
  });
  assert.deepEqual(render('{{ nothing.content }}'), {
    ok: false,
    message: "'nothing' is undefined (reading .content)",
  });
  assert.deepEqual(render('{{ 1 // 0 }}'), { ok: false, message: 'division by zero' });
  assert.deepEqual(render('{{ range(10 ** 9)|length }}'), {
    ok: false,
    message: 'range() too large',
  });
});
