// `kiln predict ENDPOINT --data FILE`: one v2 infer request through the gateway, as any
// client would send it (the same URL, headers and bytes), so it also checks a deployment
// end to end.
//
//   read FILE (or stdin) as bytes ─► gateway URL: --gateway | KILN_GATEWAY_URL | GET /health
//   ─► POST {gateway}/v2/models/{endpoint}[/versions/{n}]/infer ─► outputs table or JSON

import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { integerOption } from '../arguments.ts';
import type { Health, V2InferResponse, V2OutputTensor } from '../api-types.ts';
import { parseBaseUrl, resolveApiKey, resolveGatewayUrl } from '../config.ts';
import { withClient } from '../context.ts';
import { CliError, describeFsError, localFileError } from '../errors.ts';
import { postInfer } from '../gateway-client.ts';
import { printJson, renderKeyValues, renderTable, writeOut, type JsonOption } from '../output.ts';

interface PredictOptions extends JsonOption {
  readonly data: string;
  readonly version?: number;
  readonly gateway?: string;
  readonly key?: string;
}

/** Values of each output shown in the table; the rest are counted. */
export const previewValues = 10;

export function registerPredictCommand(program: Command): void {
  program
    .command('predict')
    .description('send a v2 infer request to an endpoint through the gateway')
    .argument('<endpoint>', 'endpoint name')
    .requiredOption('--data <file>', 'v2 infer request JSON, sent as is (- for stdin)')
    .option('--version <n>', 'fail unless the endpoint serves this model version', integerOption(1))
    .option(
      '--gateway <url>',
      'gateway URL (default: $KILN_GATEWAY_URL, else what the platform reports)',
    )
    .option('--key <key>', 'API key (default: $KILN_API_KEY; not needed with `kiln up --dev`)')
    .option('--json', 'print the response body as JSON')
    .action(async (endpoint: string, options: PredictOptions, command: Command) => {
      const body = await readRequest(options.data);
      const gatewayUrl = resolveGatewayUrl(options.gateway) ?? (await gatewayFromPlatform(command));
      const reply = await postInfer({
        gatewayUrl,
        endpoint,
        version: options.version,
        body,
        apiKey: resolveApiKey(options.key),
      });
      if (options.json === true) {
        // Pretty-printed when it is strict JSON; as received when it carries NaN tokens.
        const strict = strictJson(reply.text);
        if (strict !== undefined) printJson(strict);
        else writeOut(reply.text.endsWith('\n') ? reply.text : `${reply.text}\n`);
      } else {
        writeOut(predictText(reply.response, reply.requestId));
      }
    });
}

/** The request's bytes, untouched (FILE, or stdin for `-`); unreadable or empty → exit 1. */
export async function readRequest(file: string): Promise<Buffer> {
  const shown = file === '-' ? 'stdin' : file;
  let bytes: Buffer;
  try {
    bytes = file === '-' ? await readStdin() : await readFile(file);
  } catch (error) {
    throw localFileError(`cannot read request ${shown}: ${describeFsError(error)}`, error);
  }
  if (bytes.length === 0) throw localFileError(`request ${shown} is empty`);
  return bytes;
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function gatewayFromPlatform(command: Command): Promise<string> {
  const health = await withClient(command, (client) => client.get<Health>('/api/v1/health'));
  const url = health.gatewayUrl;
  if (typeof url !== 'string' || url === '') {
    throw new CliError('KILN_BAD_RESPONSE', 'the platform does not report a gateway URL', {
      hint: 'pass --gateway URL or set KILN_GATEWAY_URL',
    });
  }
  return parseBaseUrl(url);
}

function strictJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `model: …`, `model version: …`, `request id: …`, then one row per output tensor. */
export function predictText(response: V2InferResponse, requestId: string | null): string {
  const summary = renderKeyValues([
    ['model', response.model_name],
    ['model version', response.model_version],
    ['request id', requestId ?? response.id ?? null],
  ]);
  const table = renderTable(
    ['name', 'datatype', 'shape', 'data'],
    response.outputs.map((o) => [o.name, o.datatype, `[${o.shape.join(', ')}]`, dataPreview(o)]),
  );
  return `${summary}\n${table}`;
}

/** `[0.261443, 0.153625]`, or the first values and a count: `[1, 2, …] (100 values)`. */
export function dataPreview(output: Pick<V2OutputTensor, 'data'>, limit = previewValues): string {
  // Some servers nest `data` by shape; the preview reads it flat, row-major, either way.
  const values = Array.isArray(output.data) ? (output.data as unknown[]).flat(Infinity) : [];
  const shown = values.slice(0, limit).map(valueText);
  if (values.length <= limit) return `[${shown.join(', ')}]`;
  return `[${shown.join(', ')}, …] (${values.length} values)`;
}

function valueText(value: unknown): string {
  if (typeof value === 'number') {
    return Number.isInteger(value) || !Number.isFinite(value)
      ? String(value)
      : String(Number(value.toPrecision(6)));
  }
  if (typeof value === 'string') {
    const quoted = JSON.stringify(value);
    return quoted.length > 24 ? `${quoted.slice(0, 22)}…"` : quoted;
  }
  if (typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value) ?? String(value);
}
