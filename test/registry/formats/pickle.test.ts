import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { deflateSync, gzipSync } from 'node:zlib';
import type { ArtifactFile } from '../../../src/registry/formats/artifact-file.ts';
import { bufferArtifact } from '../../../src/registry/formats/buffer-artifact.ts';
import { fileArtifact } from '../../../src/registry/formats/file-artifact.ts';
import { detectPickle, findPickle, pickleByName } from '../../../src/registry/formats/pickle.ts';
import { readZipDirectory } from '../../../src/registry/formats/zip-directory.ts';
import {
  fixture,
  fixtureBytes,
  fixtureFolder,
  lightgbmFixtures,
  lightgbmSkip,
  registryFixtures,
  safetensors,
  seededBytes,
} from './fixtures.ts';

// What each pickle fixture is (see make_fixtures.py) and the words we expect for it.
const pickles: [string, string][] = [
  ['model.pkl', 'Python pickle (protocol 4)'],
  ['model.joblib', 'joblib file (Python pickle, protocol 4)'],
  ['model-compressed.joblib', 'joblib file (zlib-compressed Python pickle, protocol 4)'],
  ['weights.pt', 'PyTorch zip checkpoint (contains weights/data.pkl)'],
  ['legacy.bin', 'PyTorch legacy checkpoint (Python pickle, protocol 2)'],
  ['pytorch_model.bin', 'PyTorch zip checkpoint (contains pytorch_model/data.pkl)'],
  ['proto0.pkl', 'Python pickle (protocol 0)'],
  ['proto1.pkl', 'Python pickle (protocol 1)'],
  ['object-array.npy', 'NumPy object array (its items are stored as a pickle)'],
];

for (const [name, kind] of pickles) {
  void test(`${name} is detected by content even when renamed`, async () => {
    assert.deepEqual(await detectPickle(await fixture(name, 'weights.dat')), { kind });
  });
}

void test('pickle names are refused by name alone; .bin only by content', () => {
  assert.deepEqual(pickleByName('model.pkl'), { kind: 'Python pickle (by its .pkl name)' });
  assert.deepEqual(pickleByName('dir/Model.PICKLE'), {
    kind: 'Python pickle (by its .pickle name)',
  });
  assert.deepEqual(pickleByName('m.joblib'), { kind: 'joblib file (by its .joblib name)' });
  assert.deepEqual(pickleByName('w.pt'), { kind: 'PyTorch checkpoint (by its .pt name)' });
  assert.deepEqual(pickleByName('w.pth'), { kind: 'PyTorch checkpoint (by its .pth name)' });
  assert.match(pickleByName('last.ckpt')?.kind ?? '', /^checkpoint/);
  assert.match(pickleByName('data.pkl.gz')?.kind ?? '', /^compressed Python pickle/);
  for (const name of [
    'pytorch_model.bin',
    'model.onnx',
    'model.safetensors',
    'weights.bin',
    'pt',
    'notes.pkl.txt',
  ]) {
    assert.equal(pickleByName(name), null, name);
  }
});

function allFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? allFiles(path) : [path];
  });
}

void test('no false positives on the valid registry fixtures', async () => {
  const pickleNames = new Set(pickles.map(([name]) => name));
  const valid = allFiles(registryFixtures).filter(
    (p) => !pickleNames.has(relative(registryFixtures, p)),
  );
  assert.ok(valid.length >= 15);
  for (const path of valid) {
    assert.equal(await detectPickle(await fileArtifact(path, 'file.bin')), null, path);
  }
});

void test('no false positives on the LightGBM fixtures', { skip: lightgbmSkip }, async () => {
  for (const path of allFiles(lightgbmFixtures)) {
    assert.equal(await detectPickle(await fileArtifact(path, 'file.bin')), null, path);
  }
});

void test('no false positives on safetensors whatever the header length bytes look like', async () => {
  // N = 0x0280 starts 80 02 like a protocol-2 pickle, 0x5d like LZMA, 0x9c78 like zlib, ...
  for (let length = 2; length <= 4096; length += 1) {
    const bytes = safetensors({}, 0, length);
    assert.equal(
      await detectPickle(bufferArtifact('model.safetensors', bytes)),
      null,
      `N=${length}`,
    );
  }
  for (const length of [0x9c78, 0xda78, 0x5e78, 0x8b1f]) {
    assert.equal(
      await detectPickle(bufferArtifact('m.safetensors', safetensors({}, 0, length))),
      null,
    );
  }
});

