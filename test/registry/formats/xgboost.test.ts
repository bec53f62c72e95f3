import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bufferArtifact } from '../../../src/registry/formats/buffer-artifact.ts';
import { decodeUbjson, type UbjsonValue } from '../../../src/registry/formats/ubjson.ts';
import { validateXgboost } from '../../../src/registry/formats/xgboost.ts';
import { expected, fixture, fixtureBytes } from './fixtures.ts';

const want = expected.xgboost;

for (const name of ['xgb-binary.json', 'xgb-binary.ubj']) {
  void test(`${name} (Booster.save_model) is accepted with the trainer's numbers`, async () => {
    const result = await validateXgboost([await fixture(name)]);
    assert.ok(result.ok, result.ok ? '' : result.reason);
    assert.deepEqual(result.info, {
      xgboostVersion: want.xgboostVersion.join('.'),
      booster: want.booster,
      objective: want.objective,
      numFeature: want.numFeature,
      numClass: want.numClass,
      numTrees: want.numTrees,
      baseScore: want.baseScore,
      featureNames: want.featureNames,
    });
  });
}

void test('the format is decided by content: a .json name holding UBJSON still validates', async () => {
  const result = await validateXgboost([
    bufferArtifact('model.json', fixtureBytes('xgb-binary.ubj')),
  ]);
  assert.ok(result.ok, result.ok ? '' : result.reason);
});

/** Same document? Typed arrays compare to JSON numbers at float32 precision where float32. */
function sameDocument(json: unknown, ubj: UbjsonValue, at: string): void {
  if (ubj instanceof Float32Array) {
    assert.ok(Array.isArray(json), at);
    assert.deepEqual(Array.from(ubj), (json as number[]).map(Math.fround), at);
  } else if (ArrayBuffer.isView(ubj)) {
    assert.deepEqual(Array.from(ubj as Int32Array, Number), json, at);
  } else if (Array.isArray(ubj)) {
    assert.ok(Array.isArray(json) && json.length === ubj.length, at);
    ubj.forEach((item, i) => sameDocument((json as unknown[])[i], item, `${at}[${i}]`));
  } else if (typeof ubj === 'object' && ubj !== null) {
    assert.deepEqual(Object.keys(ubj).sort(), Object.keys(json as object).sort(), at);
    for (const key of Object.keys(ubj))
      sameDocument((json as Record<string, unknown>)[key], ubj[key] ?? null, `${at}.${key}`);
  } else if (typeof ubj === 'number' && typeof json === 'number') {
    // Scalar floats: UBJSON keeps float32 ('d') where the JSON text has the decimal.
    assert.ok(ubj === json || ubj === Math.fround(json), `${at}: ${ubj} vs ${json}`);
  } else {
    assert.equal(ubj, json, at);
  }
}

void test('UBJSON decoding of the .ubj matches the .json XGBoost wrote for the same booster', () => {
  const json = JSON.parse(fixtureBytes('xgb-binary.json').toString('utf8')) as unknown;
  const ubj = decodeUbjson(fixtureBytes('xgb-binary.ubj'));
  assert.ok(ubj.ok);
  sameDocument(json, ubj.value, '$');
  const trees = (
    ((ubj.value as Record<string, UbjsonValue>)['learner'] as Record<string, UbjsonValue>)[
      'gradient_booster'
    ] as Record<string, Record<string, UbjsonValue[]>>
  )['model']?.['trees'];
  const first = trees?.[0] as Record<string, UbjsonValue>;
  assert.ok(first['split_conditions'] instanceof Float32Array);
  assert.ok(first['left_children'] instanceof Int32Array);
});

void test('JSON that is not an XGBoost model is refused with the missing key', async () => {
  const cases: [string, RegExp][] = [
    ['{"hello": 1}', /model\.json: not an XGBoost model: learner is missing or not an object/],
    ['{"learner": {}, "version": [1,7,4]}', /learner\.gradient_booster\.name is missing/],
    ['[1, 2]', /not an XGBoost JSON or UBJSON model/],
    ['{"learner": ', /model\.json: not valid JSON/],
  ];
  for (const [text, reason] of cases) {
    const result = await validateXgboost([bufferArtifact('model.json', Buffer.from(text))]);
    assert.match(result.ok ? '' : result.reason, reason);
  }
});

type Json = Record<string, unknown>;

/** The fixture's JSON with one value replaced (or removed, for undefined) at `path`. */
function edited(path: readonly string[], value: unknown): Buffer {
  const model = JSON.parse(fixtureBytes('xgb-binary.json').toString('utf8')) as Json;
  let node: Json = model;
  for (const key of path.slice(0, -1)) node = node[key] as Json;
  const last = path[path.length - 1] ?? '';
  if (value === undefined) delete node[last];
  else node[last] = value;
  return Buffer.from(JSON.stringify(model));
}

