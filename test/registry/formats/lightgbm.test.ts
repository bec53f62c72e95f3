import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bufferArtifact } from '../../../src/registry/formats/buffer-artifact.ts';
import { fileArtifact } from '../../../src/registry/formats/file-artifact.ts';
import { validateLightgbm } from '../../../src/registry/formats/lightgbm.ts';
import { lightgbmFixtures, lightgbmSkip } from './fixtures.ts';

// Trees counted in each file (grep -c '^Tree='), classes and features from their headers.
const models = [
  {
    file: 'lgmulticlass.model',
    numTrees: 50,
    numClass: 5,
    numFeatures: 28,
    objective: 'multiclass num_class:5',
    version: 'v2',
  },
  {
    file: 'lg_kddcup99.model',
    numTrees: 130,
    numClass: 13,
    numFeatures: 41,
    objective: 'multiclass num_class:13',
    version: 'v2',
  },
  {
    file: 'lg_rf_iris.model',
    numTrees: 30,
    numClass: 1,
    numFeatures: 4,
    objective: 'binary sigmoid:1',
    version: 'v2',
  },
  {
    file: 'genlin_fmtp_poisson_Frequency.model',
    numTrees: 100,
    numClass: 1,
    numFeatures: 9,
    objective: 'poisson',
    version: 'v3',
  },
  {
    file: 'lg_breast_cancer.txt',
    numTrees: 39,
    numClass: 1,
    numFeatures: 30,
    objective: 'binary sigmoid:1',
    version: 'v3',
  },
  {
    file: 'model_simple.txt',
    numTrees: 2,
    numClass: 1,
    numFeatures: 2,
    objective: 'binary sigmoid:1',
    version: 'v2',
  },
];

const read = (name: string): Buffer => readFileSync(join(lightgbmFixtures, name));
const text = (name: string): string => read(name).toString('utf8');
const check = (content: string | Buffer, path = 'model.txt') =>
  validateLightgbm([
    bufferArtifact(path, typeof content === 'string' ? Buffer.from(content) : content),
  ]);
const reasonOf = (result: Awaited<ReturnType<typeof check>>): string =>
  result.ok ? '' : result.reason;

for (const model of models) {
  void test(`${model.file} (saved by LightGBM) is accepted`, { skip: lightgbmSkip }, async () => {
    const result = await validateLightgbm([
      await fileArtifact(join(lightgbmFixtures, model.file), model.file),
    ]);
    assert.ok(result.ok, reasonOf(result));
    const { featureNames, ...info } = result.info;
    assert.deepEqual(info, {
      version: model.version,
      numClass: model.numClass,
      numFeatures: model.numFeatures,
      objective: model.objective,
      numTrees: model.numTrees,
    });
    assert.equal((featureNames as string[]).length, model.numFeatures);
  });
}

void test('chunk edges do not change the result', { skip: lightgbmSkip }, async () => {
  const file = await fileArtifact(join(lightgbmFixtures, 'lg_rf_iris.model'), 'model.txt');
  const reference = await validateLightgbm([file]);
  for (const scanChunkBytes of [1, 5, 6, 7, 64, 255, 256, 1000, 4096]) {
    assert.deepEqual(
      await validateLightgbm([file], { scanChunkBytes }),
      reference,
      `chunk ${scanChunkBytes}`,
    );
  }
  const edited = text('lg_rf_iris.model').replace('\nTree=7\n', '\nTree=8\n');
  for (const scanChunkBytes of [1, 6, 100]) {
    const result = await validateLightgbm([bufferArtifact('m.txt', Buffer.from(edited))], {
      scanChunkBytes,
    });
    assert.match(reasonOf(result), /found 'Tree=8' where Tree=7 was expected/);
  }
});

void test('bare tree sections (no model header) are refused', { skip: lightgbmSkip }, async () => {
  for (const name of ['tree_1leaf.txt', 'tree_2leaves.txt', 'tree_3leaves.txt']) {
    const result = await check(read(name), name);
    assert.equal(
      reasonOf(result),
      `${name}: not a LightGBM text model: the first line must be 'tree'`,
    );
  }
});