void test('no false positives on text, JSON and random bytes', async () => {
  const texts = [
    'Hello world.',
    'I think so.\nthe end.',
    '(see the README).',
    '{"a": [1, 2, 3]}',
    'c\n.',
    'tree\nversion=v3\n.',
    '',
    '.',
  ];
  for (const text of texts)
    assert.equal(await detectPickle(bufferArtifact('a.txt', Buffer.from(text))), null, text);
  for (let seed = 1; seed <= 500; seed += 1) {
    const bytes = seededBytes(seed, 1 + ((seed * 13) % 700));
    const finding = await detectPickle(bufferArtifact('r.bin', bytes));
    // Random data may happen to carry a compressor's magic; anything else is a false positive.
    assert.ok(
      finding === null || /compressed data/.test(finding.kind),
      `seed ${seed}: ${finding?.kind}`,
    );
  }
});

void test('compressed pickles: gzip and zlib are opened; other compressors are refused unopened', async () => {
  const pickle = fixtureBytes('model.pkl');
  assert.deepEqual(await detectPickle(bufferArtifact('a', gzipSync(pickle))), {
    kind: 'joblib file (gzip-compressed Python pickle, protocol 4)',
  });
  assert.deepEqual(
    await detectPickle(bufferArtifact('a', deflateSync(fixtureBytes('proto0.pkl')))),
    {
      kind: 'joblib file (zlib-compressed Python pickle, protocol 0)',
    },
  );
  // A compressed file that is not a pickle inside is fine.
  assert.equal(await detectPickle(bufferArtifact('a', gzipSync(Buffer.from('plain text')))), null);
  // A truncated compressed pickle is still recognised from its first bytes.
  const big = gzipSync(fixtureBytes('model.joblib'));
  assert.ok(await detectPickle(bufferArtifact('a', big.subarray(0, 200))));

  const magics: [string, Buffer][] = [
    ['xz', Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 0, 4])],
    ['lz4', Buffer.from([0x04, 0x22, 0x4d, 0x18, 0x64, 0x40, 0xa7])],
    ['bzip2', Buffer.from('BZh91AY&SY\x00\x00', 'latin1')],
    ['lzma', Buffer.from([0x5d, 0, 0, 0x40, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0])],
  ];
  for (const [name, bytes] of magics) {
    const finding = await detectPickle(bufferArtifact('m.bin', bytes));
    assert.match(
      finding?.kind ?? '',
      new RegExp(`^${name}-compressed data \\(cannot be inspected`),
      name,
    );
  }
  assert.deepEqual(
    await detectPickle(bufferArtifact('m', Buffer.from('ZF0x1d2                x\x9c', 'latin1'))),
    {
      kind: 'joblib file (legacy zlib format)',
    },
  );
});

/** A stored (uncompressed) ZIP archive; zip64 writes the zip64 records and 0xffff markers. */
function zip(entries: readonly string[], zip64 = false): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const name of entries) {
    const nameBytes = Buffer.from(name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length;
  }
  const directory = Buffer.concat(centrals);
  const tail: Buffer[] = [];
  if (zip64) {
    const record = Buffer.alloc(56);
    record.writeUInt32LE(0x06064b50, 0);
    record.writeBigUInt64LE(44n, 4);
    record.writeBigUInt64LE(BigInt(entries.length), 24);
    record.writeBigUInt64LE(BigInt(entries.length), 32);
    record.writeBigUInt64LE(BigInt(directory.length), 40);
    record.writeBigUInt64LE(BigInt(offset), 48);
    const locator = Buffer.alloc(20);
    locator.writeUInt32LE(0x07064b50, 0);
    locator.writeBigUInt64LE(BigInt(offset + directory.length), 8);
    locator.writeUInt32LE(1, 16);
    tail.push(record, locator);
  }
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(zip64 ? 0xffff : entries.length, 8);
  eocd.writeUInt16LE(zip64 ? 0xffff : entries.length, 10);
  eocd.writeUInt32LE(zip64 ? 0xffffffff : directory.length, 12);
  eocd.writeUInt32LE(zip64 ? 0xffffffff : offset, 16);
  return Buffer.concat([...locals, directory, ...tail, eocd]);
}

