// Starts a real platform on a loopback port in a temp home, and a tiny HTTP client for it.

import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { adminTokenPath } from '../../src/core/admin-token-file.ts';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { after } from 'node:test';
import type { Clock } from '../../src/core/clock.ts';
import { startPlatform, type RunningPlatform } from '../../src/control/start-platform.ts';
import type { ArtifactLocator } from '../../src/registry/artifact-storage.ts';

export interface TestPlatform extends RunningPlatform {
  readonly home: string;
  /** Outside --dev: `Authorization: Bearer <the admin token kiln up wrote>`; else {}. */
  readonly admin: Record<string, string>;
}

export async function testPlatform(
  options: {
    maxUploadBytes?: number;
    gateway?: boolean;
    dev?: boolean;
    clock?: Clock;
    /** An inventory file (placement, issue 14). */
    inventory?: string;
    /** An OTLP/HTTP collector the gateway and workers export traces to (issue 15). */
    otlpUrl?: string;
    /** Gateway processes on the gateway's port (issue 16). */
    gatewayProcesses?: number;
    /** Where artifacts are stored (issue 17: an S3 bucket); default the home's folder. */
    artifacts?: ArtifactLocator;
  } = {},
): Promise<TestPlatform> {
  const home = await mkdtemp(join(tmpdir(), 'kiln-home-'));
  const platform = await startPlatform({
    home,
    host: '127.0.0.1',
    port: 0,
    gatewayPort: 0,
    gateway: false,
    ...options,
    dev: options.dev ?? true,
  });
  // One hook, in this order: the gateway and workers have exited (and stopped writing under
  // the home) before the folder goes. Two hooks ran first-registered-first, so the folder
  // was removed while the gateway could still persist a snapshot (ENOTEMPTY).
  after(async () => {
    await platform.close();
    await rm(home, { recursive: true, force: true });
  });
  const admin =
    options.dev === false
      ? { authorization: `Bearer ${(await readFile(adminTokenPath(home), 'utf8')).trim()}` }
      : {};
  return Object.assign(platform, { home, admin });
}

export interface JsonResponse {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Headers;
}

export async function call(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<JsonResponse> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body =
      typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body);
    if (!('content-type' in headers))
      (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  const response = await fetch(url + path, init);
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text.length > 0 ? JSON.parse(text) : null;
  } catch {
    // leave as text
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

export function errorCode(response: JsonResponse): string | undefined {
  const body = response.body as { error?: { code?: string } } | null;
  return body?.error?.code;
}

export function sha256(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

export interface LocalFile {
  readonly path: string;
  readonly size: number;
  readonly sha256: string;
  readonly data: Buffer;
}

/** Reads a file or a folder into manifest entries (paths relative, POSIX). */
export async function readArtifact(path: string, name?: string): Promise<LocalFile[]> {
  const info = await stat(path);
  if (info.isFile()) {
    const data = await readFile(path);
    return [
      {
        path: name ?? path.split(sep).at(-1) ?? 'file',
        size: data.length,
        sha256: sha256(data),
        data,
      },
    ];
  }
  const out: LocalFile[] = [];
  async function walk(dir: string): Promise<void> {
    for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) await walk(full);
      else {
        const data = await readFile(full);
        out.push({
          path: relative(path, full).split(sep).join('/'),
          size: data.length,
          sha256: sha256(data),
          data,
        });
      }
    }
  }
  await walk(path);
  return out;
}

/** Uploads blobs, then creates the version; returns the version response. */
export async function register(
  url: string,
  model: string,
  format: string,
  files: readonly LocalFile[],
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<JsonResponse> {
  const created = await call(url, 'POST', '/api/v1/models', { name: model }, headers);
  if (created.status !== 201 && errorCode(created) !== 'KILN_MODEL_EXISTS') {
    throw new Error(`could not create model: ${JSON.stringify(created.body)}`);
  }
  for (const f of files) {
    const put = await call(url, 'PUT', `/api/v1/blobs/${f.sha256}`, f.data, {
      'content-type': 'application/octet-stream',
      ...headers,
    });
    if (put.status !== 201 && put.status !== 200)
      throw new Error(`upload failed: ${JSON.stringify(put.body)}`);
  }
  return call(
    url,
    'POST',
    `/api/v1/models/${model}/versions`,
    {
      format,
      files: files.map(({ path, size, sha256: digest }) => ({ path, size, sha256: digest })),
      ...extra,
    },
    headers,
  );
}

/** The registry fixtures (fixtures/registry/, made by make_fixtures.py). */
export const registryFixtures = new URL('../../fixtures/registry/', import.meta.url).pathname;

/** Registers fixtures/registry/`file` as a version of `model`; fails the test unless 201. */
export async function registerFixture(
  url: string,
  model: string,
  format: string,
  file: string,
): Promise<void> {
  const response = await register(url, model, format, await readArtifact(registryFixtures + file));
  if (response.status !== 201)
    throw new Error(`registering ${file} as ${model}: ${JSON.stringify(response.body)}`);
}
