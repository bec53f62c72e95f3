// loadTokenizer on a model folder: tokenizer.json plus tokenizer_config.json (special
// tokens, chat template), generation_config.json (extra EOS ids) and chat_template.jinja.

import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { loadTokenizer } from '../../../src/llm/tokenizer/load-tokenizer.ts';
import type { Tokenizer } from '../../../src/llm/tokenizer/tokenizer.ts';
import { byteLevelIds, byteLevelJson } from './tiny-tokenizers.ts';

async function loadWith(files: Record<string, string>): Promise<Tokenizer> {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-tokenizer-'));
  try {
    await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(byteLevelJson()));
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
    const loaded = await loadTokenizer(dir);
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.message);
    return loaded.tokenizer;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const chatml =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

test('tokenizer.json alone: no special token names, no chat template', async () => {
  const t = await loadWith({});
  assert.equal(t.bosTokenId, undefined);
  assert.deepEqual(t.eosTokenIds, []);
  assert.equal(t.hasChatTemplate, false);
  assert.deepEqual(t.applyChatTemplate([{ role: 'user', content: 'x' }]), {
    ok: false,
    message: 'the tokenizer has no chat template',
  });
  // BOS still comes from the post-processor.
  assert.deepEqual(t.encode('Hello'), [byteLevelIds.bos, 262]);
});

test('special tokens as strings or as AddedToken objects; EOS ids from generation_config', async () => {
  const t = await loadWith({
    'tokenizer_config.json': JSON.stringify({
      bos_token: { __type: 'AddedToken', content: '<|begin_of_text|>', lstrip: false },
      eos_token: '<|end_of_text|>',
      pad_token: null,
      chat_template: chatml,
    }),
    'generation_config.json': JSON.stringify({ eos_token_id: [byteLevelIds.eos, 262] }),
  });
  assert.equal(t.bosTokenId, byteLevelIds.bos);
  assert.deepEqual(t.eosTokenIds, [byteLevelIds.eos, 262]);
  assert.deepEqual(t.specialTokens, { bos: '<|begin_of_text|>', eos: '<|end_of_text|>' });
  const chat = t.applyChatTemplate([{ role: 'user', content: 'Hello' }], {
    addGenerationPrompt: true,
  });
  assert.deepEqual(chat, {
    ok: true,
    text: '<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n',
  });
});

test('a named template list uses "default"; chat_template.jinja replaces the config\'s template', async () => {
  const named = await loadWith({
    'tokenizer_config.json': JSON.stringify({
      chat_template: [
        { name: 'tool_use', template: 'tools' },
        { name: 'default', template: '{{ bos_token }}{{ messages[0].content }}' },
      ],
      bos_token: '<|begin_of_text|>',
    }),
  });
  assert.deepEqual(named.applyChatTemplate([{ role: 'user', content: 'hi' }]), {
    ok: true,
    text: '<|begin_of_text|>hi',
  });

  const fromFile = await loadWith({
    'chat_template.jinja': '{{ messages|length }} {{ add_generation_prompt }}\n',
  });
  assert.deepEqual(
    fromFile.applyChatTemplate([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true }),
    {
      ok: true,
      text: '1 True',
    },
  );

  // Both: the file wins, as in transformers.
  const both = await loadWith({
    'tokenizer_config.json': JSON.stringify({ chat_template: 'from the config' }),
    'chat_template.jinja': 'from the file',
  });
  assert.deepEqual(both.applyChatTemplate([{ role: 'user', content: 'hi' }]), {
    ok: true,
    text: 'from the file',
  });
});

test('extra template variables are passed through; messages may carry other fields', async () => {
  const t = await loadWith({
    'chat_template.jinja':
      "{% for m in messages %}{{ m.name ~ ':' if m.name is defined }}{{ m.content }}{% endfor %}{% if tools %} {{ tools|tojson }}{% endif %}",
  });
  const result = t.applyChatTemplate([{ role: 'user', content: 'hi', name: 'ann' }], {
    variables: { tools: [{ name: 'f' }] },
  });
  assert.deepEqual(result, { ok: true, text: 'ann:hi [{"name": "f"}]' });
});

test('an unsupported chat template does not stop loading; applying it says why', async () => {
  const t = await loadWith({
    'tokenizer_config.json': JSON.stringify({ chat_template: '{% macro m() %}{% endmacro %}' }),
  });
  assert.equal(t.hasChatTemplate, true);
  assert.deepEqual(t.applyChatTemplate([{ role: 'user', content: 'x' }]), {
    ok: false,
    message: 'unsupported template: {% macro %}',
  });
  assert.deepEqual(t.encode('Hello', { addSpecialTokens: false }), [262]);
});

test('a malformed generation_config.json is an error value', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-tokenizer-'));
  try {
    await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(byteLevelJson()));
    await writeFile(join(dir, 'generation_config.json'), JSON.stringify({ eos_token_id: 'x' }));
    assert.deepEqual(await loadTokenizer(dir), {
      ok: false,
      message: 'generation_config.json: eos_token_id must be an id or a list of ids',
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
