// `kiln models register PATH --name N --format F ...`: the one command that moves bytes.
//
//   check flags, read --schema / --sign-key ─► walk + hash PATH ─► sign the manifest
//   ─► HEAD each blob, PUT the absent ones ─► POST the version (createModel) ─► alias
//
// Everything local is read and checked before the first request, and the server creates a
// new model only together with its first accepted version, so neither a typo nor a refused
// artifact leaves a half-registered model behind.

import { Option, type Command } from 'commander';
import { signManifest } from '../../registry/signing.ts';
import {
  buildMetadata,
  collectKeyValue,
  collectMeta,
  collectMetric,
  toRecord,
  type KeyValue,
} from '../arguments.ts';
import {
  modelFormats,
  type AliasMove,
  type CreateVersionBody,
  type ExternalTarget,
  type Lineage,
  type ModelFormat,
  type ModelVersion,
  type ServingProtocol,
} from '../api-types.ts';
import { withClient } from '../context.ts';
import { CliError, usageError } from '../errors.ts';
import { readSchema, readSigningKey } from '../local-files.ts';
import { goldenSummary, putGoldenSet, readGoldenFile } from './models-golden.ts';
import { profileSummary, putVersionProfile, readProfileFile } from './models-profile.ts';
import { apiPath, type KilnClient } from '../http-client.ts';
import { humanSize, printJson, renderKeyValues, writeOut } from '../output.ts';
import { createProgress } from '../progress.ts';
import {
  findMissingBlobs,
  hashFiles,
  toManifestFiles,
  uploadBlobs,
  walkArtifact,
  type HashedFile,
} from '../upload.ts';

interface RegisterOptions {
  readonly name: string;
  readonly format: ModelFormat;
  readonly team?: string;
  readonly description?: string;
  readonly schema?: string;
  readonly meta: readonly KeyValue[];
  readonly metric: readonly KeyValue[];
  readonly tag: readonly KeyValue[];
  readonly dependency: readonly KeyValue[];
  readonly lineageRun?: string;
  readonly dataset?: string;
  readonly datasetVersion?: string;
  readonly experiment?: string;
  readonly trainingJob?: string;
  readonly externalUrl?: string;
  readonly externalImage?: string;
  readonly protocol?: ServingProtocol;
  readonly signKey?: string;
  readonly alias?: string;
  readonly golden?: string;
  readonly profile?: string;
  readonly progress: boolean;
  readonly json?: boolean;
}

export function registerRegisterCommand(models: Command): void {
  models
    .command('register')
    .description('upload an artifact (file or folder) and register it as a new model version')
    .argument('[path]', 'model file or folder (optional for --format external)')
    .requiredOption('--name <name>', 'model name (created if missing)')
    .addOption(
      new Option('--format <format>', 'artifact format')
        .choices(modelFormats)
        .makeOptionMandatory(),
    )
    .option('--team <team>', 'team that owns a newly created model')
    .option('--description <text>', 'description of a newly created model')
    .option('--schema <file>', 'JSON file {inputs: [{name, datatype, shape}], outputs: [...]}')
    .option(
      '--meta <key=value>',
      'metadata: trainingJobId, datasetVersion, metric.X, dep.X, hardware.X or free-form (repeatable)',
      collectMeta,
      [],
    )
    .option('--metric <key=number>', 'a metric (repeatable)', collectMetric, [])
    .option('--tag <key=value>', 'a tag (repeatable)', collectKeyValue, [])
    .option(
      '--dependency <package=version>',
      'a runtime dependency (repeatable)',
      collectKeyValue,
      [],
    )
    .option('--lineage-run <run>', 'training run that produced the model')
    .option('--dataset <uri>', 'training dataset URI')
    .option('--dataset-version <version>', 'training dataset version')
    .option('--experiment <name>', 'experiment the run belongs to')
    .option('--training-job <id>', 'training job id (metadata.trainingJobId)')
    .addOption(
      new Option('--external-url <url>', 'URL of an externally served model').conflicts(
        'externalImage',
      ),
    )
    .option('--external-image <image>', 'container image of an externally served model')
    .addOption(
      new Option('--protocol <protocol>', 'protocol of an external model').choices([
        'v2',
        'openai',
      ]),
    )
    .option('--sign-key <file>', 'ed25519 private key (PEM) to sign the manifest with')
    .option('--alias <alias>', 'point this alias at the new version')
    .option(
      '--golden <file>',
      'JSON golden set {tolerance?, cases: [{request, outputs}]} the version must reproduce',
    )
    .option(
      '--profile <file>',
      'reference profile JSON (what `kiln models profile --output` writes) stored with the version',
    )
    .option('--no-progress', 'never draw the upload progress bar')
    .option('--json', 'print the new version as JSON')
    .action(async (path: string | undefined, options: RegisterOptions, command: Command) => {
      const version = await runRegister(command, path, options);
      if (options.json === true) printJson(version);
    });
}

