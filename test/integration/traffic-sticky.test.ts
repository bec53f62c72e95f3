// A traffic split through the real gateway and workers (issue 13): a 70/30 policy over the
// fixtures' v1 and v3 with a fixed salt. Keyed requests (the `kiln-user` header, or the
// policy's body path `$.parameters.user`) go to exactly the version the sticky hash gives
// (compileTrafficSplit, what the control plane and every gateway compute), so every user
// keeps its variant — also after the gateway process is killed and restarted. Unkeyed
// requests are drawn at random: over N of them the observed share of v3 lies within 4.5
// standard deviations of 30 % (binomial; a false alarm about once in 300,000 runs).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readGatewayRecord } from '../../src/gateway/gateway-record.ts';
import { compileTrafficSplit } from '../../src/traffic/traffic-split.ts';
import { probeVersion } from '../helpers/model-version.ts';
import { testPlatform } from '../helpers/platform.ts';
import {
  checkSliceAnswer,
  otherRows,
  registerSliceModels,
  sliceRows,
} from '../helpers/slice-models.ts';
import { TrafficApi, waitForGatewayReady } from '../helpers/traffic-api.ts';

const platform = await testPlatform({ gateway: true });
const api = new TrafficApi(platform.url);
const MODEL = 'tm';
const ENDPOINT = 'sticky';
const SALT = 'sticky-e2e';
const USERS = 400;
const UNKEYED = 1000;
await registerSliceModels(platform.url, MODEL);

const versions = [
  { model: MODEL, version: 1, weight: 70 },
  { model: MODEL, version: 3, weight: 30 },
];
const compiled = compileTrafficSplit({ endpoint: ENDPOINT, salt: SALT, versions });
assert.ok(compiled.ok);
const split = compiled.split;

/** User i's request: a non-de row (v1 and v3 agree there), the key in a header or the body. */
function userRequest(i: number): { body: string; headers: Record<string, string>; row: number } {
  const user = `user-${i}@example.com`;
  const row = otherRows[i % otherRows.length] ?? 1;
  const fixture = sliceRows[row];
  assert.ok(fixture !== undefined);
  const inBody = i % 2 === 0;
  const body = JSON.stringify({
    parameters: inBody ? { country: fixture.slice, user } : { country: fixture.slice },
    inputs: [{ name: 'x', shape: [1, 2], datatype: 'FP32', data: fixture.x }],
  });
  return { body, headers: inBody ? {} : { 'kiln-user': user }, row };
}

/** Every user once; returns the version that answered each, checking outputs and the pick. */
async function askEveryUser(): Promise<number[]> {
  const served: number[] = [];
  for (let i = 0; i < USERS; i++) {
    const { body, headers, row } = userRequest(i);
    const answer = await probeVersion(platform.gatewayUrl, ENDPOINT, body, headers);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.model, MODEL);
    const problem = checkSliceAnswer({ ...answer, tag: row });
    assert.equal(problem, null, `user ${i}: ${problem}`);
    assert.equal(
      answer.version,
      split.pick(`user-${i}@example.com`).version,
      `user ${i} is on the version its sticky hash gives`,
    );
    served.push(answer.version ?? 0);
  }
  return served;
}

test('users keep their variant, across a gateway restart; unkeyed requests split within bounds', async () => {
  await api.deploy(ENDPOINT, MODEL, 1);
  await waitForGatewayReady(platform.gatewayUrl, ENDPOINT);
  await api.setPolicy(ENDPOINT, versions, {
    salt: SALT,
    keyPath: '$.parameters.user',
    reason: 'e2e: sticky split',
  });
  // Applied once a user the hash puts on v3 is answered by v3 (the gateway polls snapshots).
  const onV3 = Array.from({ length: USERS }, (_, i) => i).find(
    (i) => split.pick(`user-${i}@example.com`).version === 3,
  );
  assert.ok(onV3 !== undefined);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { body, headers } = userRequest(onV3);
    const answer = await probeVersion(platform.gatewayUrl, ENDPOINT, body, headers);
    if (answer.version === 3) break;
    assert.ok(Date.now() < deadline, 'the policy never reached the gateway');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  const before = await askEveryUser();
  const onThree = before.filter((v) => v === 3).length;
  console.log(`keyed: ${onThree} of ${USERS} users on v3 (weight 30 %)`);

  // Kill the gateway outright; its supervisor starts a fresh process on the same port.
  const stateDir = join(platform.home, 'gateway');
  const first = readGatewayRecord(stateDir);
  assert.ok(first !== null);
  process.kill(first.process.pid, 'SIGKILL');
  const restartDeadline = Date.now() + 120_000;
  for (;;) {
    const record = readGatewayRecord(stateDir);
    if (record !== null && record.process.pid !== first.process.pid) {
      try {
        const ready = await fetch(`${platform.gatewayUrl}/v2/models/${ENDPOINT}/ready`);
        await ready.arrayBuffer();
        if (ready.status === 200) break;
      } catch {
        // not listening yet
      }
    }
    assert.ok(Date.now() < restartDeadline, 'the gateway did not come back');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const after = await askEveryUser();
  assert.deepEqual(after, before, 'every user keeps its variant in the fresh gateway process');

  let v3 = 0;
  for (let i = 0; i < UNKEYED; i++) {
    const row = otherRows[i % otherRows.length] ?? 1;
    const fixture = sliceRows[row];
    assert.ok(fixture !== undefined);
    const body = JSON.stringify({
      inputs: [{ name: 'x', shape: [1, 2], datatype: 'FP32', data: fixture.x }],
    });
    const answer = await probeVersion(platform.gatewayUrl, ENDPOINT, body);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(checkSliceAnswer({ ...answer, tag: row }), null);
    if (answer.version === 3) v3++;
  }
  const sd = Math.sqrt((0.3 * 0.7) / UNKEYED);
  const share = v3 / UNKEYED;
  console.log(
    `unkeyed: ${v3} of ${UNKEYED} on v3 (${(share * 100).toFixed(1)} %, 30 ± ${(4.5 * sd * 100).toFixed(1)})`,
  );
  assert.ok(Math.abs(share - 0.3) <= 4.5 * sd, `v3 took ${share} of unkeyed requests`);
});
