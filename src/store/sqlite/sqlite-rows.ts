// Row shapes of the SQLite store and their mapping to domain types.

import type {
  ExternalSpec,
  Lineage,
  Model,
  ModelSchema,
  ModelVersion,
  VersionMetadata,
} from '../../registry/types.ts';
import type { NewVersion } from '../store.ts';
import type { ModelFormat, FormatInfo } from '../../registry/formats/artifact-file.ts';

export interface ModelRow {
  id: number;
  name: string;
  team: string;
  description: string;
  created_at: string;
  next_version: number;
}

export interface VersionRow {
  id: number;
  model_id: number;
  model_name: string;
  version: number;
  format: string;
  size_bytes: number;
  manifest_digest: string;
  schema_json: string | null;
  metadata_json: string;
  tags_json: string;
  format_info_json: string;
  external_json: string | null;
  signature_key_id: string | null;
  signature: string | null;
  lineage_run: string | null;
  lineage_dataset_uri: string | null;
  lineage_dataset_version: string | null;
  lineage_experiment: string | null;
  created_at: string;
  deleted_at: string | null;
}

export interface FileRow {
  path: string;
  size: number;
  sha256: string;
}

export const versionColumns = `v.id, v.model_id, m.name AS model_name, v.version, v.format,
  v.size_bytes, v.manifest_digest, v.schema_json, v.metadata_json, v.tags_json,
  v.format_info_json, v.external_json, v.signature_key_id, v.signature, v.lineage_run,
  v.lineage_dataset_uri, v.lineage_dataset_version, v.lineage_experiment, v.created_at,
  v.deleted_at`;

/** model_versions columns a registration writes, in the order of `versionInsertValues`. */
export const versionInsertColumns = `model_id, version, format, size_bytes, manifest_digest,
  schema_json, metadata_json, tags_json, format_info_json, external_json, signature_key_id,
  signature, lineage_run, lineage_dataset_uri, lineage_dataset_version, lineage_experiment,
  created_at`;

export function versionInsertValues(
  modelId: number,
  version: number,
  input: NewVersion,
  createdAt: string,
): unknown[] {
  return [
    modelId,
    version,
    input.format,
    input.sizeBytes,
    input.manifestDigest,
    input.schema === null ? null : JSON.stringify(input.schema),
    JSON.stringify(input.metadata),
    JSON.stringify(input.tags),
    JSON.stringify(input.formatInfo),
    input.external === null ? null : JSON.stringify(input.external),
    input.signature?.keyId ?? null,
    input.signature?.signature ?? null,
    input.lineage.run ?? null,
    input.lineage.datasetUri ?? null,
    input.lineage.datasetVersion ?? null,
    input.lineage.experiment ?? null,
    createdAt,
  ];
}

/** A model with its live-version stats and its aliases (alias → version number). */
export function toModel(
  row: ModelRow,
  stats: { readonly latest: number | null; readonly n: number },
  aliases: readonly { readonly alias: string; readonly version: number }[],
): Model {
  return {
    name: row.name,
    team: row.team,
    description: row.description,
    createdAt: row.created_at,
    latestVersion: stats.latest,
    versionCount: stats.n,
    aliases: Object.fromEntries(aliases.map((a) => [a.alias, a.version])),
  };
}

function lineageOf(row: VersionRow): Lineage {
  return {
    ...(row.lineage_run === null ? {} : { run: row.lineage_run }),
    ...(row.lineage_dataset_uri === null ? {} : { datasetUri: row.lineage_dataset_uri }),
    ...(row.lineage_dataset_version === null
      ? {}
      : { datasetVersion: row.lineage_dataset_version }),
    ...(row.lineage_experiment === null ? {} : { experiment: row.lineage_experiment }),
  };
}

export function toModelVersion(
  row: VersionRow,
  files: readonly FileRow[],
  aliases: readonly string[],
): ModelVersion {
  return {
    model: row.model_name,
    version: row.version,
    format: row.format as ModelFormat,
    files: files.map((f) => ({ path: f.path, size: f.size, sha256: f.sha256 })),
    sizeBytes: row.size_bytes,
    manifestDigest: row.manifest_digest,
    schema: row.schema_json === null ? null : (JSON.parse(row.schema_json) as ModelSchema),
    metadata: JSON.parse(row.metadata_json) as VersionMetadata,
    lineage: lineageOf(row),
    tags: JSON.parse(row.tags_json) as Record<string, string>,
    formatInfo: JSON.parse(row.format_info_json) as FormatInfo,
    external: row.external_json === null ? null : (JSON.parse(row.external_json) as ExternalSpec),
    signature:
      row.signature_key_id === null || row.signature === null
        ? null
        : { keyId: row.signature_key_id, signature: row.signature },
    aliases,
    createdAt: row.created_at,
    deletedAt: row.deleted_at,
  };
}