async function runRegister(
  command: Command,
  path: string | undefined,
  options: RegisterOptions,
): Promise<ModelVersion> {
  const external = externalTarget(options);
  if (path === undefined && options.format !== 'external') {
    throw usageError(`missing PATH: format ${options.format} needs the model's file or folder`);
  }
  const schema = options.schema === undefined ? undefined : await readSchema(options.schema);
  const signingKey =
    options.signKey === undefined ? undefined : await readSigningKey(options.signKey);
  const golden = options.golden === undefined ? undefined : await readGoldenFile(options.golden);
  const profile =
    options.profile === undefined ? undefined : await readProfileFile(options.profile);
  const files = path === undefined ? [] : await hashFiles(await walkArtifact(path));

  const body: CreateVersionBody = { format: options.format, files: toManifestFiles(files) };
  if (schema !== undefined) body.schema = schema;
  const metadata = buildMetadata(options);
  if (metadata !== undefined) body.metadata = metadata;
  const lineage = lineageOf(options);
  if (lineage !== undefined) body.lineage = lineage;
  const tags = toRecord(options.tag);
  if (tags !== undefined) body.tags = tags;
  if (external !== undefined) body.external = external;
  // Creates the model with its first version, atomically: a refused registration leaves no
  // empty model behind. Ignored when the model exists.
  body.createModel = createModelOf(options);
  if (signingKey !== undefined) {
    body.signature = signManifest(
      { model: options.name, format: options.format, files: body.files, external },
      signingKey,
    );
  }

  return withClient(command, async (client) => {
    const uploaded = await uploadMissing(client, files, options.progress);
    let version = await client.post<ModelVersion>(
      apiPath('models', options.name, 'versions'),
      body,
    );
    let move: AliasMove | undefined;
    if (options.alias !== undefined) {
      move = await client.put<AliasMove>(
        apiPath('models', options.name, 'aliases', options.alias),
        {
          version: version.version,
        },
      );
      version = await client.get<ModelVersion>(
        apiPath('models', options.name, 'versions', version.version),
      );
    }
    if (options.json !== true) writeOut(registerSummary(version, files.length, uploaded, move));
    if (golden !== undefined) {
      // After the version: a golden set belongs to a version that exists. A refused set
      // leaves the version registered without one (`kiln models golden set` adds it).
      const { model, version: number } = version;
      const stored = await putGoldenSet(client, model, number, golden).catch((error: unknown) => {
        // Say what is left: the version stands, without a golden set.
        if (!(error instanceof CliError)) throw error;
        throw new CliError(error.code, error.message, {
          hint: `version ${number} is registered without a golden set: fix the file, then \`kiln models golden set ${model}:${number} ${options.golden ?? 'FILE'}\``,
          exitCode: error.exitCode,
          ...(error.status === undefined ? {} : { status: error.status }),
          cause: error,
        });
      });
      if (options.json !== true) writeOut(goldenSummary(stored));
    }
    if (profile !== undefined) {
      // Like the golden set: after the version, and a refusal leaves the version standing.
      const { model, version: number } = version;
      const stored = await putVersionProfile(client, model, number, profile).catch(
        (error: unknown) => {
          if (!(error instanceof CliError)) throw error;
          throw new CliError(error.code, error.message, {
            hint: `version ${number} is registered without a profile: fix the file, then \`kiln models profile ${model}:${number} --from ${options.profile ?? 'FILE'}\``,
            exitCode: error.exitCode,
            ...(error.status === undefined ? {} : { status: error.status }),
            cause: error,
          });
        },
      );
      if (options.json !== true) writeOut(profileSummary(stored));
    }
    return version;
  });
}

