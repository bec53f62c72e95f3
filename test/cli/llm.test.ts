// `kiln llm generate` on the committed tiny Llama: greedy text equals PyTorch's reference
// continuation, a seed reproduces sampled text, and bad requests are refused with the cause.
// `kiln llm to-gguf` writes the same folder as GGUF (checked in depth in test/llm/gguf).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readGguf } from '../../src/llm/gguf/read-gguf.ts';
import { loadTokenizer } from '../../src/llm/tokenizer/load-tokenizer.ts';
import { Cli, root } from './cli-harness.ts';

const model = `${root}/fixtures/llm/tiny-llama`;
const cli = new Cli('http://127.0.0.1:9', '/nonexistent-kiln-home');

test('greedy generation prints exactly the reference continuation, then its speed on stderr', async () => {
  const reference = JSON.parse(await readFile(`${model}/reference.json`, 'utf8')) as {
    prompts: { name: string; text: string; greedyText: string; greedyIds: number[] }[];
  };
  const prompt = reference.prompts.find((p) => p.name === 'license-sentence')!;
  const run = await cli.run([
    'llm',
    'generate',
    model,
    '--prompt',
    prompt.text,
    '--max-tokens',
    String(prompt.greedyIds.length),
    '--temperature',
    '0',
    '--ignore-eos',
  ]);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, `${prompt.greedyText}\n`);
  assert.match(
    run.stderr,
    /^32 tokens \(length\); prompt 16 tokens in [\d.]+ ms; decode \d+ tokens\/s\n$/,
  );
});

test('a seed reproduces sampled text; another seed gives other text', async () => {
  const args = [
    'llm',
    'generate',
    model,
    '--prompt',
    'Everyone is permitted',
    '--max-tokens',
    '24',
  ];
  const a = await cli.run([...args, '--seed', '7', '--temperature', '1.2', '--ignore-eos']);
  const b = await cli.run([...args, '--seed', '7', '--temperature', '1.2', '--ignore-eos']);
  const c = await cli.run([...args, '--seed', '8', '--temperature', '1.2', '--ignore-eos']);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(a.stdout, b.stdout);
  assert.notEqual(a.stdout, c.stdout);
});

test('a prompt past the context, a bad option and a missing folder are refused clearly', async () => {
  const long = await cli.run(['llm', 'generate', model, '--prompt', 'word '.repeat(600)]);
  assert.equal(long.code, 2);
  assert.match(long.stderr, /exceed the model's context of 512 tokens/);
  const badTemperature = await cli.run([
    'llm',
    'generate',
    model,
    '--prompt',
    'x',
    '--temperature',
    'hot',
  ]);
  assert.equal(badTemperature.code, 2);
  assert.match(badTemperature.stderr, /--temperature/);
  const missing = await cli.run(['llm', 'generate', `${root}/fixtures/llm/nope`, '--prompt', 'x']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no config\.json/);
});

test('--chat wraps the prompt with the folder chat template before encoding it', async () => {
  const tokenizer = await loadTokenizer(model);
  if (!tokenizer.ok) assert.fail(tokenizer.message);
  const rendered = tokenizer.tokenizer.applyChatTemplate(
    [{ role: 'user', content: 'What is free software?' }],
    { addGenerationPrompt: true },
  );
  if (!rendered.ok) assert.fail(rendered.message);
  const expected = tokenizer.tokenizer.encode(rendered.text, { addSpecialTokens: false });
  const run = await cli.run([
    'llm',
    'generate',
    model,
    '--prompt',
    'What is free software?',
    '--chat',
    '--max-tokens',
    '4',
    '--temperature',
    '0',
  ]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr, new RegExp(`prompt ${expected.length} tokens in`));
  assert.ok(rendered.text.includes('<|start_header_id|>user<|end_header_id|>'));
});

test('to-gguf writes the folder as a GGUF file; a missing folder is refused', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-cli-gguf-'));
  try {
    const out = join(dir, 'tiny.gguf');
    const run = await cli.run(['llm', 'to-gguf', model, '--out', out]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /tiny\.gguf: 39 tensors, 4,098,400 bytes\n$/);
    const read = await readGguf(out);
    assert.ok(read.ok, read.ok ? '' : read.message);
    assert.equal(read.file.metadata.get('general.architecture')?.value, 'llama');
    const missing = await cli.run(['llm', 'to-gguf', `${root}/fixtures/llm/nope`, '--out', out]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no config\.json/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
