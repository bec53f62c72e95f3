// Uploading against a platform: a file that changes between hashing and sending is named, and
// a blob over the platform's upload limit is refused before a byte is sent.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KilnClient } from '../../src/cli/http-client.ts';
import { CliError } from '../../src/cli/errors.ts';
import { silentProgress } from '../../src/cli/progress.ts';
import { findMissingBlobs, hashFiles, uploadBlobs, walkArtifact } from '../../src/cli/upload.ts';
import { testPlatform } from '../helpers/platform.ts';
import { tempDir } from '../helpers/temp-dir.ts';

test('a file that shrinks or grows after hashing is named; nothing wrong is stored', async () => {
  const { url } = await testPlatform();
  const client = new KilnClient(url);
  try {
    for (const change of ['shrink', 'grow'] as const) {
      const file = join(await tempDir(), 'weights.bin');
      await writeFile(file, Buffer.alloc(300_000, change === 'shrink' ? 1 : 2));
      const files = await hashFiles(await walkArtifact(file));
      if (change === 'shrink') await truncate(file, 1_000);
      else await appendFile(file, Buffer.alloc(1_000, 7));
      await assert.rejects(uploadBlobs(client, files, silentProgress), (error: unknown) => {
        assert.ok(error instanceof CliError, String(error));
        assert.equal(error.code, 'KILN_LOCAL_FILE');
        assert.match(error.message, /changed while it was being uploaded/);
        return true;
      });
      assert.deepEqual(
        (await findMissingBlobs(client, files)).map((f) => f.sha256),
        files.map((f) => f.sha256),
        `${change}: the blob is not stored`,
      );
    }
  } finally {
    await client.close();
  }
});

test('a blob over the upload limit is refused by the CLI with the limit, before sending', async () => {
  const { url } = await testPlatform({ maxUploadBytes: 1_000 });
  const client = new KilnClient(url);
  try {
    const file = join(await tempDir(), 'big.bin');
    await writeFile(file, Buffer.alloc(5_000_000, 3));
    const files = await hashFiles(await walkArtifact(file));
    await assert.rejects(findMissingBlobs(client, files), (error: unknown) => {
      assert.ok(error instanceof CliError, String(error));
      assert.equal(error.code, 'KILN_PAYLOAD_TOO_LARGE');
      assert.match(error.message, /5000000 bytes; the platform takes uploads of at most 1000/);
      return true;
    });
  } finally {
    await client.close();
  }
});
