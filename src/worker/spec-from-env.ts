// A worker started by the Kubernetes backend (`node dist/worker/main.js --spec-env
// KILN_WORKER_SPEC`, src/control/backends/kubernetes/render.ts) gets its spec from the pod's
// environment instead of a file: the revision's part as JSON (the same for every pod of the
// Deployment), and the pod's own part in separate variables:
//
//   KILN_REPLICA_ID     the replica id (the pod's name)
//   KILN_WORKER_PORT    the port it serves on (the container's port)
//   KILN_WORKER_HOST    the address it binds (default 0.0.0.0: the pod's IP)
//   KILN_WORK_DIR       its private folder (an emptyDir)
//   KILN_ARTIFACTS_URL  the artifact store it reads the model's blobs from and re-hashes
//                       (what the control plane was started with)
//
// The spec is written into the work folder as a local worker's is, so everything after the
// start (its record, the folder's removal once it stops) is the same as on one machine.

import { parseArtifactsUrl } from '../registry/open-artifact-storage.ts';
import { mkdir, writeFile } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import type { WorkerSpec } from './worker-spec.ts';

export type SpecFromEnv =
  | { readonly ok: true; readonly spec: WorkerSpec }
  | { readonly ok: false; readonly reason: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Where the model's blobs are, from KILN_ARTIFACTS_URL: s3://BUCKET/PREFIX (the endpoint and
 * region from the pod's AWS_* environment, credentials too) or a folder (file:// or a path).
 */
function artifactsLocation(url: string | undefined): Pick<WorkerSpec, 'artifacts'> | string {
  if (url === undefined || url.trim() === '') return 'KILN_ARTIFACTS_URL is not set';
  const text = url.trim();
  const path = text.startsWith('file://') ? text.slice('file://'.length) : text;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(path) && !isAbsolute(path))
    return `KILN_ARTIFACTS_URL ${text}: expected s3://BUCKET/PREFIX or an absolute path`;
  const locator = parseArtifactsUrl(text);
  if (typeof locator === 'string') return `KILN_ARTIFACTS_URL ${text}: ${locator}`;
  return { artifacts: locator };
}

/** The worker spec from `env` (the revision's JSON in env[name]), or why it cannot be made. */
export function specFromEnv(name: string, env: NodeJS.ProcessEnv): SpecFromEnv {
  const text = env[name];
  if (text === undefined || text === '') return { ok: false, reason: `${name} is not set` };
  let revision: unknown;
  try {
    revision = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `${name} is not JSON: ${(error as Error).message}` };
  }
  if (!isRecord(revision)) return { ok: false, reason: `${name} must be a JSON object` };
  for (const field of ['endpoint', 'model', 'format'])
    if (typeof revision[field] !== 'string')
      return { ok: false, reason: `${name}.${field} must be a string` };
  if (typeof revision.version !== 'number' || !Array.isArray(revision.files))
    return { ok: false, reason: `${name} needs a version number and a files list` };
  const replicaId = env.KILN_REPLICA_ID ?? '';
  if (replicaId === '') return { ok: false, reason: 'KILN_REPLICA_ID is not set' };
  const port = Number(env.KILN_WORKER_PORT ?? '9000');
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    return { ok: false, reason: `KILN_WORKER_PORT ${env.KILN_WORKER_PORT}: expected 0–65535` };
  const workDir = env.KILN_WORK_DIR ?? '';
  if (!isAbsolute(workDir)) return { ok: false, reason: 'KILN_WORK_DIR must be an absolute path' };
  const artifacts = artifactsLocation(env.KILN_ARTIFACTS_URL);
  if (typeof artifacts === 'string') return { ok: false, reason: artifacts };
  return {
    ok: true,
    spec: {
      ...(revision as unknown as WorkerSpec),
      ...artifacts,
      replicaId,
      host: env.KILN_WORKER_HOST ?? '0.0.0.0',
      port,
      workDir,
      channelSocket: null,
    },
  };
}

/** Writes the spec into its work folder (as the local backend does); returns the file. */
export async function writeSpecFromEnv(spec: WorkerSpec): Promise<string> {
  await mkdir(spec.workDir, { recursive: true });
  const path = join(spec.workDir, 'spec.json');
  await writeFile(path, JSON.stringify(spec));
  return path;
}
