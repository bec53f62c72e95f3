// `kiln up --otlp URL`: a collector address that cannot be one is a usage error, before
// anything starts (no platform, no home touched).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cli } from './cli-harness.ts';

void test('kiln up --otlp refuses an address that is not an http(s) URL, naming it', async (t) => {
  const home = join(await mkdtemp(join(tmpdir(), 'kiln-otlp-')), 'home');
  t.after(() => rm(join(home, '..'), { recursive: true, force: true }));
  const cli = new Cli('http://127.0.0.1:9', home);
  const stderr = await cli.fails(
    ['up', '--port', '0', '--gateway-port', '0', '--otlp', 'collector:4318'],
    2,
  );
  assert.match(stderr, /invalid --otlp collector:4318: expected an http:\/\/ or https:\/\/ URL/);
  const notUrl = await cli.fails(
    ['up', '--port', '0', '--gateway-port', '0', '--otlp', 'not a url'],
    2,
  );
  assert.match(notUrl, /invalid --otlp not a url: not a URL/);
  assert.equal(existsSync(home), false, 'nothing was started');
});
