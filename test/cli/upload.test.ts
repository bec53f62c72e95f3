import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CliError } from '../../src/cli/errors.ts';
import {
  hashFile,
  hashFiles,
  manifestPath,
  mapLimit,
  toManifestFiles,
  uniqueBlobs,
  walkArtifact,
} from '../../src/cli/upload.ts';
import { tempDir } from '../helpers/temp-dir.ts';

async function makeTree(): Promise<string> {
  const root = await tempDir('kiln-cli-walk-');
  const model = join(root, 'model');
  await mkdir(join(model, 'weights', 'shards'), { recursive: true });
  await mkdir(join(model, '.git', 'objects'), { recursive: true });
  await writeFile(join(model, 'config.json'), '{"a":1}');
  await writeFile(join(model, 'weights', 'shards', 'part-0.bin'), Buffer.alloc(10, 1));
  await writeFile(join(model, 'weights', 'index.json'), '{}');
  await writeFile(join(model, '.git', 'objects', 'x'), 'not part of the model');
  await writeFile(join(root, 'outside.txt'), 'linked in');
  await symlink(join(root, 'outside.txt'), join(model, 'linked.txt'));
  await symlink(join(model, 'weights'), join(model, 'weights-link'));
  return model;
}

void test('a folder is walked recursively, with sorted POSIX paths relative to it', async () => {
  const model = await makeTree();
  const files = await walkArtifact(model);
  assert.deepEqual(
    files.map((f) => [f.path, f.size]),
    [
      ['config.json', 7],
      ['linked.txt', 9], // symlink to a regular file: followed
      ['weights/index.json', 2],
      ['weights/shards/part-0.bin', 10],
      // .git/ and the symlink to a folder are skipped
    ],
  );
  assert.equal(files[0]?.absolutePath, join(model, 'config.json'));
});

void test('a single file is listed under its basename', async () => {
  const model = await makeTree();
  const files = await walkArtifact(join(model, 'weights', 'index.json'));
  assert.deepEqual(
    files.map((f) => f.path),
    ['index.json'],
  );
});

void test('missing paths and empty folders are local-file errors (exit 1)', async () => {
  const root = await tempDir('kiln-cli-walk-');
  await assert.rejects(walkArtifact(join(root, 'nope')), (error: unknown) => {
    assert.ok(error instanceof CliError);
    assert.equal(error.exitCode, 1);
    assert.match(error.message, /cannot read .*nope: no such file or directory/);
    return true;
  });
  await mkdir(join(root, 'empty'));
  await assert.rejects(walkArtifact(join(root, 'empty')), /contains no files/);
});

void test('hashing streams the file and matches sha256 of its bytes', async () => {
  const root = await tempDir('kiln-cli-hash-');
  const data = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
  await writeFile(join(root, 'big.bin'), data);
  const expected = createHash('sha256').update(data).digest('hex');
  assert.deepEqual(await hashFile(join(root, 'big.bin')), { sha256: expected, size: data.length });
});

void test('identical files share one blob; the manifest keeps both paths', async () => {
  const root = await tempDir('kiln-cli-dup-');
  await writeFile(join(root, 'a.bin'), 'same');
  await writeFile(join(root, 'b.bin'), 'same');
  await writeFile(join(root, 'c.bin'), 'different');
  const files = await hashFiles(await walkArtifact(root));
  assert.equal(uniqueBlobs(files).length, 2);
  assert.deepEqual(
    toManifestFiles(files).map((f) => f.path),
    ['a.bin', 'b.bin', 'c.bin'],
  );
});

void test('manifest paths use forward slashes', () => {
  assert.equal(manifestPath('/m', '/m/a/b/c.json'), 'a/b/c.json');
});

void test('mapLimit keeps order and never runs more than the limit at once', async () => {
  let running = 0;
  let peak = 0;
  const results = await mapLimit([5, 1, 4, 2, 3], 2, async (n) => {
    running += 1;
    peak = Math.max(peak, running);
    await new Promise((resolve) => setImmediate(resolve));
    running -= 1;
    return n * 10;
  });
  assert.deepEqual(results, [50, 10, 40, 20, 30]);
  assert.equal(peak, 2);
  assert.deepEqual(await mapLimit([], 4, () => Promise.resolve(1)), []);
});
