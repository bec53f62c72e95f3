import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  failureKind,
  planReplicas,
  restartBackoffMs,
  type DesiredEndpoint,
  type ObservedReplica,
  type ReplicaAction,
} from '../../src/control/replica-plan.ts';

/** A replica of revision "v<version>" unless the test says otherwise. */
function replica(
  overrides: Partial<ObservedReplica> & Pick<ObservedReplica, 'id'>,
): ObservedReplica {
  return {
    endpoint: 'e',
    version: 1,
    slot: 0,
    state: 'ready',
    restarts: 0,
    restartAtMs: null,
    revision: `v${overrides.version ?? 1}`,
    ...overrides,
  };
}

/** An endpoint at revision "v<version>". */
function want(name: string, version: number, replicas: number): DesiredEndpoint {
  return { name, version, revision: `v${version}`, replicas };
}

const sorted = (actions: ReplicaAction[]): string[] => actions.map((a) => JSON.stringify(a)).sort();

test('an empty endpoint gets one start per slot', () => {
  assert.deepEqual(planReplicas([want('e', 1, 2)], [], 0), [
    { kind: 'start', endpoint: 'e', version: 1, revision: 'v1', slot: 0 },
    { kind: 'start', endpoint: 'e', version: 1, revision: 'v1', slot: 1 },
  ]);
});

test('a steady endpoint needs nothing', () => {
  const replicas = [
    replica({ id: 'a', slot: 0 }),
    replica({ id: 'b', slot: 1, state: 'starting' }),
  ];
  assert.deepEqual(planReplicas([want('e', 1, 2)], replicas, 0), []);
});

test('a failed replica restarts only after its backoff', () => {
  const failed = replica({ id: 'a', state: 'failed', restarts: 2, restartAtMs: 1000 });
  assert.deepEqual(planReplicas([want('e', 1, 1)], [failed], 999), []);
  assert.deepEqual(planReplicas([want('e', 1, 1)], [failed], 1000), [
    { kind: 'restart', replicaId: 'a' },
  ]);
});

test('backoff after a crash doubles from 0.5 s and caps at 30 s', () => {
  assert.deepEqual(
    [0, 1, 2, 3, 6, 7, 100].map((n) => restartBackoffMs(n)),
    [500, 1000, 2000, 4000, 30_000, 30_000, 30_000],
  );
  assert.deepEqual(
    [0, 1, 6].map((n) => restartBackoffMs(n, 'crash')),
    [500, 1000, 30_000],
  );
});

test('a failure that repeats waits minutes: from 1 min, doubling, capped at 10 min', () => {
  assert.deepEqual(
    [0, 1, 2, 3, 4, 100].map((n) => restartBackoffMs(n, 'repeats')),
    [60_000, 120_000, 240_000, 480_000, 600_000, 600_000],
  );
  // Always longer than a crash's, at any count of restarts so far.
  for (let n = 0; n < 40; n++) assert.ok(restartBackoffMs(n, 'repeats') > restartBackoffMs(n));
});

test('what the bytes or the model cause repeats; crashes and trust failures do not', () => {
  for (const code of [
    'KILN_ARTIFACT_CORRUPT',
    'KILN_ARTIFACT_QUARANTINED',
    'KILN_ARTIFACT_MISSING',
    'KILN_MODEL_LOAD_FAILED',
  ])
    assert.equal(failureKind(code), 'repeats', code);
  for (const code of [null, 'KILN_INTERNAL', 'KILN_SIGNATURE_REQUIRED', 'KILN_SOMETHING_NEW'])
    assert.equal(failureKind(code), 'crash', String(code));
});

test('scale down stops the highest slots', () => {
  const replicas = [
    replica({ id: 'a', slot: 0 }),
    replica({ id: 'b', slot: 1 }),
    replica({ id: 'c', slot: 2 }),
  ];
  assert.deepEqual(
    sorted(planReplicas([want('e', 1, 1)], replicas, 0)),
    sorted([
      { kind: 'stop', replicaId: 'b', reason: 'scale-down' },
      { kind: 'stop', replicaId: 'c', reason: 'scale-down' },
    ]),
  );
});

