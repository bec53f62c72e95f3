// Which versions an endpoint runs and how its route is built (endpoint-route.ts), from plain
// records and replicas: the stable version keeps the rule from before traffic policies, each
// variant and shadow is described by its own version and replicas, and what a role claims
// never stands in for the stable version.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  endpointRoute,
  endpointVersions,
  expiredWarm,
  keptRevisions,
  revisionOf,
  stableFullyReady,
  type RoutableReplica,
  type VersionFacts,
} from '../../src/control/endpoint-route.ts';
import type { EndpointRecord } from '../../src/store/serving-records.ts';
import type { EndpointTrafficRecord, TrafficPolicy } from '../../src/store/traffic-records.ts';
import { replicaBound, unbatchedReplicaBound } from '../../src/gateway/admission-bound.ts';
import { onnxDefaultBatching } from '../../src/control/serving-defaults.ts';

const endpoint: EndpointRecord = {
  name: 'e',
  team: 'default',
  model: 'a',
  version: 1,
  ref: '1',
  replicas: 2,
  config: {},
  createdAt: '',
  updatedAt: '',
};

function traffic(overrides: Partial<EndpointTrafficRecord>): EndpointTrafficRecord {
  return {
    endpoint: 'e',
    policy: null,
    previous: null,
    warm: [],
    staged: [],
    revision: 1,
    updatedAt: '',
    ...overrides,
  };
}

function policy(overrides: Partial<TrafficPolicy>): TrafficPolicy {
  return {
    versions: [],
    shadows: [],
    salt: 'salt-1',
    keyPath: null,
    sliceKey: null,
    slicePath: null,
    ...overrides,
  };
}

/** Model a's versions are xgboost, model b's onnx; b has a declared schema. */
function facts(model: string, version: number): VersionFacts {
  return model === 'a'
    ? { format: 'xgboost', schema: null, inputNaming: { declared: false, featureNames: null } }
    : {
        format: 'onnx',
        schema: {
          inputs: [{ name: `x${version}`, datatype: 'FP32', shape: [-1, 2] }],
          outputs: [],
        },
        inputNaming: { declared: true, featureNames: null },
      };
}

let next = 0;
/** A ready replica of a version of this endpoint (at its config), unless told otherwise. */
function replica(model: string, version: number, over: Partial<RoutableReplica> = {}) {
  next += 1;
  return {
    id: `e-v${version}-${model}-${next}`,
    model,
    version,
    revision: revisionOf(endpoint, { model, version }),
    state: 'ready' as const,
    url: `http://127.0.0.1:${9000 + next}`,
    socketPath: null,
    ...over,
  };
}

const ids = (replicas: readonly { readonly id: string }[] | undefined) =>
  (replicas ?? []).map((r) => r.id);

test('versions: stable first, one entry per revision with every role it has', () => {
  const record = traffic({
    policy: policy({
      versions: [
        { model: 'a', version: 1, weight: 90 },
        { model: 'b', version: 1, weight: 10 },
      ],
      shadows: [{ model: 'a', version: 3, sampleRate: 0.5 }],
    }),
    staged: [{ model: 'b', version: 1 }],
    warm: [
      { model: 'a', version: 0, until: '2026-01-01T00:10:00.000Z' },
      { model: 'a', version: 3, until: '2026-01-01T00:05:00.000Z' },
    ],
  });
  const versions = endpointVersions(endpoint, record);
  assert.deepEqual(
    versions.map((v) => [`${v.model}:${v.version}`, v.roles, v.weight, v.sampleRate]),
    [
      ['a:1', ['stable', 'variant'], 90, null],
      ['b:1', ['variant', 'staged'], 10, null],
      ['a:3', ['shadow', 'warm'], null, 0.5],
      ['a:0', ['warm'], null, null],
    ],
  );
  // Only a version that is nothing but warm expires; the others are wanted while listed.
  assert.deepEqual(keptRevisions(versions), [
    { version: 1, revision: revisionOf(endpoint, { model: 'b', version: 1 }) },
    { version: 3, revision: revisionOf(endpoint, { model: 'a', version: 3 }) },
    {
      version: 0,
      revision: revisionOf(endpoint, { model: 'a', version: 0 }),
      untilMs: Date.parse('2026-01-01T00:10:00.000Z'),
    },
  ]);
  assert.deepEqual(
    expiredWarm(record, Date.parse('2026-01-01T00:05:00.000Z')).map((w) => w.version),
    [3],
  );
});

