import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSafetensorsFile } from '../../../src/llm/loader/safetensors-file.ts';
import { f32Bytes, safetensorsBytes, safetensorsWithHeader } from './safetensors-writer.ts';

let dir = '';
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kiln-safetensors-file-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function refusal(name: string, bytes: Uint8Array): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, bytes);
  const result = await openSafetensorsFile(path);
  assert.equal(result.ok, false, 'expected a refusal');
  return result.ok ? '' : result.message;
}

const entry = (dtype: string, shape: number[], begin: number, end: number): unknown => ({
  dtype,
  shape,
  data_offsets: [begin, end],
});

void test('a valid file opens with every tensor findable by name', async () => {
  const path = join(dir, 'ok.safetensors');
  await writeFile(
    path,
    safetensorsBytes({
      a: { dtype: 'F32', shape: [2], bytes: f32Bytes([1, 2]) },
      empty: { dtype: 'F32', shape: [0, 4], bytes: new Uint8Array(0) },
      b: { dtype: 'F32', shape: [1, 1], bytes: f32Bytes([3]) },
    }),
  );
  const result = await openSafetensorsFile(path);
  assert.ok(result.ok, result.ok ? '' : result.message);
  assert.equal(result.file.path, path);
  assert.deepEqual([...result.file.tensorsByName.keys()], ['a', 'empty', 'b']);
  assert.deepEqual(result.file.tensorsByName.get('b')?.dataOffsets, [8, 12]);
});

void test('headers whose offsets lie are refused, naming the file and the tensors', async () => {
  const data = new Uint8Array(16);
  const cases: [string, Record<string, unknown>, Uint8Array, string][] = [
    [
      'overlap.safetensors',
      { a: entry('F32', [4], 0, 16), b: entry('F32', [2], 8, 16) },
      data,
      "tensors 'a' [0, 16) and 'b' [8, 16) overlap",
    ],
    [
      'outside.safetensors',
      { a: entry('F32', [2], 0, 8), b: entry('F32', [4], 8, 24) },
      data,
      "tensor 'b' ends at byte 24 of a 16-byte data section (truncated file?)",
    ],
    [
      'gap.safetensors',
      { a: entry('F32', [1], 0, 4), b: entry('F32', [2], 8, 16) },
      data,
      "the header does not cover the data: bytes [4, 8) after tensor 'a' and before tensor 'b' belong to no tensor",
    ],
    [
      'leading-gap.safetensors',
      { a: entry('F32', [2], 8, 16) },
      data,
      "the header does not cover the data: bytes [0, 8) before the first tensor 'a' belong to no tensor",
    ],
    [
      'trailing.safetensors',
      { a: entry('F32', [2], 0, 8) },
      data,
      "the header does not cover the data: 8 bytes after the last tensor 'a' belong to no tensor (the data section is 16 bytes)",
    ],
    [
      'no-tensors.safetensors',
      {},
      data,
      'the header does not cover the data: 16 bytes belong to no tensor (the data section is 16 bytes)',
    ],
    [
      'size-lie.safetensors',
      { a: entry('F32', [3], 0, 16) },
      data,
      "tensor 'a' is 16 bytes but F32 × [3] needs 12",
    ],
  ];
  for (const [name, header, bytes, message] of cases) {
    assert.equal(
      await refusal(name, safetensorsWithHeader(header, bytes)),
      `${join(dir, name)}: ${message}`,
    );
  }
});

void test('truncated files are refused wherever the cut falls', async () => {
  const whole = safetensorsBytes({
    'model.norm.weight': { dtype: 'F32', shape: [4], bytes: f32Bytes([1, 2, 3, 4]) },
  });
  const headerBytes = Number(whole.readBigUInt64LE(0));
  const inData = await refusal('cut-data.safetensors', whole.subarray(0, whole.length - 3));
  assert.match(
    inData,
    /cut-data\.safetensors: tensor 'model\.norm\.weight' ends at byte 16 of a 13-byte data section \(truncated file\?\)$/,
  );
  const inHeader = await refusal('cut-header.safetensors', whole.subarray(0, 8 + headerBytes - 5));
  assert.match(
    inHeader,
    /cut-header\.safetensors: header length \d+ is larger than the \d+ bytes after it$/,
  );
  const inLength = await refusal('cut-length.safetensors', whole.subarray(0, 5));
  assert.match(inLength, /cut-length\.safetensors: 5 bytes is too short for a safetensors file$/);
});

void test('a missing file is reported as missing; a folder as unreadable', async () => {
  const missing = await openSafetensorsFile(join(dir, 'nope.safetensors'));
  assert.deepEqual(missing, {
    ok: false,
    missing: true,
    message: `${join(dir, 'nope.safetensors')}: not found`,
  });
  const folder = await openSafetensorsFile(dir);
  assert.equal(folder.ok, false);
  assert.equal(!folder.ok && folder.missing, false);
  assert.match(folder.ok ? '' : folder.message, /cannot be read \(EISDIR/);
});
