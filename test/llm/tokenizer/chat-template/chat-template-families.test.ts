// The real chat templates of the Llama-2, Llama-3, ChatML, Zephyr and Mistral families
// (as published in their tokenizer_config.json files), rendered with exact expected text.
// Expected outputs come from Jinja2 with transformers' settings (trim_blocks, lstrip_blocks).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  ChatTemplate,
  type ChatMessage,
} from '../../../../src/llm/tokenizer/chat-template/chat-template.ts';

// meta-llama/Llama-2-7b-chat-hf. The '\n' escapes are inside Jinja string literals.
const llama2 = String.raw`{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}`;

// meta-llama/Meta-Llama-3-8B-Instruct. The newlines are real newlines inside literals.
const llama3 =
  "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

// ChatML, as OpenHermes / Qwen-style models ship it.
const chatml =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

// HuggingFaceH4/zephyr-7b-beta (TinyLlama-Chat uses the same): one tag a line, so
// trim_blocks and lstrip_blocks decide every newline of the output.
const zephyr =
  "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}";

// mistralai/Mistral-7B-Instruct-v0.1.
const mistral =
  "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}";

const systemAndUser: ChatMessage[] = [
  { role: 'system', content: 'You are a pirate.' },
  { role: 'user', content: ' Hello! ' },
];
const multiTurn: ChatMessage[] = [
  { role: 'user', content: 'Hi' },
  { role: 'assistant', content: 'Hello, how can I help?' },
  { role: 'user', content: 'Tell me a joke\n' },
];
const notAlternating: ChatMessage[] = [
  { role: 'user', content: 'a' },
  { role: 'user', content: 'b' },
];
const unicode: ChatMessage[] = [{ role: 'user', content: 'Привет "мир" \\ 🎉\ttab' }];

function render(
  source: string,
  messages: readonly ChatMessage[],
  addGenerationPrompt: boolean,
  tokens: { bos: string; eos: string } = { bos: '<s>', eos: '</s>' },
): { ok: true; text: string } | { ok: false; message: string } {
  const compiled = ChatTemplate.compile(source);
  assert.ok(compiled.ok, compiled.ok ? '' : compiled.message);
  return compiled.template.render({
    messages,
    add_generation_prompt: addGenerationPrompt,
    bos_token: tokens.bos,
    eos_token: tokens.eos,
  });
}

test('Llama-2: system prompt folded into the first [INST], strip(), BOS per turn', () => {
  const expected = '<s>[INST] <<SYS>>\nYou are a pirate.\n<</SYS>>\n\n Hello! [/INST]';
  assert.deepEqual(render(llama2, systemAndUser, true), { ok: true, text: expected });
  assert.deepEqual(render(llama2, multiTurn, false), {
    ok: true,
    text: '<s>[INST] Hi [/INST] Hello, how can I help? </s><s>[INST] Tell me a joke [/INST]',
  });
  assert.deepEqual(render(llama2, unicode, true), {
    ok: true,
    text: '<s>[INST] Привет "мир" \\ 🎉\ttab [/INST]',
  });
  assert.deepEqual(render(llama2, notAlternating, true), {
    ok: false,
    message:
      'template raised an exception: Conversation roles must alternate user/assistant/user/assistant/...',
  });
});

test('Llama-3: headers, trimmed content, <|eot_id|>, BOS once, generation prompt', () => {
  const tokens = { bos: '<|begin_of_text|>', eos: '<|eot_id|>' };
  assert.deepEqual(render(llama3, systemAndUser, true, tokens), {
    ok: true,
    text:
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a pirate.<|eot_id|>' +
      '<|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>' +
      '<|start_header_id|>assistant<|end_header_id|>\n\n',
  });
  assert.deepEqual(render(llama3, multiTurn, false, tokens), {
    ok: true,
    text:
      '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>' +
      '<|start_header_id|>assistant<|end_header_id|>\n\nHello, how can I help?<|eot_id|>' +
      '<|start_header_id|>user<|end_header_id|>\n\nTell me a joke<|eot_id|>',
  });
});

test('ChatML: <|im_start|>role … <|im_end|> per message', () => {
  assert.deepEqual(render(chatml, systemAndUser, true), {
    ok: true,
    text: '<|im_start|>system\nYou are a pirate.<|im_end|>\n<|im_start|>user\n Hello! <|im_end|>\n<|im_start|>assistant\n',
  });
  assert.deepEqual(render(chatml, multiTurn, false), {
    ok: true,
    text:
      '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello, how can I help?<|im_end|>\n' +
      '<|im_start|>user\nTell me a joke\n<|im_end|>\n',
  });
});

test('Zephyr: newlines after tags are trimmed, those after {{ }} are kept', () => {
  assert.deepEqual(render(zephyr, systemAndUser, true), {
    ok: true,
    text: '<|system|>\nYou are a pirate.</s>\n<|user|>\n Hello! </s>\n<|assistant|>\n',
  });
  assert.deepEqual(render(zephyr, multiTurn, false), {
    ok: true,
    text: '<|user|>\nHi</s>\n<|assistant|>\nHello, how can I help?</s>\n<|user|>\nTell me a joke\n</s>\n',
  });
  assert.deepEqual(render(zephyr, unicode, false), {
    ok: true,
    text: '<|user|>\nПривет "мир" \\ 🎉\ttab</s>\n',
  });
});

test('Mistral: [INST] turns, and its two raise_exception checks', () => {
  assert.deepEqual(render(mistral, multiTurn, true), {
    ok: true,
    text: '<s>[INST] Hi [/INST]Hello, how can I help?</s>[INST] Tell me a joke\n [/INST]',
  });
  assert.deepEqual(render(mistral, systemAndUser, true), {
    ok: false,
    message:
      'template raised an exception: Conversation roles must alternate user/assistant/user/assistant/...',
  });
  // A second message that is not 'user' passes the alternation check, then hits the other.
  assert.deepEqual(
    render(
      mistral,
      [
        { role: 'user', content: 'a' },
        { role: 'tool', content: 'b' },
      ],
      true,
    ),
    {
      ok: false,
      message: 'template raised an exception: Only user and assistant roles are supported!',
    },
  );
});