test('without a traffic record, or without a policy, the stable version takes 100 % alone', () => {
  for (const record of [null, traffic({})]) {
    const versions = endpointVersions(endpoint, record);
    assert.deepEqual(
      versions.map((v) => [v.roles, v.weight]),
      [[['stable'], 100]],
    );
    assert.deepEqual(keptRevisions(versions), []);
  }
  // A policy that leaves the stable version out: it runs, with no traffic.
  const versions = endpointVersions(
    endpoint,
    traffic({ policy: policy({ versions: [{ model: 'b', version: 2, weight: 100 }] }) }),
  );
  assert.deepEqual(
    versions.map((v) => [v.roles, v.weight]),
    [
      [['stable'], null],
      [['variant'], 100],
    ],
  );
});

test('no policy: the route is the one from before (old revision serves until every new slot is ready)', () => {
  const old = [replica('a', 0), replica('a', 0)];
  const halfNew = [replica('a', 1), replica('a', 1, { state: 'starting', url: null })];
  const half = endpointRoute({ endpoint, traffic: null, replicas: [...old, ...halfNew], facts });
  assert.deepEqual(ids(half.replicas), ids(old));
  assert.equal(half.version, 0);
  assert.equal(half.traffic, undefined);
  assert.equal(half.replicas[0]?.model, 'a');

  const allNew = [replica('a', 1), replica('a', 1)];
  const full = endpointRoute({ endpoint, traffic: null, replicas: [...old, ...allNew], facts });
  assert.deepEqual(ids(full.replicas), ids(allNew));
  assert.equal(full.version, 1);
  assert.equal(full.format, 'xgboost');
  assert.equal(full.maxConcurrency, 2 * unbatchedReplicaBound);
  assert.equal(full.maxConcurrencySource, 'derived');
});

test('a warm version stands in for a stable one not yet ready; staged, shadow and variant ones never do', () => {
  const stableStarting = replica('a', 1, { state: 'starting', url: null });
  const warm = [replica('a', 0), replica('a', 0)];
  const staged = [replica('b', 5), replica('b', 5), replica('b', 5)];
  const record = traffic({
    warm: [{ model: 'a', version: 0, until: '2099-01-01T00:00:00.000Z' }],
    staged: [{ model: 'b', version: 5 }],
  });
  const route = endpointRoute({
    endpoint,
    traffic: record,
    replicas: [stableStarting, ...warm, ...staged],
    facts,
  });
  assert.deepEqual(ids(route.replicas), ids(warm));
  assert.equal(route.version, 0);

  // Staged only: nothing stands in (the candidate has not passed its checks).
  const onlyStaged = endpointRoute({
    endpoint,
    traffic: record,
    replicas: [stableStarting, ...staged],
    facts,
  });
  assert.deepEqual(onlyStaged.replicas, []);
  assert.equal(onlyStaged.version, 1);

  // A shadow's replicas, and a variant's, neither.
  for (const p of [
    policy({
      versions: [{ model: 'a', version: 1, weight: 100 }],
      shadows: [{ model: 'b', version: 5, sampleRate: 1 }],
    }),
    policy({
      versions: [
        { model: 'a', version: 1, weight: 50 },
        { model: 'b', version: 5, weight: 50 },
      ],
    }),
  ]) {
    const route = endpointRoute({
      endpoint,
      traffic: traffic({ policy: p }),
      replicas: [stableStarting, ...staged],
      facts,
    });
    assert.deepEqual(route.replicas, []);
    assert.deepEqual(route.traffic?.variants[0]?.replicas, []);
  }
});

