import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bufferArtifact } from '../../../src/registry/formats/buffer-artifact.ts';
import { validateOnnx } from '../../../src/registry/formats/onnx.ts';
import { ProtobufError, ProtobufReader } from '../../../src/registry/formats/protobuf-reader.ts';
import { expected, fixture, fixtureBytes, fixtureFolder, seededBytes } from './fixtures.ts';

// A few protobuf encoders for hand-made messages.
function varint(value: number): Buffer {
  const out: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
  return Buffer.from(out);
}
const intField = (number: number, value: number): Buffer =>
  Buffer.concat([varint(number * 8), varint(value)]);
const bytesField = (number: number, payload: Buffer | string): Buffer => {
  const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
  return Buffer.concat([varint(number * 8 + 2), varint(body.length), body]);
};
const opset = bytesField(8, Buffer.concat([bytesField(1, ''), intField(2, 13)]));
const tensorType = (elemType: number, dims: number[]): Buffer =>
  bytesField(
    1,
    Buffer.concat([
      intField(1, elemType),
      bytesField(
        2,
        Buffer.concat(dims.map((d) => bytesField(1, d < 0 ? bytesField(2, 'n') : intField(1, d)))),
      ),
    ]),
  );
const valueInfo = (number: number, name: string, type: Buffer): Buffer =>
  bytesField(number, Buffer.concat([bytesField(1, name), bytesField(2, type)]));

async function check(bytes: Buffer, path = 'model.onnx') {
  return validateOnnx([bufferArtifact(path, bytes)]);
}

for (const name of ['mlp.onnx', 'helper.onnx'] as const) {
  void test(`${name} (made by ${name === 'mlp.onnx' ? 'torch.onnx.export' : 'onnx.helper'}) is accepted with its signature`, async () => {
    const result = await validateOnnx([await fixture(name)]);
    assert.ok(result.ok, result.ok ? '' : result.reason);
    const want = expected[name];
    assert.deepEqual(result.info, {
      irVersion: want.irVersion,
      opsets: want.opsets,
      producer: want.producer,
      inputs: want.inputs,
      outputs: want.outputs,
    });
  });
}

void test('helper.onnx: an initializer listed among the graph inputs is not an input', async () => {
  const result = await validateOnnx([await fixture('helper.onnx')]);
  assert.ok(result.ok);
  const inputs = result.info['inputs'] as { name: string }[];
  assert.deepEqual(
    inputs.map((i) => i.name),
    ['words', 'x'],
  );
});

void test('external data: the referenced file must be in the artifact', async () => {
  const files = await fixtureFolder('onnx-external');
  const result = await validateOnnx(files);
  assert.ok(result.ok, result.ok ? '' : result.reason);
  assert.deepEqual(result.info['externalData'], expected['onnx-external'].externalFiles);

  const withoutWeights = files.filter((f) => f.path !== 'weights.bin');
  const missing = await validateOnnx(withoutWeights);
  assert.equal(missing.ok, false);
  assert.match(
    missing.ok ? '' : missing.reason,
    /initializer 'bias' stores its data in 'weights.bin', which is not in the artifact/,
  );

  const short = [...withoutWeights, bufferArtifact('weights.bin', Buffer.alloc(4))];
  const tooShort = await validateOnnx(short);
  assert.match(tooShort.ok ? '' : tooShort.reason, /past the end of that 4-byte file/);
});

void test('exactly one .onnx file is required; other files are allowed', async () => {
  const mlp = await fixture('mlp.onnx');
  const none = await validateOnnx([bufferArtifact('README.md', Buffer.from('hi'))]);
  assert.equal(
    none.ok ? '' : none.reason,
    'an ONNX artifact needs exactly one .onnx file; found none',
  );
  const two = await validateOnnx([mlp, await fixture('helper.onnx')]);
  assert.match(two.ok ? '' : two.reason, /exactly one \.onnx file; found mlp\.onnx, helper\.onnx/);
  const extra = await validateOnnx([mlp, bufferArtifact('README.md', Buffer.from('hi'))]);
  assert.ok(extra.ok);
});

void test('truncated ONNX: every prefix of mlp.onnx is refused with a clear reason', async () => {
  const bytes = fixtureBytes('mlp.onnx');
  const half = await check(bytes.subarray(0, Math.floor(bytes.length / 2)));
  assert.equal(half.ok, false);
  assert.match(half.ok ? '' : half.reason, /^model\.onnx: not an ONNX ModelProto: /);
  assert.equal(half.ok ? '' : half.path, 'model.onnx');
  for (let length = 0; length < bytes.length; length += 1) {
    const result = await check(bytes.subarray(0, length));
    assert.equal(result.ok, false, `prefix of ${length} bytes was accepted`);
  }
});

void test('garbage bytes are refused, never thrown or hung on', async () => {
  for (let seed = 1; seed <= 300; seed += 1) {
    const result = await check(seededBytes(seed, 1 + ((seed * 37) % 2000)));
    assert.equal(result.ok, false);
  }
  // Random single-byte corruptions of a real model: either still valid or a clean refusal.
  const bytes = fixtureBytes('mlp.onnx');
  const noise = seededBytes(99, 2000);
  for (let i = 0; i < 1000; i += 1) {
    const copy = Buffer.from(bytes);
    copy[(noise.readUInt16LE(i % 1998) * 7 + i) % copy.length] = noise[i] ?? 0;
    const result = await check(copy);
    assert.equal(typeof result.ok, 'boolean');
  }
});

