// `kiln up --artifacts s3://…`: a bucket that does not exist stops the start with an error
// naming the bucket and why (no crash loop, nothing left running); a setting that cannot be
// an artifact store is a usage error before anything starts.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { s3Server } from '../helpers/s3-server.ts';
import { Cli } from './cli-harness.ts';

const s3 = await s3Server();

void test('kiln up --artifacts names a missing bucket and exits', async (t) => {
  const home = join(await mkdtemp(join(tmpdir(), 'kiln-artifacts-')), 'home');
  t.after(() => rm(join(home, '..'), { recursive: true, force: true }));
  const cli = new Cli('http://127.0.0.1:9', home);
  const up = ['up', '--port', '0', '--gateway-port', '0'];
  const stderr = await cli.fails(
    [...up, '--artifacts', 's3://no-such-bucket/kiln', '--artifacts-endpoint', s3.endpoint],
    1,
  );
  assert.match(
    stderr,
    /^error: the artifact store s3:\/\/no-such-bucket\/kiln\/ cannot be used: bucket no-such-bucket does not exist \(KILN_ARTIFACTS_UNAVAILABLE\)\nhint: check --artifacts/,
  );
  // The same from the environment (KILN_ARTIFACTS_URL, AWS_ENDPOINT_URL).
  const fromEnv = await cli.fails(up, 1, {
    KILN_ARTIFACTS_URL: 's3://no-such-bucket',
    AWS_ENDPOINT_URL: s3.endpoint,
  });
  assert.match(fromEnv, /bucket no-such-bucket does not exist \(KILN_ARTIFACTS_UNAVAILABLE\)/);

  const bad = await cli.fails([...up, '--artifacts', 'gs://bucket'], 2);
  assert.match(bad, /invalid --artifacts gs:\/\/bucket: expected s3:\/\/BUCKET/);
  const badEnv = await cli.fails(up, 2, { KILN_ARTIFACTS_URL: 's3://Not_A_Bucket' });
  assert.match(badEnv, /invalid KILN_ARTIFACTS_URL s3:\/\/Not_A_Bucket: "Not_A_Bucket" is not/);
  const endpointAlone = await cli.fails([...up, '--artifacts-endpoint', s3.endpoint], 2);
  assert.match(endpointAlone, /--artifacts-endpoint needs s3:\/\/ artifacts/);
  assert.ok(!existsSync(join(home, 'run', 'platform.url')), 'no platform was started');
});
