#!/usr/bin/env node
// Runs every test/**/*.test.ts with node's built-in runner. Node 20 does not expand globs,
// so we list the files here. Extra arguments are passed to `node --test` (e.g. a file list
// or --test-name-pattern=...).
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;

function collect(dir) {
  const out = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...collect(p));
    else if (name.endsWith('.test.ts')) out.push(relative(root, p));
  }
  return out;
}

const args = process.argv.slice(2);
const explicitFiles = args.filter((a) => !a.startsWith('-'));
const flags = args.filter((a) => a.startsWith('-'));
const files = explicitFiles.length > 0 ? explicitFiles : collect(join(root, 'test'));
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', ...flags, ...files],
  // bin/kiln.js runs the sources, not dist/ (which may be older or newer than what is tested).
  { cwd: root, stdio: 'inherit', env: { ...process.env, KILN_FROM_SOURCE: '1' } },
);
process.exit(result.status ?? 1);
