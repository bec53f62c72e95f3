// Human renderings of models and versions (pure: data in, text out).

import type { AliasEntry, Model, ModelVersion, TensorSpec } from '../api-types.ts';
import {
  humanSize,
  inlineMap,
  renderKeyValues,
  renderTable,
  shortTime,
  type Cell,
} from '../output.ts';

export function modelsTable(models: readonly Model[]): string {
  return renderTable(
    [
      'name',
      'team',
      { header: 'latest', align: 'right' },
      { header: 'versions', align: 'right' },
      'aliases',
      'created',
    ],
    models.map((m) => [
      m.name,
      m.team,
      m.latestVersion,
      m.versionCount,
      aliasList(m.aliases),
      shortTime(m.createdAt),
    ]),
  );
}

export function versionsTable(versions: readonly ModelVersion[], withDeleted: boolean): string {
  const columns = [
    { header: 'version', align: 'right' as const },
    { header: 'format' },
    { header: 'size', align: 'right' as const },
    { header: 'files', align: 'right' as const },
    { header: 'aliases' },
    { header: 'created' },
    ...(withDeleted ? [{ header: 'deleted' }] : []),
  ];
  return renderTable(
    columns,
    versions.map((v) => {
      const row: Cell[] = [
        v.version,
        v.format,
        humanSize(v.sizeBytes),
        v.files.length,
        v.aliases.join(', '),
        shortTime(v.createdAt),
      ];
      if (withDeleted) row.push(v.deletedAt === null ? '' : shortTime(v.deletedAt));
      return row;
    }),
  );
}

export function lineageTable(versions: readonly ModelVersion[]): string {
  return renderTable(
    [
      'model',
      { header: 'version', align: 'right' },
      'format',
      'run',
      'dataset',
      'experiment',
      'created',
    ],
    versions.map((v) => [
      v.model,
      v.version,
      v.format,
      v.lineage?.run,
      datasetText(v),
      v.lineage?.experiment,
      shortTime(v.createdAt),
    ]),
  );
}

export function aliasesTable(aliases: readonly AliasEntry[]): string {
  return renderTable(
    ['alias', { header: 'version', align: 'right' }, 'updated'],
    aliases.map((a) => [a.alias, a.version, shortTime(a.updatedAt)]),
  );
}

export function modelDetails(model: Model): string {
  return renderKeyValues([
    ['name', model.name],
    ['team', model.team],
    ['description', model.description],
    ['latest version', model.latestVersion],
    ['versions', model.versionCount],
    ['aliases', aliasList(model.aliases)],
    ['created', shortTime(model.createdAt)],
  ]);
}

/** Every field of a version, in sections: summary, files, schema, metadata, lineage, tags. */
export function versionDetails(version: ModelVersion): string {
  const sections: string[] = [];
  sections.push(
    renderKeyValues([
      ['model', version.model],
      ['version', version.version],
      ['format', version.format],
      ['size', `${humanSize(version.sizeBytes)} (${version.sizeBytes} bytes)`],
      ['files', version.files.length],
      ['aliases', version.aliases.join(', ')],
      ['manifest', version.manifestDigest],
      ['signature', version.signature === null ? 'unsigned' : `key ${version.signature.keyId}`],
      ['created', shortTime(version.createdAt)],
      ['deleted', version.deletedAt === null ? undefined : shortTime(version.deletedAt)],
      ['external', version.external === null ? undefined : inlineMap({ ...version.external })],
      ['format info', isEmpty(version.formatInfo) ? undefined : inlineMap(version.formatInfo)],
    ]),
  );
  if (version.files.length > 0) {
    sections.push(
      'Files\n' +
        renderTable(
          ['path', { header: 'size', align: 'right' }, 'sha256'],
          version.files.map((f) => [f.path, humanSize(f.size), f.sha256]),
        ),
    );
  }
  if (version.schema !== null) {
    sections.push(
      'Schema\n' +
        renderTable(
          ['io', 'name', 'datatype', 'shape'],
          [
            ...version.schema.inputs.map((t) => tensorRow('input', t)),
            ...version.schema.outputs.map((t) => tensorRow('output', t)),
          ],
        ),
    );
  }
  const metadata = version.metadata ?? {};
  const metadataLines = renderKeyValues([
    ['training job', metadata.trainingJobId],
    ['dataset version', metadata.datasetVersion],
    ['metrics', isEmpty(metadata.metrics) ? undefined : inlineMap(metadata.metrics)],
    ['hardware', isEmpty(metadata.hardware) ? undefined : inlineMap(metadata.hardware)],
    ['dependencies', isEmpty(metadata.dependencies) ? undefined : inlineMap(metadata.dependencies)],
    ['extra', isEmpty(metadata.extra) ? undefined : inlineMap(metadata.extra)],
  ]);
  if (metadataLines.trim() !== '') sections.push(`Metadata\n${indent(metadataLines)}`);
  const lineage = version.lineage ?? {};
  const lineageLines = renderKeyValues([
    ['run', lineage.run],
    ['dataset', lineage.datasetUri],
    ['dataset version', lineage.datasetVersion],
    ['experiment', lineage.experiment],
  ]);
  if (lineageLines.trim() !== '') sections.push(`Lineage\n${indent(lineageLines)}`);
  if (!isEmpty(version.tags))
    sections.push(`Tags\n${indent(renderKeyValues(Object.entries(version.tags ?? {})))}`);
  return sections.join('\n');
}

function tensorRow(io: string, tensor: TensorSpec): Cell[] {
  return [io, tensor.name, tensor.datatype, `[${tensor.shape.join(', ')}]`];
}

function datasetText(version: ModelVersion): string | undefined {
  const uri = version.lineage?.datasetUri;
  const datasetVersion = version.lineage?.datasetVersion;
  if (uri === undefined) return datasetVersion;
  return datasetVersion === undefined ? uri : `${uri}@${datasetVersion}`;
}

function aliasList(aliases: Readonly<Record<string, number>>): string {
  return Object.entries(aliases)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([alias, version]) => `${alias}→${version}`)
    .join(', ');
}

function isEmpty(value: object | null | undefined): boolean {
  return value === null || value === undefined || Object.keys(value).length === 0;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? line : `  ${line}`))
    .join('\n');
}
