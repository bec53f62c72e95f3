// Opens the artifact store a locator names: the control plane at start (`kiln up
// --artifacts`), a worker for its model (its spec carries the locator). Also reads the
// `--artifacts` / KILN_ARTIFACTS_URL setting into a locator.

import { resolve } from 'node:path';
import type { Clock } from '../core/clock.ts';
import { ArtifactStore } from './artifact-store.ts';
import type { ArtifactLocator, ArtifactStorage } from './artifact-storage.ts';

/**
 * S3 stores opened without options (a worker's, to read), one per locator: each holds an
 * SDK client and its connection pool, and a pool worker opens its store for every model it
 * loads.
 */
const readers = new Map<string, ArtifactStorage>();

export async function openArtifactStorage(
  locator: ArtifactLocator,
  options: {
    readonly clock?: Clock;
    /** Where an object store spools uploads while it hashes them (a local store: its tmp/). */
    readonly scratchDir?: string;
  } = {},
): Promise<ArtifactStorage> {
  switch (locator.kind) {
    case 'local':
      return new ArtifactStore(locator.root, options.clock);
    case 's3': {
      // Loaded only for S3: the AWS SDK would add to every local worker's start.
      const { S3ArtifactStore } = await import('./s3-artifact-store.ts');
      const plain = options.clock === undefined && options.scratchDir === undefined;
      const key = JSON.stringify(locator);
      const known = plain ? readers.get(key) : undefined;
      if (known !== undefined) return known;
      const store = new S3ArtifactStore(locator, {
        ...(options.clock === undefined ? {} : { clock: options.clock }),
        ...(options.scratchDir === undefined ? {} : { scratchDir: options.scratchDir }),
      });
      if (plain) readers.set(key, store);
      return store;
    }
  }
}

/**
 * `s3://bucket/prefix` (or a plain folder path) → a locator; a string saying what is wrong
 * otherwise. `endpoint` is a custom S3-compatible endpoint (`--artifacts-endpoint`, else
 * AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL): with one, requests use path-style URLs, which
 * S3-compatible servers expect (virtual-hosted buckets need DNS per bucket). The region is
 * AWS_REGION's (else AWS_DEFAULT_REGION's), kept in the locator so workers use the same.
 */
export function parseArtifactsUrl(
  url: string,
  options: { readonly endpoint?: string | undefined; readonly env?: NodeJS.ProcessEnv } = {},
): ArtifactLocator | string {
  const env = options.env ?? process.env;
  const text = url.trim();
  if (text === '') return 'the setting is empty';
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return { kind: 'local', root: resolve(text) };
  if (text.startsWith('file://')) return { kind: 'local', root: resolve(text.slice(7)) };
  if (!text.startsWith('s3://'))
    return 'expected s3://BUCKET[/PREFIX] or a local folder (file:// or a path)';
  const rest = text.slice('s3://'.length);
  const slash = rest.indexOf('/');
  const bucket = slash === -1 ? rest : rest.slice(0, slash);
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket))
    return `"${bucket}" is not a valid bucket name (3–63 characters: lowercase letters, digits, dots, hyphens)`;
  const trimmed = slash === -1 ? '' : rest.slice(slash + 1).replace(/^\/+|\/+$/g, '');
  const prefix = trimmed === '' ? '' : `${trimmed}/`;
  const endpointText = options.endpoint ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  let endpoint: string | null = null;
  if (endpointText !== undefined && endpointText.trim() !== '') {
    try {
      const parsed = new URL(endpointText.trim());
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error();
      endpoint = parsed.toString().replace(/\/$/, '');
    } catch {
      return `invalid endpoint "${endpointText}": expected an http:// or https:// URL`;
    }
  }
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? null;
  return {
    kind: 's3',
    bucket,
    prefix,
    endpoint,
    region: region === '' ? null : region,
    forcePathStyle: endpoint !== null,
  };
}
