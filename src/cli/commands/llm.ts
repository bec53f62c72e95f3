// `kiln llm generate PATH --prompt "…"`: Kiln's own LLM engine (src/llm) on a local Hugging
// Face folder, no platform needed. Streams the text to stdout as it is generated and ends
// with the token count and decode speed on stderr, so stdout is exactly the text.
// `kiln llm to-gguf PATH --out FILE`: the same folder as one F32 GGUF file for llama.cpp
// (src/llm/gguf), to run llama.cpp on exactly the model our engine runs.

import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { createModel } from '../../llm/engine/create-model.ts';
import { checkGenerationRequest, generate } from '../../llm/engine/generation.ts';
import { convertLlamaFolderToGguf } from '../../llm/gguf/llama-gguf.ts';
import { loadLlamaFolder } from '../../llm/loader/load-llama-folder.ts';
import { loadTokenizer } from '../../llm/tokenizer/load-tokenizer.ts';
import { integerOption } from '../arguments.ts';
import { CliError, exitUsage } from '../errors.ts';

interface GenerateOptions {
  readonly prompt: string;
  readonly maxTokens: number;
  readonly temperature: number;
  readonly topP?: number;
  readonly topK?: number;
  readonly seed?: number;
  readonly chat?: boolean;
  readonly ignoreEos?: boolean;
  readonly kvCacheMb: number;
}

function numberOption(min: number, max: number): (text: string) => number {
  return (text: string) => {
    const value = Number(text);
    if (text.trim() === '' || !Number.isFinite(value) || value < min || value > max)
      throw new InvalidArgumentError(`expected a number from ${min} to ${max}`);
    return value;
  };
}

export function registerLlmCommands(program: Command): void {
  const llm = program
    .command('llm')
    .description("run Kiln's LLM engine on a local Hugging Face folder (no platform needed)");
  llm
    .command('generate')
    .description('generate text from a prompt, streaming it as it comes')
    .argument(
      '<path>',
      'a Hugging Face Llama-family folder (config.json, *.safetensors, tokenizer.json)',
    )
    .requiredOption('--prompt <text>', 'the prompt')
    .option('--max-tokens <n>', 'most tokens to generate', integerOption(1), 128)
    .option('--temperature <t>', '0 = greedy', numberOption(0, 100), 1)
    .option('--top-p <p>', 'nucleus sampling', numberOption(Number.MIN_VALUE, 1))
    .option('--top-k <k>', 'sample from the k most likely tokens', integerOption(1))
    .option('--seed <n>', 'same seed, same prompt → same text', integerOption(0))
    .option('--chat', "wrap the prompt as a user message with the model's chat template")
    .option('--ignore-eos', 'do not stop at the end-of-sequence token')
    .option('--kv-cache-mb <n>', 'memory for the KV cache, MiB', integerOption(1), 64)
    .action(async (path: string, options: GenerateOptions) => {
      const [loaded, tokenizerResult] = await Promise.all([
        loadLlamaFolder(path),
        loadTokenizer(path),
      ]);
      if (!loaded.ok) throw new CliError('KILN_LOCAL_FILE', loaded.message);
      if (!tokenizerResult.ok) throw new CliError('KILN_LOCAL_FILE', tokenizerResult.message);
      const tokenizer = tokenizerResult.tokenizer;
      const created = createModel(loaded.config, loaded.weights, {
        kvCacheBytes: options.kvCacheMb * 1024 * 1024,
      });
      if (!created.ok) throw new CliError('KILN_USAGE', created.message, { exitCode: exitUsage });
      const model = created.model;

      let promptTokens: number[];
      if (options.chat === true) {
        const rendered = tokenizer.applyChatTemplate([{ role: 'user', content: options.prompt }], {
          addGenerationPrompt: true,
        });
        if (!rendered.ok) throw new CliError('KILN_LOCAL_FILE', rendered.message);
        promptTokens = tokenizer.encode(rendered.text, { addSpecialTokens: false });
      } else {
        promptTokens = tokenizer.encode(options.prompt);
      }
      const stopTokenIds = options.ignoreEos === true ? [] : [...tokenizer.eosTokenIds];
      const request = {
        promptTokens,
        maxTokens: options.maxTokens,
        sampling: {
          temperature: options.temperature,
          ...(options.topP === undefined ? {} : { topP: options.topP }),
          ...(options.topK === undefined ? {} : { topK: options.topK }),
          ...(options.seed === undefined ? {} : { seed: options.seed }),
        },
        stopTokenIds,
        textStream: tokenizer.decodeStream({ prefixIds: promptTokens }),
      };
      const problem = checkGenerationRequest(
        request,
        loaded.config.maxPositionEmbeddings,
        loaded.config.vocabSize,
      );
      if (problem !== null) throw new CliError('KILN_USAGE', problem, { exitCode: exitUsage });

      const started = performance.now();
      let firstTokenMs = 0;
      let lastTokenMs = 0;
      let tokens = 0;
      let reason = '';
      for (const event of generate(model, model.pool!, [request])) {
        if (event.kind === 'token') {
          tokens += 1;
          lastTokenMs = performance.now();
          if (tokens === 1) firstTokenMs = lastTokenMs;
        } else reason = event.reason;
        if (event.text !== '') process.stdout.write(event.text);
      }
      const decodeSeconds = (lastTokenMs - firstTokenMs) / 1000;
      const rate = tokens > 1 && decodeSeconds > 0 ? (tokens - 1) / decodeSeconds : Number.NaN;
      process.stdout.write('\n');
      process.stderr.write(
        `${tokens} tokens (${reason}); prompt ${promptTokens.length} tokens in ${(
          firstTokenMs - started
        ).toFixed(1)} ms; decode ${Number.isNaN(rate) ? 'n/a' : rate.toFixed(0)} tokens/s\n`,
      );
    });
  llm
    .command('to-gguf')
    .description('write a Llama folder as one F32 GGUF file for llama.cpp (tokenizer included)')
    .argument('<path>', 'a Hugging Face Llama-family folder with a byte-level BPE tokenizer.json')
    .requiredOption('--out <file>', 'the GGUF file to write (replaced if it exists)')
    .action(async (path: string, options: { readonly out: string }) => {
      const converted = await convertLlamaFolderToGguf(path, options.out);
      if (!converted.ok) throw new CliError('KILN_LOCAL_FILE', converted.message);
      process.stderr.write(
        `${options.out}: ${converted.tensors} tensors, ${converted.bytes.toLocaleString('en-US')} bytes\n`,
      );
    });
}
