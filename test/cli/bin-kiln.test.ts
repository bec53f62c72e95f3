// bin/kiln.js picks dist/ only while it is fresh (scripts/dist-state.js): run in a copy of
// the layout whose two CLIs say which one ran, with file times set by hand.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { root } from './cli-harness.ts';

const builtAtMs = Date.now() - 60_000;
const before = new Date(builtAtMs - 60_000);
const after = new Date(builtAtMs + 30_000);

/** A checkout: bin/, scripts/, src/ (two modules) and dist/ stamped at builtAtMs. */
async function layout(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'kiln-bin-'));
  for (const file of ['bin/kiln.js', 'scripts/dist-state.js', 'scripts/build.js']) {
    mkdirSync(join(dir, file, '..'), { recursive: true });
    copyFileSync(join(root, file), join(dir, file));
  }
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  writeFileSync(join(dir, 'package.json'), '{"type": "module"}\n');
  for (const name of ['tsconfig.json', 'tsconfig.build.json'])
    writeFileSync(join(dir, name), '{}\n');
  mkdirSync(join(dir, 'src/cli'), { recursive: true });
  mkdirSync(join(dir, 'src/core'), { recursive: true });
  // Type syntax: only tsx can run it.
  writeFileSync(
    join(dir, 'src/cli/main.ts'),
    "const from: string = 'sources';\nconsole.log(from);\n",
  );
  writeFileSync(join(dir, 'src/core/clock.ts'), 'export {};\n');
  mkdirSync(join(dir, 'dist/cli'), { recursive: true });
  writeFileSync(join(dir, 'dist/cli/main.js'), "console.log('dist');\n");
  writeFileSync(join(dir, 'dist/build-stamp.json'), JSON.stringify({ sourcesReadAtMs: builtAtMs }));
  for (const path of [
    'scripts/build.js',
    'tsconfig.json',
    'tsconfig.build.json',
    'src/cli/main.ts',
    'src/core/clock.ts',
    'src/cli',
    'src/core',
    'src',
  ]) {
    utimesSync(join(dir, path), before, before);
  }
  return dir;
}

async function kiln(dir: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const base = { ...process.env };
  delete base['KILN_FROM_SOURCE'];
  const { stdout, stderr } = await promisify(execFile)(
    process.execPath,
    [join(dir, 'bin/kiln.js')],
    { env: { ...base, ...env }, encoding: 'utf8' },
  );
  return `${stdout}${stderr}`;
}

const staleNote =
  'kiln: dist/ is older than src/, running the sources (`npm run build` compiles them)\n';

void test('a fresh dist/ runs; KILN_FROM_SOURCE=1 runs the sources', async () => {
  const dir = await layout();
  try {
    assert.equal(await kiln(dir), 'dist\n');
    assert.equal(await kiln(dir, { KILN_FROM_SOURCE: '1' }), 'sources\n');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

void test('an edited source, an added or removed file, a build input: the sources, said once', async () => {
  const changes: ((dir: string) => void)[] = [
    (dir) => utimesSync(join(dir, 'src/core/clock.ts'), after, after),
    (dir) => utimesSync(join(dir, 'src/core'), after, after), // what adding or removing does
    (dir) => utimesSync(join(dir, 'tsconfig.json'), after, after),
    (dir) => utimesSync(join(dir, 'scripts/build.js'), after, after),
  ];
  for (const change of changes) {
    const dir = await layout();
    try {
      change(dir);
      assert.equal(await kiln(dir), `sources\n${staleNote}`, change.toString());
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
});

void test('no dist/, or one a build left without its stamp: the sources, nothing said', async () => {
  const dir = await layout();
  try {
    rmSync(join(dir, 'dist/build-stamp.json'));
    assert.equal(await kiln(dir), 'sources\n');
    rmSync(join(dir, 'dist'), { recursive: true });
    assert.equal(await kiln(dir), 'sources\n');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
