// The model registry: the one place that turns a registration request into an immutable,
// verified model version, and a version reference back into verified bytes. The API server
// is a thin HTTP skin over this class; so will be any in-process caller (the demo loader,
// the reconciler).

import { kilnError } from '../core/errors.ts';
import { ReadWriteLock } from '../core/rw-lock.ts';
import type { NewModel, Store } from '../store/store.ts';
import type { ArtifactStorage, GcResult } from './artifact-storage.ts';
import { checkArtifactPaths } from './artifact-paths.ts';
import { manifestDigest, type ManifestSubject } from './manifest.ts';
import { checkName } from './names.ts';
import { enforceSignaturePolicy, type SignatureStatus } from './signature-policy.ts';
import { keyIdOf, parsePublicKey } from './signing.ts';
import { validateFormat } from './formats/validate-format.ts';
import { detectPickle, pickleByName } from './formats/pickle.ts';
import type {
  ExternalSpec,
  Lineage,
  ManifestFile,
  ManifestSignature,
  Model,
  ModelFormat,
  ModelSchema,
  ModelVersion,
  TrustedKey,
  VersionMetadata,
} from './types.ts';

export interface RegisterVersionRequest {
  readonly format: ModelFormat;
  readonly files: readonly ManifestFile[];
  readonly schema?: ModelSchema | undefined;
  readonly metadata?: VersionMetadata | undefined;
  readonly lineage?: Lineage | undefined;
  readonly tags?: Readonly<Record<string, string>> | undefined;
  readonly external?: ExternalSpec | undefined;
  readonly signature?: ManifestSignature | undefined;
  /** Create the model if it does not exist, atomically with the version. */
  readonly createModel?: { readonly team?: string; readonly description?: string } | undefined;
}

export interface VerifyResult {
  readonly ok: true;
  readonly files: number;
  readonly bytes: number;
  readonly signature: SignatureStatus;
}

export class Registry {
  /**
   * Registrations hold it shared from checking their blobs until their version is recorded;
   * gc holds it alone. Without it, a gc could delete an old unreferenced blob that a version
   * being registered has just found present (clients do not upload blobs the store already
   * holds, so the blob's age does not protect it), and the version would name a missing blob.
   * In-process; across processes on one home the store's write lock does the same (gc
   * deletes under Store.withLiveBlobDigests, the insert re-checks its blobs).
   */
  private readonly blobUse = new ReadWriteLock();

  constructor(
    readonly store: Store,
    readonly artifacts: ArtifactStorage,
  ) {}

  // ---------------------------------------------------------------- models

  async createModel(name: string, team = 'default', description = ''): Promise<Model> {
    checkName('model', name);
    checkName('team', team);
    return this.store.createModel({ name, team, description });
  }

  async requireModel(name: string): Promise<Model> {
    const model = await this.store.getModel(name);
    if (model === null) throw kilnError('KILN_MODEL_NOT_FOUND', { model: name });
    return model;
  }

  // ---------------------------------------------------------------- versions

  /**
   * Checks everything, then records the version in one store transaction: a request that
   * fails any check leaves no trace but the blobs it uploaded (reclaimed by gc).
   */
  async registerVersion(
    modelName: string,
    request: RegisterVersionRequest,
    /** Sees an existing model as registration reads it, and may refuse it by throwing. */
    options: { readonly checkModel?: (model: Model) => void } = {},
  ): Promise<ModelVersion> {
    let model = await this.store.getModel(modelName);
    let createModel: NewModel | undefined;
    if (model !== null) options.checkModel?.(model);
    else {
      if (request.createModel === undefined)
        throw kilnError('KILN_MODEL_NOT_FOUND', { model: modelName });
      createModel = {
        name: modelName,
        team: request.createModel.team ?? 'default',
        description: request.createModel.description ?? '',
      };
      checkName('model', createModel.name);
      checkName('team', createModel.team);
      model = { ...createModel, createdAt: '', latestVersion: null, versionCount: 0, aliases: {} };
    }
    const files = [...request.files].sort((a, b) =>
      a.path < b.path ? -1 : a.path > b.path ? 1 : 0,
    );
    checkArtifactPaths(files.map((f) => f.path));
    if (request.format !== 'external' && files.length === 0) {
      throw kilnError('KILN_INVALID_ARTIFACT', {
        format: request.format,
        reason: 'the artifact has no files',
      });
    }
    return this.blobUse.read(() => this.recordVersion(model, createModel, files, request));
  }