void test('missing required fields are named', async () => {
  const graph = bytesField(7, Buffer.concat([valueInfo(12, 'y', tensorType(1, [2]))]));
  const cases: [Buffer, RegExp][] = [
    [Buffer.concat([opset, graph]), /field 1 \(ir_version\) is missing/],
    [Buffer.concat([intField(1, 8), opset]), /field 7 \(graph\) is missing/],
    [Buffer.concat([intField(1, 8), graph]), /field 8 \(opset_import\) is missing/],
    [Buffer.concat([intField(1, 8), opset, bytesField(7, '')]), /the graph declares no outputs/],
    [
      Buffer.concat([intField(1, 8), intField(7, 1), opset]),
      /field 7 \(graph\) is varint, expected length-delimited/,
    ],
  ];
  for (const [bytes, reason] of cases) {
    const result = await check(bytes);
    assert.match(result.ok ? '' : result.reason, reason);
  }
  const ok = await check(Buffer.concat([intField(1, 8), opset, graph]));
  assert.ok(ok.ok);
  assert.deepEqual(ok.info['outputs'], [{ name: 'y', datatype: 'FP32', shape: [2] }]);
});

void test('a length field claiming gigabytes is refused without allocating', async () => {
  const huge = Buffer.concat([intField(1, 8), varint(7 * 8 + 2), varint(2 ** 40)]);
  const result = await check(huge);
  assert.match(result.ok ? '' : result.reason, /claims 1099511627776 bytes but only 0 remain/);
  const overlong = Buffer.concat([
    intField(1, 8),
    Buffer.from([0x3a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
  ]);
  const result2 = await check(overlong);
  assert.match(result2.ok ? '' : result2.reason, /varint|claims/);
});

void test('types: symbolic dims are -1, unknown rank is null, non-tensors are marked', async () => {
  const graph = bytesField(
    7,
    Buffer.concat([
      valueInfo(11, 'a', tensorType(7, [-1, 3])),
      valueInfo(11, 'b', bytesField(1, intField(1, 16))), // BF16, no shape
      valueInfo(11, 'c', bytesField(4, bytesField(1, tensorType(1, [])))), // sequence
      valueInfo(12, 'd', tensorType(10, [])),
    ]),
  );
  const result = await check(Buffer.concat([intField(1, 9), opset, graph]));
  assert.ok(result.ok, result.ok ? '' : result.reason);
  assert.deepEqual(result.info['inputs'], [
    { name: 'a', datatype: 'INT64', shape: [-1, 3] },
    { name: 'b', datatype: 'BF16', shape: null },
    { name: 'c', datatype: null, shape: null, kind: 'sequence' },
  ]);
  assert.deepEqual(result.info['outputs'], [{ name: 'd', datatype: 'FP16', shape: [] }]);
});

void test('ProtobufReader gives the same fields with a tiny window as with the default', async () => {
  const file = await fixture('mlp.onnx');
  const collect = async (reader: ProtobufReader) => {
    const out: string[] = [];
    for await (const field of reader.fields(0, file.size)) {
      out.push(`${field.number}:${field.wireType}:${field.start}-${field.end}`);
      if (field.number === 7) {
        for await (const inner of reader.fields(field.start, field.end))
          out.push(`  ${inner.number}:${inner.start}`);
      }
    }
    return out;
  };
  assert.deepEqual(
    await collect(new ProtobufReader(file, 3)),
    await collect(new ProtobufReader(file)),
  );
});

void test('ProtobufReader refuses a message that claims to run past the file', async () => {
  const reader = new ProtobufReader(bufferArtifact('x', Buffer.from([8, 1])));
  await assert.rejects(async () => {
    for await (const field of reader.fields(0, 10)) assert.ok(field);
  }, ProtobufError);
});

void test('a 1 GiB initializer is skipped, not read', async () => {
  // ModelProto { ir_version, opset, graph { initializer { name, raw_data: 1 GiB }, output } }
  const weightBytes = 2 ** 30;
  const rawDataHead = Buffer.concat([varint(9 * 8 + 2), varint(weightBytes)]);
  const tensorBody = Buffer.concat([bytesField(8, 'w'), rawDataHead]);
  const initializerHead = Buffer.concat([
    varint(5 * 8 + 2),
    varint(tensorBody.length + weightBytes),
    tensorBody,
  ]);
  const output = valueInfo(12, 'y', tensorType(1, [1]));
  const graphLength = initializerHead.length + weightBytes + output.length;
  const prefix = Buffer.concat([
    intField(1, 8),
    opset,
    varint(7 * 8 + 2),
    varint(graphLength),
    initializerHead,
  ]);
  const size = prefix.length + weightBytes + output.length;
  let bytesRead = 0;
  const file = {
    path: 'big.onnx',
    size,
    read(offset: number, length: number): Promise<Buffer> {
      // prefix | weightBytes of zeros | output, materialised only for the range asked.
      const out = Buffer.alloc(Math.max(0, Math.min(length, size - offset)));
      bytesRead += out.length;
      prefix.copy(out, 0, Math.min(offset, prefix.length));
      const suffixStart = prefix.length + weightBytes;
      if (offset + out.length > suffixStart) {
        const from = Math.max(offset, suffixStart);
        output.copy(out, from - offset, from - suffixStart);
      }
      return Promise.resolve(out);
    },
  };
  const result = await validateOnnx([file]);
  assert.ok(result.ok, result.ok ? '' : result.reason);
  assert.deepEqual(result.info['outputs'], [{ name: 'y', datatype: 'FP32', shape: [1] }]);
  assert.deepEqual(result.info['inputs'], []);
  assert.ok(bytesRead < 4 << 20, `read ${bytesRead} bytes`);
});