void test('a missing header field is named', { skip: lightgbmSkip }, async () => {
  const original = text('model_simple.txt');
  const cases: [RegExp, RegExp][] = [
    [/^num_class=1\n/m, /model\.txt: not a LightGBM model: the num_class= line is missing/],
    [/^version=v2\n/m, /the version= line is missing/],
    [/^max_feature_idx=1\n/m, /the max_feature_idx= line is missing/],
    [
      /^feature_names=X1 X2$/m,
      /feature_names lists 1 names but max_feature_idx=1 means 2 features/,
    ],
  ];
  for (const [line, reason] of cases) {
    const broken = original.replace(
      line,
      line.source.includes('feature_names') ? 'feature_names=X1' : '',
    );
    assert.notEqual(broken, original);
    assert.match(reasonOf(await check(broken)), reason);
  }
});

void test(
  'no objective= line (custom objective) is allowed and reported as null',
  { skip: lightgbmSkip },
  async () => {
    const result = await check(text('model_simple.txt').replace(/^objective=.*\n/m, ''));
    assert.ok(result.ok, reasonOf(result));
    assert.equal(result.info['objective'], null);
  },
);

void test('truncated or edited tree sections are caught', { skip: lightgbmSkip }, async () => {
  const original = text('lg_breast_cancer.txt');
  const half = await check(original.slice(0, original.length / 2));
  assert.equal(
    reasonOf(half),
    "model.txt: the 'end of trees' line is missing; the file looks truncated",
  );

  const edited = original.replace('\nshrinkage=1\n', '\nshrinkage=1.0\n');
  assert.notEqual(edited, original);
  assert.match(
    reasonOf(await check(edited)),
    /tree_sizes puts Tree=1 at byte \d+ but it is at byte \d+; the trees were edited or damaged/,
  );

  const fewerSizes = original.replace(/^(tree_sizes=.*) \d+$/m, '$1');
  assert.match(
    reasonOf(await check(fewerSizes)),
    /tree_sizes lists 38 trees but the file has 39 Tree= sections/,
  );

  const noSizes = await check(original.replace(/^tree_sizes=.*\n/m, ''));
  assert.ok(noSizes.ok && noSizes.info['numTrees'] === 39);

  const cut = original.replace(/\nTree=38\n[\s\S]*?\n\n\n/, '\n');
  assert.match(reasonOf(await check(cut)), /tree_sizes lists 39 trees but the file has 38/);
});

void test('a zero-tree model is valid', async () => {
  const model =
    'tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\nmax_feature_idx=2\nobjective=regression\nfeature_names=a b c\ntree_sizes=\n\nend of trees\n\nparameters:\nend of parameters\n';
  const result = await check(model);
  assert.ok(result.ok, reasonOf(result));
  assert.deepEqual(result.info, {
    version: 'v3',
    numClass: 1,
    numFeatures: 3,
    objective: 'regression',
    featureNames: ['a', 'b', 'c'],
    numTrees: 0,
  });
  const crlf = await check(model.replaceAll('\n', '\r\n'));
  assert.ok(crlf.ok, reasonOf(crlf));
});

void test(
  'the model file is found by content among other files',
  { skip: lightgbmSkip },
  async () => {
    const readme = bufferArtifact('README.md', Buffer.from('# my model\n'));
    const model = bufferArtifact('booster.txt', read('model_simple.txt'));
    const result = await validateLightgbm([readme, model]);
    assert.ok(result.ok && result.info['numTrees'] === 2);
    const none = await validateLightgbm([readme, bufferArtifact('b.txt', Buffer.from('x'))]);
    assert.match(reasonOf(none), /needs exactly one text model file .*found none among 2 files/);
    const two = await validateLightgbm([
      model,
      bufferArtifact('copy.txt', read('model_simple.txt')),
    ]);
    assert.match(reasonOf(two), /found booster\.txt, copy\.txt/);
  },
);

void test('garbage and huge headers are refused', async () => {
  assert.match(reasonOf(await check(Buffer.from([0, 1, 2, 3]))), /the first line must be 'tree'/);
  assert.match(
    reasonOf(await check('tree\nversion=v3\nnum_class=1')),
    /not followed by a blank line/,
  );
});