  /** registerVersion's checks of the bytes and the store transaction, under `blobUse`. */
  private async recordVersion(
    model: Pick<Model, 'name' | 'team'>,
    createModel: NewModel | undefined,
    files: readonly ManifestFile[],
    request: RegisterVersionRequest,
  ): Promise<ModelVersion> {
    await this.checkBlobs(files);
    await this.refusePickles(files);
    if (request.schema !== undefined) checkSchema(request.schema);

    const check = await validateFormat(
      request.format,
      files.map((f) => this.artifacts.artifactFile(f)),
      { external: request.external },
    );
    if (!check.ok)
      throw kilnError('KILN_INVALID_ARTIFACT', { format: request.format, reason: check.reason });

    const subject: ManifestSubject = {
      model: model.name,
      format: request.format,
      files,
      external: request.external ?? undefined,
    };
    await enforceSignaturePolicy(this.store, model.team, subject, request.signature ?? null);

    return this.store.createVersion(
      model.name,
      {
        format: request.format,
        files,
        sizeBytes: files.reduce((sum, f) => sum + f.size, 0),
        manifestDigest: manifestDigest(subject),
        schema: request.schema ?? null,
        metadata: request.metadata ?? {},
        lineage: request.lineage ?? {},
        tags: request.tags ?? {},
        formatInfo: check.info,
        external: request.external ?? null,
        signature: request.signature ?? null,
      },
      {
        ...(createModel === undefined ? {} : { createModel }),
        // Again under the store's write lock: a gc in another platform process on this home
        // may have deleted a blob since checkBlobs (ours holds blobUse; it cannot have).
        check: () => this.requireBlobsNow(files),
      },
    );
  }

  private async checkBlobs(files: readonly ManifestFile[]): Promise<void> {
    const missing: string[] = [];
    for (const file of files) {
      const size = await this.artifacts.sizeOf(file.sha256);
      if (size === null) missing.push(file.path);
      else if (size !== file.size) {
        throw kilnError('KILN_SIZE_MISMATCH', {
          path: file.path,
          declared: file.size,
          actual: size,
        });
      }
    }
    if (missing.length > 0) throw blobsMissing(missing);
  }

  /**
   * checkBlobs' presence test, for inside the store's transaction: synchronous where the
   * artifact store answers so (a local folder), so it runs under SQLite's synchronous lock;
   * a promise for an object store (see Store.createVersion for where that one runs).
   */
  private requireBlobsNow(files: readonly ManifestFile[]): void | Promise<void> {
    const found = files.map((f) => this.artifacts.has(f.sha256));
    const settle = (present: readonly boolean[]): void => {
      const missing = files.filter((_f, i) => present[i] !== true).map((f) => f.path);
      if (missing.length > 0) throw blobsMissing(missing);
    };
    if (found.every((f): f is boolean => typeof f === 'boolean')) return settle(found);
    return Promise.all(found.map(async (f) => f)).then(settle);
  }

  private async refusePickles(files: readonly ManifestFile[]): Promise<void> {
    for (const file of files) {
      const finding =
        pickleByName(file.path) ?? (await detectPickle(this.artifacts.artifactFile(file)));
      if (finding !== null) {
        throw kilnError(
          'KILN_UNSAFE_ARTIFACT',
          { path: file.path, kind: finding.kind },
          { path: file.path, kind: finding.kind },
        );
      }
    }
  }