test('a policy routes each variant to its own ready replicas, described by its own version', () => {
  const stable = [replica('a', 1), replica('a', 1)];
  const canary = [replica('b', 2), replica('b', 2, { state: 'starting', url: null })];
  const shadow = [replica('b', 3)];
  const p = policy({
    versions: [
      { model: 'a', version: 1, weight: 95 },
      { model: 'b', version: 2, weight: 5 },
    ],
    shadows: [{ model: 'b', version: 3, sampleRate: 0.25 }],
    salt: 'rollout-7',
    keyPath: '$.parameters.user',
    sliceKey: 'country',
    slicePath: '$.parameters.country',
  });
  const route = endpointRoute({
    endpoint,
    traffic: traffic({ policy: p }),
    replicas: [...stable, ...canary, ...shadow],
    facts,
  });
  // The endpoint's own fields describe the stable version.
  assert.deepEqual([route.model, route.version, route.format], ['a', 1, 'xgboost']);
  assert.deepEqual(ids(route.replicas), ids(stable));
  const t = route.traffic;
  assert.ok(t !== undefined);
  assert.deepEqual(
    [t.salt, t.keyPath, t.sliceKey, t.slicePath],
    ['rollout-7', '$.parameters.user', 'country', '$.parameters.country'],
  );
  assert.deepEqual(
    t.variants.map((v) => [v.model, v.version, v.weight, v.format, ids(v.replicas)]),
    [
      ['a', 1, 95, 'xgboost', ids(stable)],
      ['b', 2, 5, 'onnx', ids(canary.slice(0, 1))],
    ],
  );
  assert.deepEqual(t.variants[1]?.schema, facts('b', 2).schema);
  assert.deepEqual(t.variants[1]?.inputNaming, { declared: true, featureNames: null });
  assert.deepEqual(t.variants[1]?.replicas[0]?.model, 'b');
  assert.deepEqual(
    t.shadows.map((s) => [s.model, s.version, s.sampleRate, s.format, ids(s.replicas)]),
    [['b', 3, 0.25, 'onnx', ids(shadow)]],
  );
  // The bound counts what answers: both variants' ready replicas, not the shadow's.
  assert.equal(route.maxConcurrency, 2 * unbatchedReplicaBound + replicaBound(onnxDefaultBatching));
});

test('a variant with no ready replica is listed with none (the gateway sends its share elsewhere)', () => {
  const stable = [replica('a', 1), replica('a', 1)];
  const route = endpointRoute({
    endpoint,
    traffic: traffic({
      policy: policy({
        versions: [
          { model: 'a', version: 1, weight: 50 },
          { model: 'b', version: 2, weight: 50 },
        ],
      }),
    }),
    replicas: [...stable, replica('b', 2, { state: 'failed', url: null })],
    facts,
  });
  assert.deepEqual(
    route.traffic?.variants.map((v) => ids(v.replicas).length),
    [2, 0],
  );
  assert.equal(route.maxConcurrency, 2 * unbatchedReplicaBound);
});

test('a variant on the stable version keeps the stable rule: the revision it replaces serves meanwhile', () => {
  // The endpoint's worker config changed (a new revision of a:1); the old config's replicas
  // keep a:1's share until the new ones are all ready.
  const reconfigured: EndpointRecord = { ...endpoint, config: { timeoutMs: 5 } };
  const oldConfig = [replica('a', 1), replica('a', 1)];
  const newConfig = {
    ...replica('a', 1),
    revision: revisionOf(reconfigured, { model: 'a', version: 1 }),
  };
  const route = endpointRoute({
    endpoint: reconfigured,
    traffic: traffic({
      policy: policy({
        versions: [
          { model: 'a', version: 1, weight: 80 },
          { model: 'b', version: 2, weight: 20 },
        ],
      }),
    }),
    replicas: [...oldConfig, newConfig],
    facts,
  });
  assert.deepEqual(ids(route.replicas), ids(oldConfig));
  assert.deepEqual(ids(route.traffic?.variants[0]?.replicas), ids(oldConfig));
});

test('once the stable revision has been fully ready, nothing stands in for it any more', () => {
  const stable = [replica('a', 1), replica('a', 1, { state: 'failed', url: null })];
  const warm = [replica('a', 0), replica('a', 0)];
  const record = traffic({ warm: [{ model: 'a', version: 0, until: '2099-01-01T00:00:00.000Z' }] });
  const input = { endpoint, traffic: record, replicas: [...stable, ...warm], facts };
  // Still rolling out (never fully ready): the warm version serves, as before.
  assert.deepEqual(ids(endpointRoute(input).replicas), ids(warm));
  // Established (one replica crashed since, or a scale-up): the stable version serves alone.
  const route = endpointRoute({ ...input, stableEstablished: true });
  assert.deepEqual(ids(route.replicas), ids(stable.slice(0, 1)));
  assert.equal(route.version, 1);
  assert.equal(stableFullyReady(endpoint, stable), false);
  assert.equal(stableFullyReady(endpoint, [stable[0]!, replica('a', 1)]), true);
});
