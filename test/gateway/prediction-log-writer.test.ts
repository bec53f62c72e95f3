import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import {
  PredictionLogWriter,
  type PredictionLogItem,
  type PredictionLogOutcome,
} from '../../src/gateway/prediction-log-writer.ts';
import type { PredictionLogConfig } from '../../src/store/observability-config.ts';

const sha = (text: string): string => `sha256:${createHash('sha256').update(text).digest('hex')}`;

function harness(capacity?: number) {
  const counts = new Map<string, number>();
  const unmatched: string[] = [];
  return {
    counts,
    unmatched,
    options: (dir: string) => ({
      dir,
      ...(capacity === undefined ? {} : { capacity }),
      count: (endpoint: string, outcome: PredictionLogOutcome, records = 1) =>
        counts.set(`${endpoint} ${outcome}`, (counts.get(`${endpoint} ${outcome}`) ?? 0) + records),
      unmatched: (endpoint: string, field: string) => unmatched.push(`${endpoint} ${field}`),
      warn: () => undefined,
    }),
  };
}

function item(
  requestId: string,
  config: PredictionLogConfig,
  ssn = '123-45-6789',
): PredictionLogItem {
  const request = {
    inputs: [
      { name: 'ssn', datatype: 'BYTES', shape: [1], data: [ssn] },
      { name: 'email', datatype: 'BYTES', shape: [1], data: ['carol@example.com'] },
      { name: 'age', datatype: 'FP32', shape: [1], data: [41] },
    ],
  };
  const answer = { outputs: [{ name: 'score', datatype: 'FP32', shape: [1], data: [0.75] }] };
  return {
    endpoint: 'fraud',
    model: 'fraud-model',
    version: 3,
    requestId,
    status: 200,
    latencyMs: 1.25,
    timeMs: Date.UTC(2026, 0, 1),
    slice: 'de',
    request: Buffer.from(JSON.stringify(request)),
    answer: Buffer.from(JSON.stringify(answer)),
    config,
    features: null,
  };
}

async function allLines(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).sort();
  const lines: string[] = [];
  for (const name of names) {
    const text = await readFile(join(dir, name), 'utf8');
    lines.push(...text.split('\n').filter((l) => l !== ''));
  }
  return lines;
}

test('a dropped or hashed field never reaches the log file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-plog-'));
  try {
    const h = harness();
    const writer = new PredictionLogWriter(h.options(dir));
    const config: PredictionLogConfig = {
      sampleRate: 1,
      redact: [
        { field: 'ssn', action: 'drop' },
        { field: 'email', action: 'hash' },
        { field: 'colour', action: 'drop' },
      ],
      maxFileBytes: 1 << 20,
      maxFiles: 2,
    };
    for (let i = 0; i < 5; i++) writer.offer(item(`r${i}`, config));
    await writer.close();
    const files = await readdir(join(dir, 'fraud'));
    assert.deepEqual(files, ['predictions-000001.jsonl']);
    const raw = await readFile(join(dir, 'fraud', files[0]!), 'utf8');
    assert.ok(!raw.includes('123-45-6789'), 'the dropped value is not in the file');
    assert.ok(!raw.includes('carol@example.com'), 'the hashed value is not in the file');
    const lines = raw
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines.length, 5);
    const first = lines[0]!;
    assert.equal(first.requestId, 'r0');
    assert.equal(first.version, 3);
    assert.equal(first.slice, 'de');
    assert.equal(first.latencyMs, 1.25);
    assert.deepEqual(first.inputs, [
      { name: 'email', datatype: 'BYTES', shape: [1], data: [sha('carol@example.com')] },
      { name: 'age', datatype: 'FP32', shape: [1], data: [41] },
    ]);
    assert.deepEqual(first.outputs, [
      { name: 'score', datatype: 'FP32', shape: [1], data: [0.75] },
    ]);
    assert.equal(h.counts.get('fraud written'), 5);
    // The rule naming nothing is reported per record.
    assert.equal(h.unmatched.filter((u) => u === 'fraud colour').length, 5);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('rotation keeps at most maxFiles files, each within maxFileBytes, newest last', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-plog-'));
  try {
    const h = harness();
    const writer = new PredictionLogWriter(h.options(dir));
    const config: PredictionLogConfig = {
      sampleRate: 1,
      redact: [],
      maxFileBytes: 4096,
      maxFiles: 3,
    };
    const total = 300;
    for (let i = 0; i < total; i++) {
      writer.offer(item(`r${String(i).padStart(4, '0')}`, config));
      if (i % 50 === 49) await writer.flush();
    }
    await writer.close();
    const names = (await readdir(join(dir, 'fraud'))).sort();
    assert.equal(names.length, 3, `files: ${names.join(', ')}`);
    for (const name of names) {
      assert.ok((await stat(join(dir, 'fraud', name))).size <= 4096, `${name} within the cap`);
    }
    // The files kept are the newest: consecutive numbers, ending with the last record.
    const seqs = names.map((n) => Number(/(\d+)/.exec(n)![1]));
    assert.deepEqual(seqs, [seqs[0]!, seqs[0]! + 1, seqs[0]! + 2]);
    assert.ok(seqs[0]! > 1, 'older files were deleted');
    const lines = await allLines(join(dir, 'fraud'));
    const ids = lines.map((l) => (JSON.parse(l) as { requestId: string }).requestId);
    assert.equal(ids.at(-1), `r${String(total - 1).padStart(4, '0')}`);
    assert.deepEqual(ids, [...ids].sort(), 'in order, none repeated');
    assert.equal(h.counts.get('fraud written'), total);

    // A writer started later on the same folder goes on from the last file.
    const again = new PredictionLogWriter(h.options(dir));
    again.offer(item('later', config));
    await again.close();
    const after = (await readdir(join(dir, 'fraud'))).sort();
    assert.ok(after.length <= 3);
    assert.equal(
      (JSON.parse((await allLines(join(dir, 'fraud'))).at(-1)!) as { requestId: string }).requestId,
      'later',
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a full queue drops and counts at once, never waits', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-plog-'));
  try {
    const h = harness(4);
    const writer = new PredictionLogWriter(h.options(dir));
    const config: PredictionLogConfig = {
      sampleRate: 1,
      redact: [],
      maxFileBytes: 1 << 20,
      maxFiles: 2,
    };
    // All offered in one synchronous turn: nothing can drain meanwhile, so exactly the
    // capacity is queued and every other offer returns false at once.
    const accepted = Array.from({ length: 50 }, (_, i) => writer.offer(item(`r${i}`, config)));
    assert.equal(accepted.filter(Boolean).length, 4);
    assert.deepEqual(accepted.slice(0, 4), [true, true, true, true]);
    assert.equal(writer.queued, 4);
    assert.equal(h.counts.get('fraud dropped'), 46);
    await writer.close();
    assert.equal(h.counts.get('fraud written'), 4);
    assert.equal((await allLines(join(dir, 'fraud'))).length, 4);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a record larger than a whole file is dropped, not written past the cap', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-plog-'));
  try {
    const h = harness();
    const writer = new PredictionLogWriter(h.options(dir));
    const config: PredictionLogConfig = {
      sampleRate: 1,
      redact: [],
      maxFileBytes: 4096,
      maxFiles: 2,
    };
    writer.offer(item('big', config, 'x'.repeat(5000)));
    writer.offer(item('small', config));
    await writer.close();
    assert.equal(h.counts.get('fraud too-large'), 1);
    assert.equal(h.counts.get('fraud written'), 1);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