  /** A version by number or alias; deleted versions are not found. */
  async resolveVersion(modelName: string, ref: string | number): Promise<ModelVersion> {
    await this.requireModel(modelName);
    let version: number;
    if (typeof ref === 'number' || /^\d+$/.test(ref)) {
      version = Number(ref);
    } else {
      const resolved = await this.store.resolveAlias(modelName, ref);
      if (resolved === null)
        throw kilnError('KILN_ALIAS_NOT_FOUND', { model: modelName, alias: ref });
      version = resolved;
    }
    const found = await this.store.getVersion(modelName, version);
    if (found === null) throw kilnError('KILN_VERSION_NOT_FOUND', { model: modelName, version });
    return found;
  }

  /** Resolves a version and checks its signature against the policy as it stands now (no re-hash). */
  async trustedVersion(
    modelName: string,
    ref: string | number,
  ): Promise<{ version: ModelVersion; signature: SignatureStatus }> {
    const model = await this.requireModel(modelName);
    const version = await this.resolveVersion(modelName, ref);
    const subject: ManifestSubject = {
      model: model.name,
      format: version.format,
      files: version.files,
      external: version.external ?? undefined,
    };
    const signature = await enforceSignaturePolicy(
      this.store,
      model.team,
      subject,
      version.signature,
    );
    return { version, signature };
  }

  /** What a load does before trusting a version: signature policy now, and every byte. */
  async verifyVersion(modelName: string, ref: string | number): Promise<VerifyResult> {
    const { version, signature } = await this.trustedVersion(modelName, ref);
    const { files, bytes } = await this.artifacts.verify(version.files);
    return { ok: true, files, bytes, signature };
  }

  /** Verifies a version and copies its files into `destDir` for a runtime to load. */
  async loadVersion(
    modelName: string,
    ref: string | number,
    destDir: string,
  ): Promise<ModelVersion> {
    const { version } = await this.trustedVersion(modelName, ref);
    await this.artifacts.materialize(version.files, destDir);
    return version;
  }

  async setAlias(
    modelName: string,
    alias: string,
    version: number,
  ): Promise<{ previousVersion: number | null }> {
    checkName('alias', alias);
    await this.requireModel(modelName);
    return this.store.setAlias(modelName, alias, version);
  }

  // ---------------------------------------------------------------- signing keys

  async trustKey(name: string, publicKeyPem: string, team: string | null): Promise<TrustedKey> {
    checkName('key', name);
    if (team !== null) checkName('team', team);
    const key = parsePublicKey(publicKeyPem);
    if (key === null)
      throw kilnError('KILN_INVALID_KEY', {
        reason: 'expected an ed25519 public key in SPKI PEM form',
      });
    const publicKey = key.export({ type: 'spki', format: 'pem' }).toString();
    return this.store.addTrustedKey({ keyId: keyIdOf(key), name, team, publicKey });
  }

  // ---------------------------------------------------------------- garbage collection

  async collectGarbage(options: { dryRun: boolean; graceSeconds: number }): Promise<GcResult> {
    return this.blobUse.write(async () => {
      const live = await this.store.liveBlobDigests();
      return this.artifacts.gc(live, {
        dryRun: options.dryRun,
        graceMs: options.graceSeconds * 1000,
        underLock: (work) => this.store.withLiveBlobDigests(work),
      });
    });
  }
}

function blobsMissing(paths: readonly string[]): Error {
  return kilnError(
    'KILN_BLOB_MISSING',
    { count: paths.length, paths: paths.slice(0, 5).join(', ') },
    { paths },
  );
}

function checkSchema(schema: ModelSchema): void {
  for (const side of ['inputs', 'outputs'] as const) {
    const seen = new Set<string>();
    for (const tensor of schema[side]) {
      if (seen.has(tensor.name)) {
        throw kilnError('KILN_VALIDATION_FAILED', {
          reason: `schema ${side} lists tensor ${tensor.name} twice`,
        });
      }
      seen.add(tensor.name);
      if (tensor.shape.some((d) => !Number.isInteger(d) || d < -1)) {
        throw kilnError('KILN_VALIDATION_FAILED', {
          reason: `schema ${side} tensor ${tensor.name} has shape [${tensor.shape.join(', ')}]; dimensions are integers >= 0, or -1 for variable`,
        });
      }
    }
  }
}
