import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { LlmLoadReport } from '../../src/gateway/llm-replica-load.ts';
import {
  defaultLlmPickSettings,
  llmLoadScore,
  pickLlmReplica,
  type LlmPickRequest,
  type LlmReplicaView,
} from '../../src/gateway/llm-replica-picker.ts';

const settings = {
  affinitySlack: 2,
  kvWeight: 4,
  reportMaxAgeMs: 1_000,
  prefillBytesPerRequest: 1_000,
};
const nowMs = 10_000;

function report(fields: Partial<LlmLoadReport> = {}): LlmLoadReport {
  return {
    running: 0,
    waiting: 0,
    paused: 0,
    kvBlocksUsed: 0,
    kvBlocksTotal: 100,
    kvUtilization: 0,
    inflight: 0,
    ...fields,
  };
}

function replica(
  id: string,
  fields: Partial<LlmLoadReport> | null,
  extra: {
    sentSinceReport?: number;
    ageMs?: number;
    outstanding?: number;
    ejectedUntilMs?: number;
    awaitingBytes?: number;
  } = {},
): LlmReplicaView {
  return {
    id,
    outstanding: extra.outstanding ?? 0,
    ejectedUntilMs: extra.ejectedUntilMs ?? 0,
    llmLoad: {
      report: fields === null ? null : report(fields),
      reportAtMs: nowMs - (extra.ageMs ?? 10),
      sentSinceReport: extra.sentSinceReport ?? 0,
      awaitingFirstByteBytes: extra.awaitingBytes ?? 0,
    },
  };
}

function request(
  overrides: Partial<LlmPickRequest<LlmReplicaView>> = {},
): LlmPickRequest<LlmReplicaView> {
  return {
    policy: 'load-prefix',
    start: 0,
    nowMs,
    exclude: null,
    affinityId: null,
    settings,
    ...overrides,
  };
}

const pick = (
  replicas: LlmReplicaView[],
  overrides: Partial<LlmPickRequest<LlmReplicaView>> = {},
): { id: string | undefined; reason: string | undefined } => {
  const chosen = pickLlmReplica(replicas, request(overrides));
  return { id: chosen?.replica.id, reason: chosen?.reason };
};

test('the score counts queued requests, those sent since the report, and KV use', () => {
  assert.equal(llmLoadScore(replica('a', { running: 3, waiting: 2 }), nowMs, settings), 5);
  // The HTTP layer may hold more than the engine has seen yet (paused streams excepted).
  assert.equal(
    llmLoadScore(replica('a', { running: 1, inflight: 6, paused: 2 }), nowMs, settings),
    4,
  );
  assert.equal(
    llmLoadScore(replica('a', { running: 1 }, { sentSinceReport: 3 }), nowMs, settings),
    4,
  );
  assert.equal(llmLoadScore(replica('a', { kvUtilization: 0.5 }), nowMs, settings), 2);
  // No report, or a stale one: the gateway's own count of requests in flight.
  assert.equal(llmLoadScore(replica('a', null, { outstanding: 7 }), nowMs, settings), 7);
  assert.equal(
    llmLoadScore(replica('a', { waiting: 50 }, { ageMs: 5_000, outstanding: 1 }), nowMs, settings),
    1,
  );
});

test('the least loaded replica wins by queue depth, from any rotation start', () => {
  const list = [
    replica('a', { running: 4, waiting: 3 }),
    replica('b', { running: 2 }),
    replica('c', { running: 4 }),
  ];
  for (let start = 0; start < 3; start++) {
    assert.deepEqual(pick(list, { start }), { id: 'b', reason: 'least_loaded' });
  }
});

test('KV-cache utilization counts: equal queues, the emptier cache wins', () => {
  const list = [
    replica('a', { running: 2, kvUtilization: 0.9 }),
    replica('b', { running: 2, kvUtilization: 0.2 }),
  ];
  assert.equal(pick(list).id, 'b');
  assert.equal(pick(list, { start: 1 }).id, 'b');
});

test('requests sent since the last report count against a replica', () => {
  // b reported less, but the gateway has sent it three requests since.
  const list = [replica('a', { running: 2 }), replica('b', { running: 0 }, { sentSinceReport: 3 })];
  assert.equal(pick(list).id, 'a');
});