test('a new version starts beside the old one, which stops only when every new slot is ready', () => {
  const endpoints = [want('e', 2, 2)];
  const old = [replica({ id: 'old0', slot: 0 }), replica({ id: 'old1', slot: 1 })];
  assert.deepEqual(planReplicas(endpoints, old, 0), [
    { kind: 'start', endpoint: 'e', version: 2, revision: 'v2', slot: 0 },
    { kind: 'start', endpoint: 'e', version: 2, revision: 'v2', slot: 1 },
  ]);
  const halfReady = [
    ...old,
    replica({ id: 'new0', version: 2, slot: 0 }),
    replica({ id: 'new1', version: 2, slot: 1, state: 'starting' }),
  ];
  assert.deepEqual(planReplicas(endpoints, halfReady, 0), []);
  const allReady = [
    ...old,
    replica({ id: 'new0', version: 2, slot: 0 }),
    replica({ id: 'new1', version: 2, slot: 1 }),
  ];
  assert.deepEqual(
    sorted(planReplicas(endpoints, allReady, 0)),
    sorted([
      { kind: 'stop', replicaId: 'old0', reason: 'replaced' },
      { kind: 'stop', replicaId: 'old1', reason: 'replaced' },
    ]),
  );
  // a new version that keeps failing never takes the old one's place
  const failing = [
    ...old,
    replica({ id: 'new0', version: 2, slot: 0, state: 'failed', restartAtMs: 10 }),
  ];
  assert.deepEqual(planReplicas([want('e', 2, 1)], failing, 5), []);
});

test('the same version with another worker config (or model) is a rollout too', () => {
  const endpoints = [{ name: 'e', version: 1, revision: 'v1-batching-off', replicas: 1 }];
  const old = [replica({ id: 'old0', revision: 'v1-batching-on' })];
  assert.deepEqual(planReplicas(endpoints, old, 0), [
    { kind: 'start', endpoint: 'e', version: 1, revision: 'v1-batching-off', slot: 0 },
  ]);
  const both = [...old, replica({ id: 'new0', revision: 'v1-batching-off' })];
  assert.deepEqual(planReplicas(endpoints, both, 0), [
    { kind: 'stop', replicaId: 'old0', reason: 'replaced' },
  ]);
});

test('replicas of deleted endpoints stop; stopping replicas are left alone', () => {
  const replicas = [
    replica({ id: 'a', endpoint: 'gone' }),
    replica({ id: 'b', endpoint: 'gone', state: 'stopping' }),
  ];
  assert.deepEqual(planReplicas([], replicas, 0), [
    { kind: 'stop', replicaId: 'a', reason: 'endpoint-deleted' },
  ]);
});

