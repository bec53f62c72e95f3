// How the gateway picks a pool worker (pool-replica-picker.ts): a worker holding the model
// wins (the least loaded of several), else the model's rendezvous worker — the same one for
// every call, spread over the workers, and only the models of a worker that leaves move.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { notePoolResidency, pickPoolReplica, rank } from '../../src/gateway/pool-replica-picker.ts';

interface Worker {
  readonly id: string;
  outstanding: number;
  ejectedUntilMs: number;
}
const worker = (id: string): Worker => ({ id, outstanding: 0, ejectedUntilMs: 0 });

test('without residency a model always goes to its highest-ranked worker', () => {
  const workers = ['w0', 'w1', 'w2'].map(worker);
  const counts = new Map<string, number>();
  for (let i = 0; i < 300; i++) {
    const endpoint = `m${i}`;
    const picked = pickPoolReplica(workers, endpoint, 0, null)!;
    const best = [...workers].sort((a, b) => rank(b, endpoint) - rank(a, endpoint))[0]!;
    assert.equal(picked, best);
    assert.equal(pickPoolReplica([...workers].reverse(), endpoint, 0, null), picked);
    counts.set(picked.id, (counts.get(picked.id) ?? 0) + 1);
  }
  // Spread: each worker ranks first for a fair share (100 expected of 300).
  for (const w of workers) assert.ok((counts.get(w.id) ?? 0) > 60, JSON.stringify([...counts]));
  // A worker leaving moves only its own models.
  const [w0, w1, w2] = workers as [Worker, Worker, Worker];
  for (let i = 0; i < 300; i++) {
    const endpoint = `m${i}`;
    const before = pickPoolReplica(workers, endpoint, 0, null)!;
    if (before === w2) continue;
    assert.equal(pickPoolReplica([w0, w1], endpoint, 0, null), before);
  }
});

test('a worker that says it holds the model gets it; the least loaded of several', () => {
  const [a, b, c] = ['a', 'b', 'c'].map(worker) as [Worker, Worker, Worker];
  const endpoint = 'fraud';
  const others = [a, b, c].filter((w) => w !== pickPoolReplica([a, b, c], endpoint, 0, null));
  const [holder, second] = others as [Worker, Worker];
  notePoolResidency(holder, 'x,fraud,y');
  assert.equal(pickPoolReplica([a, b, c], endpoint, 0, null), holder);
  notePoolResidency(second, 'fraud');
  holder.outstanding = 3;
  assert.equal(pickPoolReplica([a, b, c], endpoint, 0, null), second);
  // It evicted it since: its next answer says so.
  notePoolResidency(second, 'x');
  assert.equal(pickPoolReplica([a, b, c], endpoint, 0, null), holder);
  // A retry moves away from the one that failed; an ejected worker is skipped.
  assert.notEqual(pickPoolReplica([a, b, c], endpoint, 0, holder), holder);
  holder.ejectedUntilMs = 100;
  assert.notEqual(pickPoolReplica([a, b, c], endpoint, 50, null), holder);
  assert.equal(pickPoolReplica([holder], endpoint, 50, null), holder);
  assert.equal(pickPoolReplica([], endpoint, 0, null), null);
});
