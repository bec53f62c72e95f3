// The gateway as a detached process: it outlives the GatewayProcess that started it (as it
// outlives a `kiln up` killed outright), finds the control plane through the URL file, and a
// later GatewayProcess on the same state folder adopts it when it listens where asked — or
// stops it and lets a new one start when it does not.

import { after, test } from 'node:test';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isRunning } from '../../src/core/process-identity.ts';
import { GatewayProcess } from '../../src/control/gateway-process.ts';
import { readGatewayRecord } from '../../src/gateway/gateway-record.ts';
import { backoffResetAfterMs } from '../../src/control/replica-plan.ts';
import { FakeClock, tempDir } from '../helpers/temp-dir.ts';
import { until } from '../helpers/until.ts';

async function setup() {
  const dir = await tempDir();
  const stateDir = join(dir, 'gateway');
  const controlUrlFile = join(dir, 'platform.url');
  // No control plane: the gateway serves (nothing) and keeps polling.
  await writeFile(controlUrlFile, 'http://127.0.0.1:9\n');
  const make = (port: number) =>
    new GatewayProcess({
      controlUrl: 'http://127.0.0.1:9',
      controlToken: null,
      host: '127.0.0.1',
      port,
      stateDir,
      controlUrlFile,
    });
  return { stateDir, controlUrlFile, make };
}

const gatewayEntry = fileURLToPath(new URL('../../src/gateway/main.ts', import.meta.url));

/** A gateway as `kiln up` starts it, whose platform is gone: nothing supervises it. */
async function leftOver(stateDir: string, controlUrlFile: string) {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      gatewayEntry,
      '--control-url-file',
      controlUrlFile,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--state-dir',
      stateDir,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  after(() => child.kill('SIGKILL'));
  await new Promise((resolve) => createInterface({ input: child.stdout }).once('line', resolve));
  const record = readGatewayRecord(stateDir);
  assert.ok(record !== null);
  assert.equal(record.process.pid, child.pid);
  return record;
}

test('detached, the gateway logs to its folder and records itself until it stops', async () => {
  const { stateDir, make } = await setup();
  const gateway = make(0);
  const url = await gateway.start();
  const record = readGatewayRecord(stateDir);
  assert.deepEqual(
    [record?.url, record?.host, record?.process.pid],
    [url, '127.0.0.1', gateway.pid],
  );
  assert.ok(existsSync(join(stateDir, 'gateway.log')));
  await gateway.stop();
  assert.equal(record !== null && isRunning(record.process), false);
  assert.equal(readGatewayRecord(stateDir), null);
});

test('a gateway left running is adopted where it listens, and stopped by its adopter', async () => {
  const { stateDir, controlUrlFile, make } = await setup();
  const record = await leftOver(stateDir, controlUrlFile);
  // A restarted platform asking for its port, or for any.
  const adopter = make(Number(new URL(record.url).port));
  assert.equal(await adopter.adopt(), record.url);
  assert.equal(adopter.pid, record.process.pid);
  // (Two adopters only here: each would start the gateway again if it died unasked.)
  const second = make(0);
  assert.equal(await second.adopt(), record.url);

  await adopter.stop();
  await second.stop();
  assert.equal(isRunning(record.process), false);
  // It removed its record as it stopped: nothing is left to adopt.
  assert.equal(readGatewayRecord(stateDir), null);
  assert.equal(await make(0).adopt(), null);
});

test('a gateway on another port than the one asked is stopped, not adopted', async () => {
  const { stateDir, controlUrlFile, make } = await setup();
  const record = await leftOver(stateDir, controlUrlFile);
  const elsewhere = Number(new URL(record.url).port) === 1 ? 2 : 1;
  assert.equal(await make(elsewhere).adopt(), null);
  await until(() => !isRunning(record.process), 'the old gateway to stop');
});

test('an adopted gateway that dies is started again where it listened', async () => {
  const { stateDir, controlUrlFile, make } = await setup();
  const record = await leftOver(stateDir, controlUrlFile);
  const adopter = make(0);
  assert.equal(await adopter.adopt(), record.url);
  process.kill(record.process.pid, 'SIGKILL');
  await until(
    () => adopter.pid !== null && adopter.pid !== record.process.pid && existsSync(stateDir),
    'a new gateway',
  );
  await until(
    async () => (await fetch(`${record.url}/v2/health/live`).catch(() => null))?.ok === true,
    'the new gateway to answer on the same port',
    50,
  );
  assert.equal(adopter.url, record.url);
  const restarted = readGatewayRecord(stateDir);
  assert.equal(restarted?.process.pid, adopter.pid);
  await adopter.stop();
  assert.equal(restarted !== null && isRunning(restarted.process), false);
});

test('the gateway restart backoff starts over after it served a good while, as a replica does', async (t) => {
  const { stateDir, controlUrlFile } = await setup();
  const clock = new FakeClock();
  const gateway = new GatewayProcess({
    controlUrl: 'http://127.0.0.1:9',
    controlToken: null,
    host: '127.0.0.1',
    port: 0,
    stateDir,
    controlUrlFile,
    clock,
  });
  t.after(() => gateway.stop());
  const url = await gateway.start();
  /** Kills the running gateway outright and waits for the one started in its place. */
  const crash = async (): Promise<void> => {
    const pid = gateway.pid;
    assert.ok(pid !== null);
    process.kill(pid, 'SIGKILL');
    await until(
      () =>
        gateway.pid !== null &&
        gateway.pid !== pid &&
        readGatewayRecord(stateDir)?.process.pid === gateway.pid &&
        // its 'listening' line read: the moment the backoff's reset is counted from
        gateway.serving,
      'the gateway started again',
    );
    assert.equal(gateway.url, url, 'where it listened');
  };
  await crash();
  assert.equal(gateway.restartsInARow, 1);
  await crash(); // a crash loop: the backoff keeps doubling
  assert.equal(gateway.restartsInARow, 2);
  clock.advance(backoffResetAfterMs); // then it served ten minutes
  await crash();
  assert.equal(gateway.restartsInARow, 1);
});