function externalTarget(options: RegisterOptions): ExternalTarget | undefined {
  const given = options.externalUrl !== undefined || options.externalImage !== undefined;
  if (options.format !== 'external') {
    if (given || options.protocol !== undefined) {
      throw usageError('--external-url, --external-image and --protocol need --format external');
    }
    return undefined;
  }
  if (!given) throw usageError('--format external needs --external-url or --external-image');
  const target: ExternalTarget = { protocol: options.protocol ?? 'v2' };
  if (options.externalUrl !== undefined) target.url = options.externalUrl;
  if (options.externalImage !== undefined) target.image = options.externalImage;
  return target;
}

function createModelOf(options: RegisterOptions): { team?: string; description?: string } {
  const create: { team?: string; description?: string } = {};
  if (options.team !== undefined) create.team = options.team;
  if (options.description !== undefined) create.description = options.description;
  return create;
}

function lineageOf(options: RegisterOptions): Lineage | undefined {
  const lineage: Lineage = {};
  if (options.lineageRun !== undefined) lineage.run = options.lineageRun;
  if (options.dataset !== undefined) lineage.datasetUri = options.dataset;
  if (options.datasetVersion !== undefined) lineage.datasetVersion = options.datasetVersion;
  if (options.experiment !== undefined) lineage.experiment = options.experiment;
  return Object.keys(lineage).length === 0 ? undefined : lineage;
}

interface UploadSummary {
  readonly blobs: number;
  readonly bytes: number;
  readonly alreadyStored: number;
}

async function uploadMissing(
  client: KilnClient,
  files: readonly HashedFile[],
  progressWanted: boolean,
): Promise<UploadSummary> {
  const missing = await findMissingBlobs(client, files);
  const bytes = missing.reduce((sum, blob) => sum + blob.size, 0);
  const distinct = new Set(files.map((f) => f.sha256)).size;
  const progress = createProgress({
    enabled: progressWanted,
    totalBytes: bytes,
    label: 'uploading',
  });
  try {
    await uploadBlobs(client, missing, progress);
  } finally {
    progress.finish();
  }
  return { blobs: missing.length, bytes, alreadyStored: distinct - missing.length };
}

function registerSummary(
  version: ModelVersion,
  fileCount: number,
  uploaded: UploadSummary,
  move: AliasMove | undefined,
): string {
  const files = `${fileCount} ${fileCount === 1 ? 'file' : 'files'}`;
  let text = `registered ${version.model} version ${version.version} (${version.format}, ${files}, ${humanSize(version.sizeBytes)})\n`;
  const entries: Array<[string, string]> = [
    ['manifest', version.manifestDigest],
    ['signature', version.signature === null ? 'unsigned' : `key ${version.signature.keyId}`],
    [
      'uploaded',
      `${uploaded.blobs} new blob${uploaded.blobs === 1 ? '' : 's'} (${humanSize(uploaded.bytes)}), ${uploaded.alreadyStored} already stored`,
    ],
  ];
  if (move !== undefined) entries.push(['alias', aliasMoveText(move)]);
  text += renderKeyValues(entries);
  return text;
}

export function aliasMoveText(move: AliasMove): string {
  return `${move.alias}: ${move.previousVersion ?? 'none'} → ${move.version}`;
}
