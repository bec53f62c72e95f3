// `kiln up --gateway-processes N` (issue 16): N outside 1..64, or not a whole number, is a
// usage error before anything starts (no platform, no home touched); startPlatform refuses
// the same counts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cli } from './cli-harness.ts';
import { startPlatform } from '../../src/control/start-platform.ts';

void test('kiln up --gateway-processes refuses 0, 65 and non-integers as usage errors', async (t) => {
  const home = join(await mkdtemp(join(tmpdir(), 'kiln-gwp-')), 'home');
  t.after(() => rm(join(home, '..'), { recursive: true, force: true }));
  const cli = new Cli('http://127.0.0.1:9', home);
  for (const count of ['0', '65', '1.5', 'two', '-1']) {
    const stderr = await cli.fails(
      ['up', '--port', '0', '--gateway-port', '0', '--gateway-processes', count],
      2,
    );
    assert.match(stderr, /--gateway-processes/);
    assert.match(stderr, /expected a whole number from 1 to 64/);
  }
  assert.equal(existsSync(home), false, 'nothing was started');
});

void test('startPlatform refuses a gateway process count outside 1..64', async (t) => {
  const home = join(await mkdtemp(join(tmpdir(), 'kiln-gwp-')), 'home');
  t.after(() => rm(join(home, '..'), { recursive: true, force: true }));
  for (const gatewayProcesses of [0, 65, 2.5]) {
    await assert.rejects(
      startPlatform({ home, host: '127.0.0.1', port: 0, dev: true, gatewayProcesses }),
      /invalid gatewayProcesses .*: an integer 1\.\.64/,
    );
  }
  assert.equal(existsSync(home), false, 'nothing was started');
});
