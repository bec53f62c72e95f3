// The artifact store contract (artifact-store-contract.ts) on the local folder and on a real
// S3-compatible server (s3rver on loopback).

import { PutObjectCommand } from '@aws-sdk/client-s3';
import { readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ArtifactStore } from '../../src/registry/artifact-store.ts';
import { S3ArtifactStore } from '../../src/registry/s3-artifact-store.ts';
import { s3Server } from '../helpers/s3-server.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { artifactStoreContract } from './artifact-store-contract.ts';

artifactStoreContract('local', async (clock) => {
  const storage = new ArtifactStore(join(await tempDir(), 'artifacts'), clock);
  await storage.init();
  return {
    storage,
    corrupt: (sha256, bytes) => writeFile(storage.blobPath(sha256), bytes),
    setWritten: (sha256, at) => utimes(storage.blobPath(sha256), at, at),
    spooled: () => readdir(join(storage.root, 'tmp')),
  };
});

// One server for the file (started at the top: a test's `after` would stop it after that test).
const s3 = await s3Server();

artifactStoreContract('s3', async (clock) => {
  const locator = await s3.bucket();
  const scratchDir = join(await tempDir(), 'spool');
  const storage = new S3ArtifactStore(locator, { clock, scratchDir });
  await storage.init();
  return {
    storage,
    corrupt: async (sha256, bytes) => {
      await s3.client.send(
        new PutObjectCommand({ Bucket: locator.bucket, Key: storage.blobKey(sha256), Body: bytes }),
      );
    },
    setWritten: (sha256, at) => s3.setModified(locator.bucket, storage.blobKey(sha256), at),
    spooled: () => readdir(scratchDir),
  };
});