test('prompts still in prefill weigh by their size: a long one there is a long wait', () => {
  assert.equal(
    llmLoadScore(replica('a', { running: 1 }, { awaitingBytes: 3_000 }), nowMs, settings),
    4,
  );
  assert.equal(
    llmLoadScore(replica('a', null, { outstanding: 1, awaitingBytes: 500 }), nowMs, settings),
    1.5,
  );
  // Both run one request; a's is an 8 000-byte prompt not yet past its prefill.
  const list = [
    replica('a', { running: 1 }, { awaitingBytes: 8_000 }),
    replica('b', { running: 1 }, { awaitingBytes: 120 }),
  ];
  assert.equal(pick(list).id, 'b');
  assert.deepEqual(pick(list, { affinityId: 'a' }), { id: 'b', reason: 'least_loaded' });
});

test('prefix affinity is kept under balanced load', () => {
  const list = [
    replica('a', { running: 3 }),
    replica('b', { running: 1 }),
    replica('c', { running: 2 }),
  ];
  // b is least loaded; a (the prefix's replica) is within the slack of 2.
  assert.deepEqual(pick(list, { affinityId: 'a' }), { id: 'a', reason: 'affinity' });
  assert.deepEqual(pick(list, { affinityId: 'c' }), { id: 'c', reason: 'affinity' });
});

test('prefix affinity is broken when its replica is loaded past the slack', () => {
  const list = [replica('a', { running: 4, waiting: 1 }), replica('b', { running: 1 })];
  assert.deepEqual(pick(list, { affinityId: 'a' }), { id: 'b', reason: 'least_loaded' });
  // A full KV cache alone can break it too.
  const full = [replica('a', { running: 1, kvUtilization: 1 }), replica('b', { running: 1 })];
  assert.deepEqual(pick(full, { affinityId: 'a' }), { id: 'b', reason: 'least_loaded' });
});

test('an affinity to a replica no longer listed, or ejected, falls back to load', () => {
  const list = [
    replica('a', { running: 1 }),
    replica('b', { running: 0 }, { ejectedUntilMs: nowMs + 1 }),
  ];
  assert.deepEqual(pick(list, { affinityId: 'gone' }), { id: 'a', reason: 'least_loaded' });
  assert.deepEqual(pick(list, { affinityId: 'b' }), { id: 'a', reason: 'least_loaded' });
});

test('round-robin alternates whatever the load and the prefix', () => {
  const list = [replica('a', { waiting: 40 }), replica('b', null), replica('c', { running: 0 })];
  const ids = [0, 1, 2, 3, 4].map((start) =>
    pick(list, { policy: 'round-robin', start, affinityId: 'c' }),
  );
  assert.deepEqual(
    ids.map((p) => p.id),
    ['a', 'b', 'c', 'a', 'b'],
  );
  assert.ok(ids.every((p) => p.reason === 'round_robin'));
});

test('equal loads go to the first replica in rotation order', () => {
  const list = [replica('a', {}), replica('b', {}), replica('c', {})];
  assert.deepEqual(
    [0, 1, 2, 3].map((start) => pick(list, { start }).id),
    ['a', 'b', 'c', 'a'],
  );
});

test('ejected replicas are skipped while others exist, and tried when none does', () => {
  const ejected = { ejectedUntilMs: nowMs + 100 };
  const list = [
    replica('a', {}, ejected),
    replica('b', { waiting: 9 }),
    replica('c', { waiting: 3 }, ejected),
  ];
  assert.equal(pick(list).id, 'b');
  assert.equal(pick(list, { policy: 'round-robin' }).id, 'b');
  // b excluded (a retry leaving it): the least loaded ejected one.
  assert.equal(pick(list, { exclude: list[1]! }).id, 'a');
  assert.equal(pickLlmReplica([list[0]!], request({ exclude: list[0]! })), null);
  assert.equal(pickLlmReplica([], request()), null);
});

test('the defaults are the documented ones', () => {
  assert.deepEqual(defaultLlmPickSettings, {
    affinitySlack: 2,
    kvWeight: 4,
    reportMaxAgeMs: 1_000,
    prefillBytesPerRequest: 1_024,
  });
});