void test('damaged XGBoost documents are refused with the failing field', async () => {
  const booster = ['learner', 'gradient_booster'];
  const params = ['learner', 'learner_model_param'];
  const tree0 = [...booster, 'model', 'trees', '0'];
  const fixtureJson = JSON.parse(fixtureBytes('xgb-binary.json').toString('utf8')) as {
    learner: { gradient_booster: { model: { trees: { tree_param: { num_nodes: string } }[] } } };
  };
  const numNodes = Number(
    fixtureJson.learner.gradient_booster.model.trees[0]?.tree_param.num_nodes,
  );
  // Node 1 points back at node 0: children in range, but a cycle.
  const tree = fixtureJson.learner.gradient_booster.model.trees[0] as unknown as {
    left_children: number[];
    right_children: number[];
  };
  const cyclicLeft = [...tree.left_children];
  const internal = cyclicLeft.findIndex((child, node) => node > 0 && child !== -1);
  cyclicLeft[internal] = 0;
  const cases: [Buffer, RegExp][] = [
    [
      edited([...booster, 'name'], 'gbforest'),
      /unknown booster 'gbforest' \(expected gbtree, dart or gblinear\)/,
    ],
    [edited(['learner', 'objective', 'name'], undefined), /learner\.objective\.name is missing/],
    [
      edited([...params, 'num_feature'], 'five'),
      /num_feature is missing or not a non-negative integer/,
    ],
    [edited([...params, 'base_score'], 'half'), /base_score 'half' is not a number/],
    [
      edited([...booster, 'model', 'gbtree_model_param', 'num_trees'], '11'),
      /num_trees says 11 but gradient_booster\.model\.trees holds 10/,
    ],
    [edited([...tree0, 'left_children'], [0]), /tree 0 has 1 left_children for \d+ nodes/],
    [
      edited([...tree0, 'split_indices'], Array<number>(numNodes).fill(9)),
      /tree 0 node 0 splits on feature 9, but num_feature is 5/,
    ],
    [edited(['learner', 'feature_names'], ['a']), /feature_names has 1 names but num_feature is 5/],
    [edited(['version'], undefined), /version is missing or not a list of numbers/],
    [edited([...tree0, 'left_children'], cyclicLeft), /tree 0: node 0 is reached twice/],
  ];
  for (const [bytes, reason] of cases) {
    const result = await validateXgboost([bufferArtifact('model.json', bytes)]);
    assert.match(result.ok ? '' : result.reason, reason);
    assert.equal(result.ok ? '' : result.path, 'model.json');
  }
});

void test('XGBoost 3 vector base_score and dart/gblinear boosters', async () => {
  const vector = await validateXgboost([
    bufferArtifact('m.json', edited(['learner', 'learner_model_param', 'base_score'], '[5E-1]')),
  ]);
  assert.ok(vector.ok && vector.info['baseScore'] === 0.5);
  const model = JSON.parse(fixtureBytes('xgb-binary.json').toString('utf8')) as Json;
  const learner = model['learner'] as Json;
  const gbtree = learner['gradient_booster'] as Json;
  learner['gradient_booster'] = { name: 'dart', gbtree, weight_drop: [] };
  const dart = await validateXgboost([
    bufferArtifact('m.json', Buffer.from(JSON.stringify(model))),
  ]);
  assert.ok(dart.ok && dart.info['numTrees'] === 10 && dart.info['booster'] === 'dart');
  learner['gradient_booster'] = { name: 'gblinear', model: { weights: [0.1, 0.2] } };
  const linear = await validateXgboost([
    bufferArtifact('m.json', Buffer.from(JSON.stringify(model))),
  ]);
  assert.ok(linear.ok && linear.info['numTrees'] === 0);
});

void test('truncated UBJ is refused with a clear reason', async () => {
  const bytes = fixtureBytes('xgb-binary.ubj');
  const result = await validateXgboost([
    bufferArtifact('model.ubj', bytes.subarray(0, bytes.length - 100)),
  ]);
  assert.match(
    result.ok ? '' : result.reason,
    /^model\.ubj: not valid UBJSON \(data ended.* at byte \d+\)$/,
  );
  for (let cut = 1; cut < bytes.length; cut += 97) {
    const prefix = await validateXgboost([bufferArtifact('model.ubj', bytes.subarray(0, cut))]);
    assert.equal(prefix.ok, false);
  }
});

void test('exactly one .json/.ubj model file; the legacy binary format gets a hint', async () => {
  const none = await validateXgboost([bufferArtifact('model.bst', Buffer.from('binf'))]);
  assert.match(
    none.ok ? '' : none.reason,
    /found none; if model\.bst is XGBoost's legacy binary format, re-save it with booster\.save_model\('model\.ubj'\)/,
  );
  const two = await validateXgboost([
    await fixture('xgb-binary.json'),
    await fixture('xgb-binary.ubj'),
  ]);
  assert.match(two.ok ? '' : two.reason, /found xgb-binary\.json, xgb-binary\.ubj/);
  const tooBig = await validateXgboost([
    { path: 'm.json', size: 300 << 20, read: () => Promise.reject(new Error('not read')) },
  ]);
  assert.match(
    tooBig.ok ? '' : tooBig.reason,
    /m\.json: the XGBoost model is 300 MiB, over the 256 MiB limit/,
  );
});

test('a categorical XGBoost JSON model (bare NaN in split_conditions) is accepted', async () => {
  const { fileArtifact } = await import('../../../src/registry/formats/file-artifact.ts');
  const { validateFormat } = await import('../../../src/registry/formats/validate-format.ts');
  const path = new URL('../../../fixtures/trees/xgb-categorical.json', import.meta.url).pathname;
  const check = await validateFormat('xgboost', [await fileArtifact(path, 'xgb-categorical.json')]);
  assert.equal(check.ok, true, check.ok ? '' : check.reason);
});
