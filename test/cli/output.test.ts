import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  cellText,
  humanSize,
  inlineMap,
  jsonText,
  renderKeyValues,
  renderTable,
  shortTime,
} from '../../src/cli/output.ts';
import { createProgress, progressLine, silentProgress } from '../../src/cli/progress.ts';

void test('tables align columns under upper-case headers', () => {
  const text = renderTable(
    ['name', { header: 'versions', align: 'right' }, 'aliases'],
    [
      ['iris', 12, 'champion→3'],
      ['a-much-longer-name', 1, null],
    ],
  );
  assert.equal(
    text,
    [
      'NAME                VERSIONS  ALIASES',
      'iris                      12  champion→3',
      'a-much-longer-name         1  -',
      '',
    ].join('\n'),
  );
});

void test('a table with no rows is just the header', () => {
  assert.equal(renderTable(['a', 'bb'], []), 'A  BB\n');
});

void test('key: value blocks align values and skip undefined', () => {
  assert.equal(
    renderKeyValues([
      ['name', 'iris'],
      ['skipped', undefined],
      ['latest version', 3],
      ['aliases', ''],
    ]),
    'name:           iris\nlatest version: 3\naliases:        -\n',
  );
  assert.equal(cellText(null), '-');
  assert.equal(cellText(0), '0');
});

void test('human sizes use binary units with three significant digits', () => {
  assert.equal(humanSize(0), '0 B');
  assert.equal(humanSize(1023), '1023 B');
  assert.equal(humanSize(1024), '1.00 KiB');
  assert.equal(humanSize(1536), '1.50 KiB');
  assert.equal(humanSize(12.34 * 1024 * 1024), '12.3 MiB');
  assert.equal(humanSize(512 * 1024 * 1024), '512 MiB');
  assert.equal(humanSize(5 * 1024 ** 3), '5.00 GiB');
});

void test('times are shown as UTC date and time', () => {
  assert.equal(shortTime('2026-01-31T14:05:09.123Z'), '2026-01-31 14:05:09');
  assert.equal(shortTime(null), '-');
  assert.equal(shortTime('yesterday'), 'yesterday');
});

void test('inline maps and JSON', () => {
  assert.equal(
    inlineMap({ auc: 0.9, gpu: 'h100', nested: { a: 1 } }),
    'auc=0.9, gpu=h100, nested={"a":1}',
  );
  assert.equal(inlineMap({}), '-');
  assert.equal(jsonText({ a: [1] }), '{\n  "a": [\n    1\n  ]\n}\n');
});

void test('the progress line shows bytes, rate and a bar, fitted to the terminal', () => {
  const mib = 1024 * 1024;
  const line = progressLine('uploading', 12 * mib, 48 * mib, 1500, 100);
  assert.equal(line.length, 99);
  assert.match(line, /^uploading \[#{10}-{30}\] 12\.0 MiB\/48\.0 MiB {2}8\.00 MiB\/s *$/);
  assert.match(progressLine('uploading', 48 * mib, 48 * mib, 1000, 60), /\[#+\]/);
  assert.ok(progressLine('uploading', 0, 48 * mib, 0, 40).length <= 39);
});

void test('the progress bar is drawn only on a TTY, above 4 MiB, unless disabled', () => {
  const writes: string[] = [];
  let clock = 0;
  const fakeStream = (isTTY: boolean): NodeJS.WriteStream =>
    ({
      isTTY,
      columns: 80,
      write: (text: string) => writes.push(text),
    }) as unknown as NodeJS.WriteStream;
  const big = 8 * 1024 * 1024;
  assert.equal(
    createProgress({ enabled: true, totalBytes: big, label: 'up', stream: fakeStream(false) }),
    silentProgress,
  );
  assert.equal(
    createProgress({ enabled: false, totalBytes: big, label: 'up', stream: fakeStream(true) }),
    silentProgress,
  );
  assert.equal(
    createProgress({ enabled: true, totalBytes: 1024, label: 'up', stream: fakeStream(true) }),
    silentProgress,
  );

  const bar = createProgress({
    enabled: true,
    totalBytes: big,
    label: 'up',
    stream: fakeStream(true),
    now: () => clock,
  });
  bar.add(1024); // first draw
  clock = 50;
  bar.add(1024); // within 100 ms: not redrawn
  clock = 1000;
  bar.add(big - 2048);
  bar.finish();
  bar.finish(); // idempotent
  assert.equal(writes.length, 4); // 2 draws + final draw + newline
  assert.ok(writes.slice(0, 3).every((w) => w.startsWith('\r')));
  assert.match(writes[2] ?? '', /8\.00 MiB\/8\.00 MiB {2}8\.00 MiB\/s/);
  assert.equal(writes[3], '\n');
});
