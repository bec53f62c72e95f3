// Pure parsers for command-line values: `k=v` pairs, `--meta` routing into a version's
// metadata, version references (`name`, `name:3`, `name@champion`) and numbers. They throw
// commander's InvalidArgumentError (rendered by commander as a usage error, exit 2) when
// used as option parsers, and UsageError-flavoured CliErrors when used on operands.

import { InvalidArgumentError } from 'commander';
import { usageError } from './errors.ts';
import type { VersionMetadata } from './api-types.ts';

export interface KeyValue {
  readonly key: string;
  readonly value: string;
}

/** `k=v` → {key: 'k', value: 'v'}; the value may contain `=` and may be empty. */
export function parseKeyValue(text: string): KeyValue {
  const at = text.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError(`expected KEY=VALUE, got "${text}"`);
  return { key: text.slice(0, at).trim(), value: text.slice(at + 1) };
}

/** A commander option parser that accumulates repeated `k=v` options. */
export function collectKeyValue(text: string, previous: readonly KeyValue[] = []): KeyValue[] {
  return [...previous, parseKeyValue(text)];
}

/** Like collectKeyValue, but the value must be a finite number (for metrics). */
export function collectMetric(text: string, previous: readonly KeyValue[] = []): KeyValue[] {
  const pair = parseKeyValue(text);
  parseMetricValue(pair.key, pair.value);
  return [...previous, pair];
}

/** Like collectKeyValue, but checks `--meta` routing (e.g. `metric.X` must be numeric). */
export function collectMeta(text: string, previous: readonly KeyValue[] = []): KeyValue[] {
  const pair = parseKeyValue(text);
  applyMeta({}, pair);
  return [...previous, pair];
}

export function parseMetricValue(key: string, value: string): number {
  const number = parseNumber(value);
  if (number === undefined)
    throw new InvalidArgumentError(`metric "${key}" must be a number, got "${value}"`);
  return number;
}

/** A finite decimal number (`0.93`, `-1`, `1e6`); undefined for anything else. */
export function parseNumber(text: string): number | undefined {
  const trimmed = text.trim();
  if (trimmed === '' || !/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(trimmed)) return undefined;
  const number = Number(trimmed);
  return Number.isFinite(number) ? number : undefined;
}

/**
 * Routes one `--meta k=v` into `metadata` (mutated):
 *   trainingJobId, datasetVersion  → those fields
 *   metric.X=number                → metrics.X   (non-numbers are usage errors)
 *   dep.X=version                  → dependencies.X
 *   hardware.X=v                   → hardware.X  (a number when v is numeric)
 *   anything else                  → extra[k]
 */
export function applyMeta(metadata: VersionMetadata, { key, value }: KeyValue): VersionMetadata {
  const [head, ...restParts] = key.split('.');
  const rest = restParts.join('.');
  if (key === 'trainingJobId') metadata.trainingJobId = value;
  else if (key === 'datasetVersion') metadata.datasetVersion = value;
  else if (head === 'metric' && rest !== '')
    (metadata.metrics ??= {})[rest] = parseMetricValue(rest, value);
  else if (head === 'dep' && rest !== '') (metadata.dependencies ??= {})[rest] = value;
  else if (head === 'hardware' && rest !== '')
    (metadata.hardware ??= {})[rest] = parseNumber(value) ?? value;
  else (metadata.extra ??= {})[key] = value;
  return metadata;
}

export interface MetadataOptions {
  readonly meta?: readonly KeyValue[];
  readonly metric?: readonly KeyValue[];
  readonly dependency?: readonly KeyValue[];
  readonly trainingJob?: string | undefined;
}

/** The version's `metadata` from all the flags that feed it; undefined when none did. */
export function buildMetadata(options: MetadataOptions): VersionMetadata | undefined {
  const metadata: VersionMetadata = {};
  for (const pair of options.meta ?? []) applyMeta(metadata, pair);
  for (const { key, value } of options.metric ?? [])
    (metadata.metrics ??= {})[key] = parseMetricValue(key, value);
  for (const { key, value } of options.dependency ?? [])
    (metadata.dependencies ??= {})[key] = value;
  if (options.trainingJob !== undefined) metadata.trainingJobId = options.trainingJob;
  return Object.keys(metadata).length === 0 ? undefined : metadata;
}

/** `[{key, value}]` → `{key: value}` (last one wins); undefined when empty. */
export function toRecord(
  pairs: readonly KeyValue[] | undefined,
): Record<string, string> | undefined {
  if (pairs === undefined || pairs.length === 0) return undefined;
  return Object.fromEntries(pairs.map(({ key, value }) => [key, value]));
}

export type VersionRef =
  | { readonly kind: 'latest'; readonly model: string }
  | { readonly kind: 'version'; readonly model: string; readonly version: number }
  | { readonly kind: 'alias'; readonly model: string; readonly alias: string };

/** `name` | `name:3` | `name@champion`. Malformed references are usage errors. */
export function parseVersionRef(text: string): VersionRef {
  const colon = text.indexOf(':');
  const at = text.indexOf('@');
  if (colon >= 0 && at >= 0) throw badRef(text);
  if (colon >= 0) {
    const model = text.slice(0, colon);
    const version = parseVersionNumber(text.slice(colon + 1));
    if (model === '' || version === undefined) throw badRef(text);
    return { kind: 'version', model, version };
  }
  if (at >= 0) {
    const model = text.slice(0, at);
    const alias = text.slice(at + 1);
    if (model === '' || alias === '') throw badRef(text);
    return { kind: 'alias', model, alias };
  }
  if (text === '') throw badRef(text);
  return { kind: 'latest', model: text };
}

/** The reference segment for `/versions/{ref}`; undefined for `latest`. */
export function refSegment(ref: VersionRef): string | undefined {
  switch (ref.kind) {
    case 'latest':
      return undefined;
    case 'version':
      return String(ref.version);
    case 'alias':
      return ref.alias;
  }
}

export function formatRef(ref: VersionRef): string {
  switch (ref.kind) {
    case 'latest':
      return ref.model;
    case 'version':
      return `${ref.model}:${ref.version}`;
    case 'alias':
      return `${ref.model}@${ref.alias}`;
  }
}

/** A positive integer version number, or undefined. */
export function parseVersionNumber(text: string): number | undefined {
  if (!/^\d+$/.test(text)) return undefined;
  const version = Number(text);
  return Number.isSafeInteger(version) && version > 0 ? version : undefined;
}

function badRef(text: string): Error {
  return usageError(`invalid version reference "${text}"`, 'use NAME, NAME:VERSION or NAME@ALIAS');
}

/** Commander parser for non-negative integer options (--limit, --port, --grace-seconds…). */
export function integerOption(min: number): (text: string) => number {
  return (text: string) => {
    if (!/^\d+$/.test(text.trim()) || Number(text) < min || !Number.isSafeInteger(Number(text))) {
      throw new InvalidArgumentError(`expected a whole number of at least ${min}`);
    }
    return Number(text);
  };
}