test('property: after applying the plan, each endpoint converges to exactly N live replicas of its revision', () => {
  let seed = 42;
  const random = (): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  for (let round = 0; round < 200; round++) {
    // Versions 1–2, each with two possible configs: four revisions an endpoint.
    const revisionOf = (version: number, config: number): string => `v${version}c${config}`;
    const endpoints = Array.from({ length: 1 + Math.floor(random() * 3) }, (_, i) => {
      const version = 1 + Math.floor(random() * 2);
      return {
        name: `e${i}`,
        version,
        revision: revisionOf(version, Math.floor(random() * 2)),
        replicas: Math.floor(random() * 4),
      };
    });
    let replicas: ObservedReplica[] = Array.from({ length: Math.floor(random() * 8) }, (_, i) => {
      const version = 1 + Math.floor(random() * 2);
      return {
        id: `r${i}`,
        endpoint: `e${Math.floor(random() * 4)}`,
        version,
        revision: revisionOf(version, Math.floor(random() * 2)),
        slot: Math.floor(random() * 4),
        state: 'ready' as const,
        restarts: 0,
        restartAtMs: null,
      };
    });
    // dedupe slots per (endpoint, revision), as the reconciler guarantees
    const seen = new Set<string>();
    replicas = replicas.filter((r) => {
      const key = `${r.endpoint}/${r.revision}/${r.slot}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    for (let step = 0; step < 4; step++) {
      const actions = planReplicas(endpoints, replicas, 0);
      let next = 0;
      for (const action of actions) {
        if (action.kind === 'stop') replicas = replicas.filter((r) => r.id !== action.replicaId);
        if (action.kind === 'start') {
          replicas.push({
            id: `n${step}-${next++}`,
            endpoint: action.endpoint,
            version: action.version,
            revision: action.revision,
            slot: action.slot,
            state: 'ready',
            restarts: 0,
            restartAtMs: null,
          });
        }
      }
    }
    for (const endpoint of endpoints) {
      const mine = replicas.filter((r) => r.endpoint === endpoint.name);
      assert.equal(mine.length, endpoint.replicas, JSON.stringify({ endpoint, mine }));
      assert.ok(mine.every((r) => r.revision === endpoint.revision));
    }
    assert.ok(replicas.every((r) => endpoints.some((e) => e.name === r.endpoint)));
  }
});

// --- several revisions per endpoint (traffic management) ----------------------------------

/** Endpoint e at v1 (2 replicas), keeping v2 (a canary) and v3 (warm until 1000). */
const withKept: DesiredEndpoint = {
  ...want('e', 1, 2),
  kept: [
    { version: 2, revision: 'v2' },
    { version: 3, revision: 'v3', untilMs: 1000 },
  ],
};

test('every kept revision gets its slots beside the stable one', () => {
  assert.deepEqual(
    sorted(planReplicas([withKept], [], 0)),
    sorted(
      [1, 2, 3].flatMap((version) =>
        [0, 1].map((slot) => ({
          kind: 'start',
          endpoint: 'e',
          version,
          revision: `v${version}`,
          slot,
        })),
      ),
    ),
  );
  // Ready everywhere: nothing to do, and no kept replica stopped as replaced.
  const all = [1, 2, 3].flatMap((version) =>
    [0, 1].map((slot) => replica({ id: `v${version}s${slot}`, version, slot })),
  );
  assert.deepEqual(planReplicas([withKept], all, 999), []);
  // Kept ones restart after their backoff and scale down like the stable one.
  const failed = all.map((r) =>
    r.id === 'v2s0' ? { ...r, state: 'failed' as const, restartAtMs: 10 } : r,
  );
  assert.deepEqual(planReplicas([withKept], failed, 10), [{ kind: 'restart', replicaId: 'v2s0' }]);
  assert.deepEqual(
    sorted(planReplicas([{ ...withKept, replicas: 1 }], all, 0)),
    sorted(
      ['v1s1', 'v2s1', 'v3s1'].map((id) => ({ kind: 'stop', replicaId: id, reason: 'scale-down' })),
    ),
  );
});

test('a warm revision past its time is stopped once the stable one is ready, not before', () => {
  const all = [1, 2, 3].flatMap((version) =>
    [0, 1].map((slot) => replica({ id: `v${version}s${slot}`, version, slot })),
  );
  assert.deepEqual(
    sorted(planReplicas([withKept], all, 1000)),
    sorted([
      { kind: 'stop', replicaId: 'v3s0', reason: 'replaced' },
      { kind: 'stop', replicaId: 'v3s1', reason: 'replaced' },
    ]),
  );
  // Expired, not yet started slots are not started.
  assert.ok(planReplicas([withKept], [], 1000).every((a) => a.kind !== 'start' || a.version !== 3));
  // The stable one not fully ready: the expired warm one may still be what serves.
  const stableStarting = all.map((r) =>
    r.id === 'v1s1' ? { ...r, state: 'starting' as const } : r,
  );
  assert.deepEqual(planReplicas([withKept], stableStarting, 1000), []);
});

test('a revision dropped from the kept ones (a canary rolled back) stops; the listed ones stay', () => {
  const all = [1, 2, 3].flatMap((version) =>
    [0, 1].map((slot) => replica({ id: `v${version}s${slot}`, version, slot })),
  );
  const dropped = { ...withKept, kept: withKept.kept!.filter((k) => k.revision !== 'v2') };
  assert.deepEqual(
    sorted(planReplicas([dropped], all, 0)),
    sorted([
      { kind: 'stop', replicaId: 'v2s0', reason: 'replaced' },
      { kind: 'stop', replicaId: 'v2s1', reason: 'replaced' },
    ]),
  );
  // Kept equal to the stable revision, or listed twice: one set of slots.
  const twice = {
    ...want('e', 1, 1),
    kept: [
      { version: 1, revision: 'v1' },
      { version: 1, revision: 'v1' },
    ],
  };
  assert.deepEqual(planReplicas([twice], [], 0), [
    { kind: 'start', endpoint: 'e', version: 1, revision: 'v1', slot: 0 },
  ]);
});

test('property: with kept revisions, each endpoint converges to N replicas of each wanted revision and nothing else', () => {
  let seed = 7;
  const random = (): number => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  for (let round = 0; round < 200; round++) {
    const nowMs = 500;
    const endpoints: DesiredEndpoint[] = Array.from(
      { length: 1 + Math.floor(random() * 3) },
      (_, i) => {
        const version = 1 + Math.floor(random() * 4);
        const kept = Array.from({ length: Math.floor(random() * 3) }, () => {
          const v = 1 + Math.floor(random() * 4);
          const warm = random() < 0.5;
          return warm
            ? { version: v, revision: `v${v}`, untilMs: Math.floor(random() * 1000) }
            : { version: v, revision: `v${v}` };
        });
        return { ...want(`e${i}`, version, Math.floor(random() * 3)), kept };
      },
    );
    let replicas: ObservedReplica[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < Math.floor(random() * 10); i++) {
      const version = 1 + Math.floor(random() * 4);
      const r = replica({
        id: `r${i}`,
        endpoint: `e${Math.floor(random() * 4)}`,
        version,
        slot: Math.floor(random() * 3),
      });
      const key = `${r.endpoint}/${r.revision}/${r.slot}`;
      if (!seen.has(key)) replicas.push(r);
      seen.add(key);
    }
    for (let step = 0; step < 4; step++) {
      let next = 0;
      for (const action of planReplicas(endpoints, replicas, nowMs)) {
        if (action.kind === 'stop') replicas = replicas.filter((r) => r.id !== action.replicaId);
        if (action.kind === 'start')
          replicas.push(
            replica({
              id: `n${step}-${next++}`,
              endpoint: action.endpoint,
              version: action.version,
              revision: action.revision,
              slot: action.slot,
            }),
          );
      }
    }
    for (const endpoint of endpoints) {
      const wanted = new Set([
        endpoint.revision,
        ...(endpoint.kept ?? [])
          .filter((k) => k.untilMs === undefined || k.untilMs > nowMs)
          .map((k) => k.revision),
      ]);
      const mine = replicas.filter((r) => r.endpoint === endpoint.name);
      for (const revision of wanted) {
        const slots = mine.filter((r) => r.revision === revision).map((r) => r.slot);
        assert.deepEqual(
          slots.sort(),
          [...Array(endpoint.replicas).keys()],
          JSON.stringify({ endpoint, revision, mine }),
        );
      }
      assert.ok(mine.every((r) => wanted.has(r.revision)));
      // ids stay unique: one replica per (revision, slot)
      assert.equal(new Set(mine.map((r) => `${r.revision}/${r.slot}`)).size, mine.length);
    }
  }
});

test('an evicted replica serves until the replacement in its slot is ready, then stops', () => {
  const endpoint = want('e', 1, 2);
  // Evicted: a surge replacement starts in its slot; it keeps serving meanwhile.
  assert.deepEqual(
    planReplicas(
      [endpoint],
      [replica({ id: 'a', slot: 0, evicted: true }), replica({ id: 'b', slot: 1 })],
      0,
    ),
    [{ kind: 'start', endpoint: 'e', version: 1, revision: 'v1', slot: 0 }],
  );
  // Replacement starting: nothing to do (the evicted one is not stopped).
  assert.deepEqual(
    planReplicas(
      [endpoint],
      [
        replica({ id: 'a', slot: 0, evicted: true }),
        replica({ id: 'a2', slot: 0, state: 'starting' }),
        replica({ id: 'b', slot: 1 }),
      ],
      0,
    ),
    [],
  );
  // Replacement ready: the evicted one stops.
  assert.deepEqual(
    planReplicas(
      [endpoint],
      [
        replica({ id: 'a', slot: 0, evicted: true }),
        replica({ id: 'a2', slot: 0 }),
        replica({ id: 'b', slot: 1 }),
      ],
      0,
    ),
    [{ kind: 'stop', replicaId: 'a', reason: 'evicted' }],
  );
  // An evicted replica that is not serving stops at once, beside its replacement's start.
  assert.deepEqual(
    planReplicas(
      [endpoint],
      [
        replica({ id: 'a', slot: 0, evicted: true, state: 'failed' }),
        replica({ id: 'b', slot: 1 }),
      ],
      0,
    ),
    [
      { kind: 'start', endpoint: 'e', version: 1, revision: 'v1', slot: 0 },
      { kind: 'stop', replicaId: 'a', reason: 'evicted' },
    ],
  );
});
