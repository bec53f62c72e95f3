// A real S3-compatible server for tests: s3rver on a loopback port, its objects in a temp
// folder, stopped when the test file ends. `bucket()` creates a fresh bucket and returns the
// locator of an artifact store in it (path-style, the server's endpoint); the SDK finds the
// server's credentials (S3RVER / S3RVER) in this process's environment, as a platform and its
// workers (which inherit it) do in production.

import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { after } from 'node:test';
import S3rver from 's3rver';
import type { S3ArtifactLocator } from '../../src/registry/s3-artifact-store.ts';
import { tempDir } from './temp-dir.ts';

export interface S3TestServer {
  readonly endpoint: string;
  /** A client with the server's credentials, for what a test does behind the store's back. */
  readonly client: S3Client;
  /** A new empty bucket; the locator of a store under `prefix` in it. */
  bucket(prefix?: string): Promise<S3ArtifactLocator>;
  /** Sets an object's LastModified (s3rver reads it from its file's mtime). */
  setModified(bucket: string, key: string, at: Date): Promise<void>;
}

let buckets = 0;

export async function s3Server(): Promise<S3TestServer> {
  // (The store silences the SDK's Node-version notice too; this client may come first.)
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
  delete process.env.AWS_SESSION_TOKEN;
  delete process.env.AWS_PROFILE;
  const directory = await tempDir('kiln-s3rver-');
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory });
  const { port } = await server.run();
  after(() => server.close());
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  after(() => client.destroy());
  return {
    endpoint,
    client,
    async bucket(prefix = 'kiln/') {
      buckets += 1;
      const name = `kiln-test-${process.pid}-${buckets}`;
      await client.send(new CreateBucketCommand({ Bucket: name }));
      return { kind: 's3', bucket: name, prefix, endpoint, region: null, forcePathStyle: true };
    },
    async setModified(bucket, key, at) {
      const parts = key.split('/');
      const last = parts.pop() ?? '';
      await utimes(join(directory, bucket, ...parts, `${last}._S3rver_object`), at, at);
    },
  };
}
