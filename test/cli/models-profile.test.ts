// `kiln models profile` and `kiln models register --profile` against an in-process platform:
// the xgb-binary-logistic training sample profiled locally, stored, written with --output,
// shown; that file registered with a new version; bad samples, bad files and names the model
// does not have refused with the problem named (and the version left standing).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { VersionProfile } from '../../src/store/profile-records.ts';
import { testPlatform } from '../helpers/platform.ts';
import { tempDir } from '../helpers/temp-dir.ts';
import { Cli, root } from './cli-harness.ts';

const model = join(root, 'fixtures', 'trees', 'xgb-binary-logistic.json');
const sample = join(root, 'fixtures', 'profiles', 'xgb-binary-logistic.train.csv');
const register = ['models', 'register', model, '--name', 'fraud', '--format', 'xgboost'];

test('kiln models profile --data/--output/--from, register --profile, and their refusals', async () => {
  const { url, home } = await testPlatform();
  const cli = new Cli(url, home);
  const dir = await tempDir();
  await cli.ok([...register, '--no-progress']);

  const written = join(dir, 'profile.json');
  const text = await cli.ok([
    'models',
    'profile',
    'fraud:1',
    '--data',
    sample,
    '--outputs',
    'output',
    '--output',
    written,
  ]);
  assert.match(
    text,
    /^wrote .*profile\.json\nprofile: +fraud:1\nrows: +400\nfeatures: +8\noutputs: +1\n/,
  );
  assert.match(text, /\nNAME +SIDE +KIND +PRESENT +MISSING +SUMMARY\n/);
  assert.match(text, /\nf0 +feature +numeric +374 +6\.5% +mean 0\.01582, p50 /);
  assert.match(text, /\noutput +output +numeric +400 +0\.0% +mean /);
  const file = JSON.parse(await readFile(written, 'utf8')) as VersionProfile['profile'];
  const shown = await cli.json<VersionProfile>(['models', 'profile', 'fraud:1']);
  assert.deepEqual(shown.profile, file);
  assert.equal(shown.profile.features['f3']?.kind, 'numeric');

  // The file registers with a new version, and --from stores it on an existing one.
  const registered = await cli.ok([...register, '--profile', written, '--no-progress']);
  assert.match(registered, /registered fraud version 2/);
  assert.match(registered, /profile: +fraud:2\nrows: +400\n/);
  assert.match(
    await cli.ok(['models', 'profile', 'fraud:2', '--from', written]),
    /profile: +fraud:2/,
  );

  // Names the model does not have: the platform refuses, naming them.
  const renamed = join(dir, 'renamed.csv');
  await writeFile(renamed, 'amount,f1\n1,2\n3,4\n');
  const unknown = await cli.fails(['models', 'profile', 'fraud:1', '--data', renamed], 1);
  assert.match(
    unknown,
    /unknown feature amount \(the version has f0, f1, .*\(KILN_PROFILE_INVALID\)/,
  );
  // A bad profile file is refused here, before anything is uploaded or registered.
  const broken = join(dir, 'broken.json');
  await writeFile(broken, JSON.stringify({ ...file, rows: -1 }));
  const refused = await cli.fails([...register, '--profile', broken, '--no-progress'], 1);
  assert.match(refused, /profile file .*broken\.json: rows: must be an integer >= 0, got -1/);
  assert.deepEqual(
    (await cli.json<{ items: unknown[] }>(['models', 'versions', 'fraud'])).items.length,
    2,
    'no version registered for a bad profile file',
  );
  // A file the platform refuses after the version exists: the version stands, the hint says how.
  const foreign = join(dir, 'foreign.json');
  await writeFile(foreign, JSON.stringify({ ...file, features: { amount: file.features['f0'] } }));
  const late = await cli.run([...register, '--profile', foreign, '--no-progress']);
  assert.equal(late.code, 1, late.stderr);
  assert.match(late.stdout, /registered fraud version 3/);
  assert.match(late.stderr, /\(KILN_PROFILE_INVALID\)\n/);
  assert.match(
    late.stderr,
    /hint: version 3 is registered without a profile: fix the file, then `kiln models profile fraud:3 --from .*foreign\.json`/,
  );

  const ragged = join(dir, 'ragged.csv');
  await writeFile(ragged, 'f0,f1\n1\n');
  assert.match(
    await cli.fails(['models', 'profile', 'fraud:1', '--data', ragged], 1),
    /sample .*ragged\.csv: line 2 has 1 fields; the header has 2/,
  );
  assert.match(
    await cli.fails(['models', 'profile', 'fraud:1', '--data', join(dir, 'x.parquet')], 2),
    /cannot tell the format of .*x\.parquet/,
  );
  assert.match(
    await cli.fails(['models', 'profile', 'fraud:1', '--data', sample, '--from', written], 2),
    /give --data SAMPLE or --from PROFILE, not both/,
  );
  assert.match(
    await cli.fails(['models', 'profile', 'fraud:3'], 1),
    /model fraud version 3 has no reference profile \(KILN_PROFILE_NOT_FOUND\)/,
  );
});