void test('ZIP archives: listed from the end, zip64 included; unreadable ones are refused', async () => {
  const torch = ['archive/data.pkl', 'archive/data/0', 'archive/version'];
  for (const zip64 of [false, true]) {
    const listing = await readZipDirectory(bufferArtifact('a.zip', zip(torch, zip64)));
    assert.deepEqual(listing, { ok: true, entries: torch, zip64 });
    assert.deepEqual(await detectPickle(bufferArtifact('model.bin', zip(torch, zip64))), {
      kind: 'PyTorch zip checkpoint (contains archive/data.pkl)',
    });
  }
  assert.deepEqual(await detectPickle(bufferArtifact('a.zip', zip(['x/model.joblib']))), {
    kind: 'ZIP archive containing a pickle (x/model.joblib)',
  });
  assert.equal(
    await detectPickle(bufferArtifact('a.zip', zip(['README.md', 'weights.npy']))),
    null,
  );
  const headless = zip(torch).subarray(0, 60);
  assert.match(
    (await detectPickle(bufferArtifact('a.zip', headless)))?.kind ?? '',
    /^ZIP archive whose entries cannot be listed \(no end-of-central-directory record\)/,
  );
  const real = await readZipDirectory(await fixture('weights.pt'));
  assert.ok(real.ok && real.entries.includes('weights/version'));
});

void test('findPickle names the first pickle in an artifact', async () => {
  const folder: ArtifactFile[] = await fixtureFolder('tiny-llm');
  assert.equal(await findPickle(folder), null);
  const withBin = [...folder, await fixture('pytorch_model.bin')];
  assert.deepEqual(await findPickle(withBin), {
    path: 'pytorch_model.bin',
    kind: 'PyTorch zip checkpoint (contains pytorch_model/data.pkl)',
  });
  assert.deepEqual(
    await findPickle([bufferArtifact('extra/model.pkl', Buffer.from('not even a pickle'))]),
    {
      path: 'extra/model.pkl',
      kind: 'Python pickle (by its .pkl name)',
    },
  );
});

test('pickles that hide: trailing bytes after STOP, PROTO 0/1, a long string first, npy dtype O', async () => {
  // GLOBAL os.system, a string, REDUCE: what running code takes. Then STOP.
  const p0 = Buffer.from("cos\nsystem\n(S'echo pwned'\ntR.", 'latin1');
  const cases: [string, Buffer][] = [
    // Python ignores whatever follows STOP.
    ['protocol 0, then trailing bytes', Buffer.concat([p0, Buffer.from('trailing data')])],
    // PROTO 1 is accepted by Python (any version up to its highest).
    [
      'PROTO 1, protocol 1 body, then a byte',
      Buffer.concat([Buffer.from([0x80, 0x01]), p0, Buffer.from('x')]),
    ],
    // A 100 KB BINSTRING (T, int32 length) first: the STOP is far past the first window.
    [
      'a long protocol 1 string before the call',
      Buffer.concat([
        Buffer.from('(T', 'latin1'),
        Buffer.from([0xa0, 0x86, 0x01, 0x00]), // 100,000
        Buffer.alloc(100_000, 0x41),
        Buffer.from('0', 'latin1'), // POP it
        p0,
        Buffer.from('more'),
      ]),
    ],
  ];
  for (const [what, bytes] of cases) {
    const finding = await detectPickle(bufferArtifact('model.bin', bytes));
    assert.ok(
      finding !== null && /pickle/i.test(finding.kind),
      `${what}: ${JSON.stringify(finding)}`,
    );
  }
  // NumPy: dtype 'O' without the '|' byte-order mark is an object array too.
  const header = "{'descr': 'O', 'fortran_order': False, 'shape': (1,), }";
  const npy = Buffer.concat([
    Buffer.from('\x93NUMPY\x01\x00', 'latin1'),
    Buffer.from([header.length, 0]),
    Buffer.from(header, 'latin1'),
  ]);
  const finding = await detectPickle(bufferArtifact('weights.npy', npy));
  assert.match(finding?.kind ?? '', /NumPy object array/);
});
