// Loads the tokenizer of a Hugging Face model folder: tokenizer.json (required), plus
// tokenizer_config.json, generation_config.json and chat_template.jinja when present.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { createTokenizer, type CreateTokenizerResult } from './create-tokenizer.ts';
import { parseTokenizerConfig } from './tokenizer-config.ts';

type Read = { ok: true; text: string | undefined } | { ok: false; message: string };

async function readOptional(path: string, required: boolean): Promise<Read> {
  try {
    return { ok: true, text: await readFile(path, 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !required) return { ok: true, text: undefined };
    return { ok: false, message: `cannot read ${path}: ${code ?? (error as Error).message}` };
  }
}

function parseJson(
  path: string,
  text: string | undefined,
): { ok: true; value: unknown } | { ok: false; message: string } {
  if (text === undefined) return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (error) {
    return { ok: false, message: `${path} is not valid JSON: ${(error as Error).message}` };
  }
}

export async function loadTokenizer(dir: string): Promise<CreateTokenizerResult> {
  const names = [
    'tokenizer.json',
    'tokenizer_config.json',
    'generation_config.json',
    'chat_template.jinja',
  ];
  const reads = await Promise.all(names.map((name, i) => readOptional(join(dir, name), i === 0)));
  const texts: (string | undefined)[] = [];
  for (const read of reads) {
    if (!read.ok) return read;
    texts.push(read.text);
  }
  const parsed: unknown[] = [];
  for (let i = 0; i < 3; i += 1) {
    const json = parseJson(join(dir, names[i] ?? ''), texts[i]);
    if (!json.ok) return json;
    parsed.push(json.value);
  }
  const config = parseTokenizerConfig(parsed[1], parsed[2], texts[3]);
  if (!config.ok) return config;
  const created = createTokenizer(parsed[0], config.value);
  if (!created.ok)
    return { ok: false, message: `${join(dir, 'tokenizer.json')}: ${created.message}` };
  return created;
}
