import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ArtifactFile } from '../../../src/registry/formats/artifact-file.ts';
import { bufferArtifact } from '../../../src/registry/formats/buffer-artifact.ts';
import { readSafetensorsHeader } from '../../../src/registry/formats/safetensors.ts';
import { expected, fixture, fixtureBytes, safetensors } from './fixtures.ts';

async function reason(file: ArtifactFile): Promise<string> {
  const result = await readSafetensorsHeader(file);
  assert.equal(result.ok, false, 'expected a refusal');
  return result.ok ? '' : result.reason;
}

const t = (dtype: string, shape: number[], begin: number, end: number) => ({
  dtype,
  shape,
  data_offsets: [begin, end],
});

void test('the hand-written tiny-llm weights parse; only the header is read', async () => {
  const file = await fixture('tiny-llm/model.safetensors');
  const reads: [number, number][] = [];
  const spy: ArtifactFile = {
    ...file,
    read: (offset, length) => (reads.push([offset, length]), file.read(offset, length)),
  };
  const result = await readSafetensorsHeader(spy);
  assert.ok(result.ok, result.ok ? '' : result.reason);
  const { header } = result;
  assert.deepEqual(
    header.tensors.map((x) => x.name),
    expected['tiny-llm'].tensorNames,
  );
  assert.deepEqual(header.metadata, { format: 'pt' });
  assert.equal(header.dataStart, 8 + header.headerBytes);
  assert.equal(header.dataStart % 8, 0);
  assert.equal(header.dataStart + header.dataBytes, file.size);
  assert.equal(
    header.tensors.reduce((n, x) => n + x.numElements, 0),
    expected['tiny-llm'].numParameters,
  );
  const embed = header.tensors[0];
  assert.deepEqual(embed?.shape, [32, 16]);
  assert.deepEqual(embed?.dataOffsets, [0, 32 * 16 * 4]);
  // The offsets lead to the weights: the script writes RMSNorm weights as ones (float32 LE).
  const bytes = fixtureBytes('tiny-llm/model.safetensors');
  const norm = header.tensors.find((x) => x.name === 'model.norm.weight');
  assert.ok(norm);
  for (let i = 0; i < norm.numElements; i += 1) {
    assert.equal(bytes.readFloatLE(header.dataStart + norm.dataOffsets[0] + 4 * i), 1);
  }
  assert.ok(
    reads.every(([offset, length]) => offset + length <= header.dataStart),
    'read past the header',
  );
});

void test('header lies about offsets and sizes are refused', async () => {
  const cases: [Buffer, RegExp][] = [
    [
      safetensors({ a: t('F32', [2], 0, 8), b: t('F32', [2], 8, 16) }, 12),
      /tensor 'b' ends at byte 16 of a 12-byte data section \(truncated file\?\)/,
    ],
    [
      safetensors({ a: t('F32', [4], 0, 16), b: t('F32', [2], 8, 16) }, 16),
      /tensors 'a' \[0, 16\) and 'b' \[8, 16\) overlap/,
    ],
    [safetensors({ a: t('F16', [3], 0, 8) }, 8), /tensor 'a' is 8 bytes but F16 × \[3\] needs 6/],
    [safetensors({ a: t('F32', [2], 8, 0) }, 8), /end before they begin/],
    [safetensors({ a: t('Q4_K', [2], 0, 2) }, 8), /tensor 'a' has unknown dtype "Q4_K"/],
    [
      safetensors({ a: t('F32', [-1], 0, 0) }, 8),
      /shape that is not a list of non-negative integers/,
    ],
    [
      safetensors({ a: { dtype: 'F32', shape: [1] } }, 8),
      /data_offsets that are not two non-negative integers/,
    ],
    [safetensors({ a: t('F4', [3], 0, 2) }, 8), /does not fill whole bytes/],
    [safetensors({ __metadata__: { n: 1 } }, 0), /__metadata__ must map strings to strings/],
    [safetensors({ a: 5 }, 0), /tensor 'a' is not an object/],
  ];
  for (const [bytes, pattern] of cases)
    assert.match(await reason(bufferArtifact('w.safetensors', bytes)), pattern);
});

void test('gaps between tensors are allowed; sub-byte and zero-size tensors are sized right', async () => {
  const bytes = safetensors(
    {
      a: t('F32', [1], 0, 4),
      b: t('F4', [4], 8, 10),
      c: t('BF16', [0, 3], 10, 10),
      d: t('BOOL', [2], 10, 12),
    },
    16,
  );
  const result = await readSafetensorsHeader(bufferArtifact('w.safetensors', bytes));
  assert.ok(result.ok, result.ok ? '' : result.reason);
  assert.deepEqual(
    result.header.tensors.map((x) => x.numElements),
    [1, 4, 0, 2],
  );
});

void test('header length checks', async () => {
  const tooLong = Buffer.alloc(16);
  tooLong.writeBigUInt64LE(9n);
  assert.match(
    await reason(bufferArtifact('w.safetensors', tooLong)),
    /w\.safetensors: header length 9 is larger than the 8 bytes after it/,
  );
  const absurd = Buffer.alloc(16);
  absurd.writeBigUInt64LE(2n ** 62n);
  assert.match(
    await reason(bufferArtifact('w.safetensors', absurd)),
    /over the 100000000-byte limit/,
  );
  assert.match(
    await reason(bufferArtifact('w.safetensors', Buffer.alloc(5))),
    /5 bytes is too short/,
  );
  const notJson = Buffer.concat([Buffer.from([4, 0, 0, 0, 0, 0, 0, 0]), Buffer.from('{"a"')]);
  assert.match(
    await reason(bufferArtifact('w.safetensors', notJson)),
    /the header is not valid UTF-8 JSON/,
  );
  const array = Buffer.concat([Buffer.from([2, 0, 0, 0, 0, 0, 0, 0]), Buffer.from('[]')]);
  assert.match(
    await reason(bufferArtifact('w.safetensors', array)),
    /the header is not a JSON object/,
  );
  const badUtf8 = Buffer.concat([
    Buffer.from([3, 0, 0, 0, 0, 0, 0, 0]),
    Buffer.from([0x7b, 0xff, 0x7d]),
  ]);
  assert.match(await reason(bufferArtifact('w.safetensors', badUtf8)), /not valid UTF-8 JSON/);
});

void test('truncating the real file is caught', async () => {
  const bytes = fixtureBytes('tiny-llm/model.safetensors');
  assert.match(
    await reason(bufferArtifact('m.safetensors', bytes.subarray(0, bytes.length - 1))),
    /lm_head\.weight' ends at byte/,
  );
  assert.match(
    await reason(bufferArtifact('m.safetensors', bytes.subarray(0, 100))),
    /header length \d+ is larger than the 92 bytes after it/,
  );
});
