// Reads and parses a JSON file that must hold an object (config.json, tokenizer.json, ...).

import type { ArtifactFile } from './artifact-file.ts';
import { readWholeFile } from './read-whole-file.ts';

export type JsonObject = { readonly [key: string]: unknown };

export type JsonObjectResult =
  | { readonly ok: true; readonly value: JsonObject }
  | { readonly ok: false; readonly reason: string };

const utf8 = new TextDecoder('utf-8', { fatal: true });

export async function readJsonObject(
  file: ArtifactFile,
  maxBytes: number,
): Promise<JsonObjectResult> {
  const whole = await readWholeFile(file, maxBytes, 'the JSON file');
  if (!whole.ok) return whole;
  return parseJsonObject(file.path, whole.bytes);
}

export function parseJsonObject(path: string, bytes: Uint8Array): JsonObjectResult {
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(bytes)) as unknown;
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return { ok: false, reason: `${path}: not valid JSON (${detail})` };
  }
  if (!isJsonObject(value)) {
    return { ok: false, reason: `${path}: expected a JSON object, found ${describeJson(value)}` };
  }
  return { ok: true, value };
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeJson(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
