// The continuous-batching scheduler as a pure policy: a fake KV allocator with a fixed number
// of blocks and a step loop driven by the test. Exact plans for small scenarios (budget and
// batch size, chunked prefill beside decodes, preemption and recompute, cancellation in every
// state, FCFS and priority), then a seeded property test over random arrivals, lengths, stops
// and cancellations that checks the invariants after every step.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRandom } from '../../../src/core/random.ts';
import type { KvAllocator } from '../../../src/llm/engine/kv-allocator.ts';
import { Scheduler, type SchedulerOptions } from '../../../src/llm/engine/scheduler.ts';
import type { FinishedSeq, StepPlan } from '../../../src/llm/engine/step-plan.ts';

/** Counts positions per sequence; a sequence holds ⌈positions ÷ blockSize⌉ blocks. */
class FakeKv implements KvAllocator {
  readonly positions = new Map<string, number>();
  maxUsedBlocks = 0;

  constructor(
    readonly numTotalBlocks: number,
    readonly blockSize: number,
  ) {}

  blocksOf(seqId: string): number {
    return Math.ceil((this.positions.get(seqId) ?? 0) / this.blockSize);
  }

  get numUsedBlocks(): number {
    let used = 0;
    for (const seqId of this.positions.keys()) used += this.blocksOf(seqId);
    return used;
  }

  get numFreeBlocks(): number {
    return this.numTotalBlocks - this.numUsedBlocks;
  }

  canAppend(seqId: string, numTokens: number): boolean {
    const now = this.positions.get(seqId) ?? 0;
    const extra = Math.ceil((now + numTokens) / this.blockSize) - this.blocksOf(seqId);
    return extra <= this.numFreeBlocks;
  }

  append(seqId: string, numTokens: number): boolean {
    if (!this.canAppend(seqId, numTokens)) return false;
    this.positions.set(seqId, (this.positions.get(seqId) ?? 0) + numTokens);
    this.maxUsedBlocks = Math.max(this.maxUsedBlocks, this.numUsedBlocks);
    return true;
  }

  free(seqId: string): void {
    this.positions.delete(seqId);
  }
}

/** A plan as compact text: "a:8p" (prefill 8), "a:2p*" (…and samples), "a:1d*" (decode). */
function show(plan: StepPlan): string {
  const parts = plan.scheduled.map(
    (s) => `${s.seqId}:${s.numTokens}${s.phase === 'decode' ? 'd' : 'p'}${s.samples ? '*' : ''}`,
  );
  for (const id of plan.preempted) parts.push(`-${id}`);
  for (const f of plan.finished) parts.push(`!${f.seqId}:${f.reason}`);
  return parts.join(' ');
}

interface Step {
  readonly plan: StepPlan;
  readonly finished: FinishedSeq[];
}

/** One engine step: schedule, "run the model", report which sampled sequences stopped. */
function step(scheduler: Scheduler, stopped: readonly string[] = []): Step {
  const plan = scheduler.schedule();
  const finished = scheduler.onStepDone(stopped.map((seqId) => ({ seqId, stopped: true })));
  return { plan, finished };
}

/** Steps until nothing is left (bounded), returning each plan as text and every finish. */
function drain(
  scheduler: Scheduler,
  maxSteps = 1000,
): { plans: string[]; finished: FinishedSeq[] } {
  const plans: string[] = [];
  const finished: FinishedSeq[] = [];
  for (let i = 0; i < maxSteps && scheduler.numRunning + scheduler.numWaiting > 0; i++) {
    const s = step(scheduler);
    plans.push(show(s.plan));
    finished.push(...s.plan.finished, ...s.finished);
  }
  assert.equal(scheduler.numRunning + scheduler.numWaiting, 0, 'drained');
  return { plans, finished };
}

function make(options: SchedulerOptions, numBlocks = 1000, blockSize = 4) {
  const kv = new FakeKv(numBlocks, blockSize);
  return { kv, scheduler: new Scheduler(kv, options) };
}

test('each step stays within the token budget and the number of sequences', () => {
  const { kv, scheduler } = make({ maxNumTokensPerStep: 8, maxNumSeqs: 2 });
  for (const seqId of ['a', 'b', 'c'])
    assert.deepEqual(scheduler.add({ seqId, numPromptTokens: 10, maxTokens: 3 }), { ok: true });
  const { plans, finished } = drain(scheduler);
  assert.deepEqual(plans, [
    'a:8p',
    'a:2p* b:6p',
    'a:1d* b:4p*',
    'a:1d* b:1d*',
    'b:1d* c:7p',
    'c:3p*',
    'c:1d*',
    'c:1d*',
  ]);
  assert.deepEqual(
    finished.map((f) => `${f.seqId}:${f.reason}:${f.numOutputTokens}`),
    ['a:length:3', 'b:length:3', 'c:length:3'],
  );
  assert.equal(kv.numUsedBlocks, 0);
});

test('a long prompt is prefilled in chunks while others keep decoding every step', () => {
  const { scheduler } = make({ maxNumTokensPerStep: 4, maxNumSeqs: 4 });
  scheduler.add({ seqId: 'a', numPromptTokens: 2, maxTokens: 8 });
  assert.equal(show(step(scheduler).plan), 'a:2p*');
  scheduler.add({ seqId: 'long', numPromptTokens: 10, maxTokens: 2 });
  const plans = [1, 2, 3, 4, 5, 6].map(() => show(step(scheduler).plan));
  assert.deepEqual(plans, [
    'a:1d* long:3p',
    'a:1d* long:3p',
    'a:1d* long:3p',
    'a:1d* long:1p*',
    'a:1d* long:1d*',
    'a:1d*',
  ]);
});

test('decodes go before a higher-priority sequence still prefilling', () => {
  const { scheduler } = make({ maxNumTokensPerStep: 4, maxNumSeqs: 4 });
  scheduler.add({ seqId: 'low', numPromptTokens: 1, maxTokens: 7, priority: 1 });
  assert.equal(show(step(scheduler).plan), 'low:1p*');
  // 'urgent' runs ahead of 'low' (plans list it first), yet 'low''s decode is planned before
  // its chunks: the chunks take only what the decode leaves of the budget.
  scheduler.add({ seqId: 'urgent', numPromptTokens: 10, maxTokens: 2, priority: 0 });
  assert.deepEqual(drain(scheduler).plans, [
    'urgent:3p low:1d*',
    'urgent:3p low:1d*',
    'urgent:3p low:1d*',
    'urgent:1p* low:1d*',
    'urgent:1d* low:1d*',
    'low:1d*',
  ]);
});

test('when blocks run out the newest sequence is preempted and later recomputed', () => {
  // 4 blocks of 4 positions; two sequences of prompt 4 fill them after their first decode.
  // Two sequences at most, so 'c' waits behind them.
  const { kv, scheduler } = make({ maxNumTokensPerStep: 16, maxNumSeqs: 2 }, 4, 4);
  scheduler.add({ seqId: 'a', numPromptTokens: 4, maxTokens: 8 });
  scheduler.add({ seqId: 'b', numPromptTokens: 4, maxTokens: 8 });
  scheduler.add({ seqId: 'c', numPromptTokens: 4, maxTokens: 2 });
  const { plans, finished } = drain(scheduler);
  assert.deepEqual(plans, [
    'a:4p* b:4p*',
    'a:1d* b:1d*',
    'a:1d* b:1d*',
    'a:1d* b:1d*',
    'a:1d* b:1d*',
    // a needs a third block for position 8: b (the newest) gives back its two.
    'a:1d* -b',
    // b, back at the head of the waiting queue, must recompute prompt 4 + output 5 = 9
    // positions (3 blocks); 1 is free, so it waits, and so does c behind it (FCFS) although
    // c's prompt would fit.
    'a:1d*',
    'a:1d*',
    'b:9p* c:4p*',
    // c's first decode needs a second block; none is free and c is the newest: c yields.
    'b:1d* -c',
    'b:1d*',
    'c:5p*',
  ]);
  // b and c end with as many tokens as they would have without the preemption.
  assert.deepEqual(
    finished.map((f) => `${f.seqId}:${f.reason}:${f.numOutputTokens}`),
    ['a:length:8', 'b:length:8', 'c:length:2'],
  );
  assert.equal(kv.maxUsedBlocks, 4);
  assert.equal(kv.numUsedBlocks, 0);
});

test('a preempted sequence already planned this step is withdrawn from the plan', () => {
  // 3 blocks of 4 positions. 'low' decodes; 'urgent' (priority 0, so ahead in the running
  // order) is admitted with a first chunk, and its second chunk needs the last block of 'low',
  // whose decode was already planned (decodes go first): that entry is withdrawn.
  const { kv, scheduler } = make({ maxNumTokensPerStep: 5, maxNumSeqs: 4 }, 3, 4);
  scheduler.add({ seqId: 'low', numPromptTokens: 4, maxTokens: 6, priority: 1 });
  assert.equal(show(step(scheduler).plan), 'low:4p*');
  assert.equal(show(step(scheduler).plan), 'low:1d*');
  scheduler.add({ seqId: 'urgent', numPromptTokens: 8, maxTokens: 1, priority: 0 });
  assert.equal(show(step(scheduler).plan), 'urgent:4p low:1d*');
  assert.equal(kv.numFreeBlocks, 0);
  const plan = scheduler.schedule();
  assert.equal(show(plan), 'urgent:4p* -low');
  assert.equal(plan.numScheduledTokens, 4);
  assert.equal(kv.positions.has('low'), false);
  assert.deepEqual(scheduler.onStepDone(), [
    { seqId: 'urgent', reason: 'length', numOutputTokens: 1 },
  ]);
  // 'low' recomputes prompt 4 + output 3 = 7 positions in chunks, then decodes to 6 tokens.
  const rest = drain(scheduler);
  assert.deepEqual(rest.plans, ['low:5p', 'low:2p*', 'low:1d*', 'low:1d*']);
  assert.deepEqual(rest.finished, [{ seqId: 'low', reason: 'length', numOutputTokens: 6 }]);
});

test('a sequence that cannot fit even alone ends with kv_cache_full; a prompt that never fits is rejected', () => {
  const { kv, scheduler } = make({ maxNumTokensPerStep: 16, maxNumSeqs: 4 }, 2, 4);
  assert.deepEqual(scheduler.add({ seqId: 'huge', numPromptTokens: 9, maxTokens: 1 }), {
    ok: false,
    reason: 'too_long',
    message: "the prompt's 9 tokens exceed the KV cache's 8 positions",
  });
  assert.equal(scheduler.add({ seqId: 'x', numPromptTokens: 4, maxTokens: 100 }).ok, true);
  assert.equal(scheduler.add({ seqId: 'x', numPromptTokens: 4, maxTokens: 1 }).ok, false);
  assert.equal(scheduler.add({ seqId: 'y', numPromptTokens: 0, maxTokens: 1 }).ok, false);
  assert.equal(scheduler.add({ seqId: 'z', numPromptTokens: 1, maxTokens: 0.5 }).ok, false);
  const { plans, finished } = drain(scheduler);
  assert.deepEqual(plans, ['x:4p*', 'x:1d*', 'x:1d*', 'x:1d*', 'x:1d*', '!x:kv_cache_full']);
  assert.deepEqual(finished, [{ seqId: 'x', reason: 'kv_cache_full', numOutputTokens: 5 }]);
  assert.equal(kv.numUsedBlocks, 0);
});

test('cancellation frees blocks at once in every state', () => {
  const { kv, scheduler } = make({ maxNumTokensPerStep: 4, maxNumSeqs: 4 }, 4, 4);
  scheduler.add({ seqId: 'decoding', numPromptTokens: 4, maxTokens: 50 });
  scheduler.add({ seqId: 'prefilling', numPromptTokens: 8, maxTokens: 50 });
  step(scheduler);
  step(scheduler);
  assert.equal(scheduler.inspect('decoding')?.numOutputTokens, 2);
  assert.equal(scheduler.inspect('prefilling')?.numComputed, 3);
  assert.equal(kv.blocksOf('prefilling'), 1);

  // Running, mid-prefill.
  assert.equal(scheduler.cancel('prefilling'), true);
  assert.equal(kv.positions.has('prefilling'), false);
  assert.equal(scheduler.inspect('prefilling'), null);

  // Waiting (never ran): nothing to free, and it is gone.
  scheduler.add({ seqId: 'waiting', numPromptTokens: 4, maxTokens: 1 });
  assert.equal(scheduler.cancel('waiting'), true);
  assert.equal(scheduler.numWaiting, 0);

  // In flight: cancelled between schedule() and onStepDone(); its result is ignored.
  const plan = scheduler.schedule();
  assert.equal(show(plan), 'decoding:1d*');
  assert.throws(() => scheduler.schedule(), /before onStepDone/);
  assert.equal(scheduler.cancel('decoding'), true);
  assert.equal(kv.numUsedBlocks, 0);
  assert.deepEqual(scheduler.onStepDone([{ seqId: 'decoding', stopped: true }]), []);

  // Preempted (waiting again, holding nothing) and then cancelled.
  const small = make({ maxNumTokensPerStep: 16, maxNumSeqs: 4 }, 2, 4);
  small.scheduler.add({ seqId: 'old', numPromptTokens: 4, maxTokens: 50 });
  small.scheduler.add({ seqId: 'new', numPromptTokens: 4, maxTokens: 50 });
  const plans = [1, 2].map(() => show(step(small.scheduler).plan));
  assert.deepEqual(plans, ['old:4p* new:4p*', 'old:1d* -new']);
  assert.equal(small.scheduler.inspect('new')?.state, 'waiting');
  assert.equal(small.scheduler.cancel('new'), true);
  // Decoding, holding blocks.
  assert.equal(small.kv.blocksOf('old'), 2);
  assert.equal(small.scheduler.cancel('old'), true);
  assert.equal(small.kv.numUsedBlocks, 0);

  // Finished or unknown: false, nothing changes.
  assert.equal(scheduler.cancel('decoding'), false);
  assert.equal(scheduler.cancel('nobody'), false);
});

test('first come, first served; a lower priority number goes first', () => {
  const { scheduler } = make({ maxNumTokensPerStep: 16, maxNumSeqs: 1 });
  scheduler.add({ seqId: 'a', numPromptTokens: 2, maxTokens: 1 });
  scheduler.add({ seqId: 'b', numPromptTokens: 2, maxTokens: 1 });
  scheduler.add({ seqId: 'low', numPromptTokens: 2, maxTokens: 1, priority: 5 });
  scheduler.add({ seqId: 'urgent', numPromptTokens: 2, maxTokens: 1, priority: -1 });
  scheduler.add({ seqId: 'c', numPromptTokens: 2, maxTokens: 1 });
  assert.deepEqual(
    drain(scheduler).finished.map((f) => f.seqId),
    ['urgent', 'a', 'b', 'c', 'low'],
  );
});

test('a stopped sequence ends with reason stop and frees its blocks', () => {
  const { kv, scheduler } = make({ maxNumTokensPerStep: 16, maxNumSeqs: 2 });
  scheduler.add({ seqId: 'a', numPromptTokens: 3, maxTokens: 10 });
  step(scheduler);
  assert.deepEqual(step(scheduler, ['a']).finished, [
    { seqId: 'a', reason: 'stop', numOutputTokens: 2 },
  ]);
  assert.equal(kv.numUsedBlocks, 0);
});

test('property: random arrivals, lengths, stops and cancellations keep every invariant', () => {
  // How often each path ran over all seeds, so the test shows it covered them.
  const seen = { preempted: 0, kvCacheFull: 0, stop: 0, length: 0, cancelled: 0, rejected: 0 };
  for (let seed = 1; seed <= 40; seed++) {
    const random = createRandom(seed);
    const options = { maxNumTokensPerStep: 1 + random.int(32), maxNumSeqs: 1 + random.int(6) };
    const kv = new FakeKv(2 + random.int(20), 1 + random.int(8));
    const scheduler = new Scheduler(kv, options);
    const capacity = kv.numTotalBlocks * kv.blockSize;
    const requested = new Map<string, number>(); // id → maxTokens
    const outcome = new Map<string, string>();
    const outputs = new Map<string, number>();
    const end = (id: string, how: string): void => {
      assert.equal(outcome.has(id), false, `${id} ended twice (seed ${seed})`);
      outcome.set(id, how);
    };
    const live = (): string[] => [...requested.keys()].filter((id) => !outcome.has(id));

    for (let stepIndex = 0; stepIndex < 3000; stepIndex++) {
      const arriving = stepIndex < 200 ? random.int(3) : 0;
      for (let i = 0; i < arriving; i++) {
        const id = `s${requested.size}`;
        const maxTokens = 1 + random.int(20);
        const added = scheduler.add({
          seqId: id,
          numPromptTokens: 1 + random.int(Math.ceil(capacity * 1.2)),
          maxTokens,
          priority: random.int(3),
        });
        requested.set(id, maxTokens);
        if (!added.ok) {
          assert.equal(added.reason, 'too_long');
          end(id, 'rejected');
        }
      }
      if (random.next() < 0.1) {
        const candidates = live();
        if (candidates.length > 0) {
          const id = candidates[random.int(candidates.length)]!;
          assert.equal(scheduler.cancel(id), true);
          assert.equal(kv.positions.has(id), false, 'cancel frees at once');
          end(id, 'cancelled');
        }
      }

      const plan = scheduler.schedule();
      const ids = plan.scheduled.map((s) => s.seqId);
      assert.equal(new Set(ids).size, ids.length, 'scheduled once a step');
      const sum = plan.scheduled.reduce((n, s) => n + s.numTokens, 0);
      assert.equal(plan.numScheduledTokens, sum);
      assert.ok(sum <= options.maxNumTokensPerStep, `over budget (seed ${seed})`);
      assert.ok(plan.scheduled.length <= options.maxNumSeqs);
      assert.ok(scheduler.numRunning <= options.maxNumSeqs);
      assert.ok(kv.numUsedBlocks <= kv.numTotalBlocks);
      for (const s of plan.scheduled) {
        assert.ok(s.numTokens >= 1);
        if (s.phase === 'decode') assert.equal(s.numTokens, 1);
        // The allocator holds exactly what is computed plus this step's chunk.
        assert.equal(kv.positions.get(s.seqId), s.startPosition + s.numTokens);
      }
      for (const id of plan.preempted) {
        seen.preempted += 1;
        assert.equal(scheduler.inspect(id)?.state, 'waiting');
        assert.equal(kv.positions.has(id), false);
      }
      for (const f of plan.finished) {
        assert.equal(f.reason, 'kv_cache_full');
        end(f.seqId, f.reason);
      }
      // Cancel something in flight now and then: its result must be ignored.
      if (random.next() < 0.05 && ids.length > 0) {
        const id = ids[random.int(ids.length)]!;
        assert.equal(scheduler.cancel(id), true);
        end(id, 'cancelled');
      }
      const stopped = plan.scheduled
        .filter((s) => s.samples && random.next() < 0.05)
        .map((s) => ({ seqId: s.seqId, stopped: true }));
      for (const s of plan.scheduled)
        if (s.samples && !outcome.has(s.seqId)) {
          outputs.set(s.seqId, (outputs.get(s.seqId) ?? 0) + 1);
        }
      for (const f of scheduler.onStepDone(stopped)) {
        end(f.seqId, f.reason);
        assert.equal(kv.positions.has(f.seqId), false, 'finished frees');
        if (f.reason === 'length') assert.equal(f.numOutputTokens, requested.get(f.seqId));
        assert.ok(f.numOutputTokens <= requested.get(f.seqId)!);
      }
      // Tokens are counted once even across preemption: the scheduler's count matches ours.
      for (const id of live()) {
        const seen = scheduler.inspect(id);
        assert.notEqual(seen, null, `${id} lost (seed ${seed})`);
        assert.equal(seen!.numOutputTokens, outputs.get(id) ?? 0);
        if (seen!.state === 'waiting') assert.equal(kv.positions.has(id), false);
        else assert.equal(kv.positions.get(id) ?? 0, seen!.numComputed);
      }
      if (stepIndex >= 200 && scheduler.numRunning + scheduler.numWaiting === 0) break;
    }
    assert.equal(scheduler.numRunning + scheduler.numWaiting, 0, `seed ${seed} drained`);
    assert.deepEqual(live(), [], `every request ended (seed ${seed})`);
    assert.equal(kv.numUsedBlocks, 0);
    assert.ok(requested.size > 100);
    for (const how of outcome.values()) {
      if (how === 'kv_cache_full') seen.kvCacheFull += 1;
      else if (how === 'stop' || how === 'length' || how === 'cancelled' || how === 'rejected')
        seen[how] += 1;
    }
  }
  console.log(`scheduler property test: ${JSON.stringify(seen)}`);
  for (const [path, count] of Object.entries(seen)) assert.ok(count > 0, `${path} never ran`);
});

/**
 * A fake with a prefix cache: a sequence's positions stay "cached" after it frees them (as a
 * real cache keeps blocks until evicted), and `cachedTokens` can seed them.
 */
class CachingFakeKv extends FakeKv {
  readonly cachedTokens = new Map<string, number>();
  readonly admits: [string, number][] = [];

  admit(seqId: string, numTokens: number): number {
    this.admits.push([seqId, numTokens]);
    // A hit takes blocks of its own here (a real one may share them): at most what is free.
    const cached = Math.min(
      this.cachedTokens.get(seqId) ?? 0,
      numTokens - 1,
      this.numFreeBlocks * this.blockSize,
    );
    const aligned = Math.floor(cached / this.blockSize) * this.blockSize;
    if (aligned > 0) this.positions.set(seqId, aligned);
    return aligned;
  }

  override free(seqId: string): void {
    const positions = this.positions.get(seqId) ?? 0;
    if (positions > (this.cachedTokens.get(seqId) ?? 0)) this.cachedTokens.set(seqId, positions);
    super.free(seqId);
  }
}

test('admission starts from the positions the allocator already holds (prefix cache)', () => {
  const kv = new CachingFakeKv(100, 4);
  kv.cachedTokens.set('b', 8);
  kv.cachedTokens.set('c', 8);
  const scheduler = new Scheduler(kv, { maxNumTokensPerStep: 16, maxNumSeqs: 4 });
  scheduler.add({ seqId: 'a', numPromptTokens: 10, maxTokens: 2 });
  scheduler.add({ seqId: 'b', numPromptTokens: 10, maxTokens: 2 });
  // c's whole 8-token prompt is cached, but its last token must run: 4 positions reused.
  scheduler.add({ seqId: 'c', numPromptTokens: 8, maxTokens: 2 });
  const first = step(scheduler).plan;
  assert.equal(show(first), 'a:10p* b:2p* c:4p*');
  assert.deepEqual(first.admitted, [
    { seqId: 'a', numTokens: 10, numCachedTokens: 0 },
    { seqId: 'b', numTokens: 10, numCachedTokens: 8 },
    { seqId: 'c', numTokens: 8, numCachedTokens: 4 },
  ]);
  assert.deepEqual(kv.admits, [
    ['a', 10],
    ['b', 10],
    ['c', 8],
  ]);
  assert.deepEqual(drain(scheduler).plans, ['a:1d* b:1d* c:1d*']);
});

test('a preempted sequence is admitted again with prompt + output, reusing what is cached', () => {
  // The preemption scenario above, with a cache: b recomputes only its last position.
  const kv = new CachingFakeKv(4, 4);
  const scheduler = new Scheduler(kv, { maxNumTokensPerStep: 16, maxNumSeqs: 2 });
  scheduler.add({ seqId: 'a', numPromptTokens: 4, maxTokens: 8 });
  scheduler.add({ seqId: 'b', numPromptTokens: 4, maxTokens: 8 });
  const { plans, finished } = drain(scheduler);
  assert.deepEqual(plans, [
    'a:4p* b:4p*',
    'a:1d* b:1d*',
    'a:1d* b:1d*',
    'a:1d* b:1d*',
    'a:1d* b:1d*',
    'a:1d* -b',
    'a:1d*',
    'a:1d*',
    // b had computed 8 positions: 8 of its 9 tokens come back from the cache.
    'b:1d*',
    'b:1d*',
    'b:1d*',
  ]);
  assert.deepEqual(kv.admits.slice(-1), [['b', 9]]);
  assert.deepEqual(
    finished.map((f) => `${f.seqId}:${f.numOutputTokens}`),
    ['a:8', 'b:8'],
  );
});

/** A cache where `waitOn` names the running sequence computing a waiting one's prefix. */
class SharingFakeKv extends CachingFakeKv {
  readonly waitOn = new Map<string, string>();
  readonly asked: [string, number, string[]][] = [];

  computingShared(
    seqId: string,
    _numTokens: number,
    numCached: number,
    computing: readonly string[],
  ): boolean {
    this.asked.push([seqId, numCached, [...computing]]);
    const source = this.waitOn.get(seqId);
    return source !== undefined && computing.includes(source) && numCached < 8;
  }
}

test('a head whose prefix a running sequence is computing waits for it, without holding the queue', () => {
  const kv = new SharingFakeKv(100, 4);
  kv.waitOn.set('b', 'a'); // b's first 8 tokens are a's
  const scheduler = new Scheduler(kv, { maxNumTokensPerStep: 6, maxNumSeqs: 4 });
  scheduler.add({ seqId: 'a', numPromptTokens: 10, maxTokens: 2 });
  scheduler.add({ seqId: 'b', numPromptTokens: 10, maxTokens: 2 });
  scheduler.add({ seqId: 'c', numPromptTokens: 3, maxTokens: 2 });
  assert.equal(show(step(scheduler).plan), 'a:6p');
  // b waits (its admission undone: no blocks held); c behind it is admitted.
  const second = step(scheduler).plan;
  assert.equal(show(second), 'a:4p* c:2p');
  assert.deepEqual(kv.asked, [
    ['a', 0, []],
    ['b', 0, ['a']],
    ['c', 0, ['a']],
  ]);
  assert.equal(kv.blocksOf('b'), 0);
  assert.equal(scheduler.inspect('b')?.state, 'waiting');
  kv.cachedTokens.set('b', 8); // a computed them: now in the cache
  const third = step(scheduler).plan;
  assert.equal(show(third), 'a:1d* b:2p* c:1p*'); // running order: by arrival
  assert.deepEqual(third.admitted, [{ seqId: 'b', numTokens: 10, numCachedTokens: 8 }]);
  drain(scheduler);

  // Static batching forms its batch at once: nobody is asked to wait.
  const staticKv = new SharingFakeKv(100, 4);
  staticKv.waitOn.set('b', 'a');
  const batch = new Scheduler(staticKv, {
    maxNumTokensPerStep: 6,
    maxNumSeqs: 4,
    batching: 'static',
  });
  batch.add({ seqId: 'a', numPromptTokens: 10, maxTokens: 2 });
  batch.add({ seqId: 'b', numPromptTokens: 10, maxTokens: 2 });
  assert.deepEqual(
    step(batch).plan.admitted.map((a) => a.seqId),
    ['a', 'b'],
  );
  assert.deepEqual(staticKv.asked, []);
});

test('a paused sequence is not scheduled and keeps its blocks; a paused waiting one is not admitted', () => {
  const { kv, scheduler } = make({ maxNumTokensPerStep: 16, maxNumSeqs: 4 }, 100, 4);
  scheduler.add({ seqId: 'a', numPromptTokens: 4, maxTokens: 6 });
  scheduler.add({ seqId: 'b', numPromptTokens: 4, maxTokens: 6 });
  assert.equal(show(step(scheduler).plan), 'a:4p* b:4p*');
  assert.equal(scheduler.pause('a'), true);
  assert.equal(show(step(scheduler).plan), 'b:1d*');
  assert.equal(show(step(scheduler).plan), 'b:1d*');
  assert.deepEqual(scheduler.inspect('a'), {
    state: 'running',
    paused: true,
    numComputed: 4,
    numOutputTokens: 1,
  });
  assert.equal(kv.blocksOf('a'), 1);
  assert.equal(scheduler.numPausedBlocks, 1);
  assert.deepEqual(scheduler.counts(), { running: 1, waiting: 0, paused: 1 });
  scheduler.add({ seqId: 'c', numPromptTokens: 4, maxTokens: 1 });
  scheduler.pause('c');
  assert.deepEqual(scheduler.counts(), { running: 1, waiting: 0, paused: 2 });
  assert.equal(scheduler.resume('a'), true);
  assert.equal(show(step(scheduler).plan), 'a:1d* b:1d*');
  scheduler.resume('c');
  assert.equal(show(step(scheduler).plan), 'a:1d* b:1d* c:4p*');
  assert.equal(scheduler.pause('nobody'), false);
  assert.equal(scheduler.resume('nobody'), false);
  drain(scheduler);
  assert.equal(kv.numUsedBlocks, 0);
});

test('paused sequences over maxPausedBlocks are preempted, oldest-paused first', () => {
  const { kv, scheduler } = make(
    { maxNumTokensPerStep: 32, maxNumSeqs: 4, maxPausedBlocks: 2 },
    100,
    4,
  );
  scheduler.add({ seqId: 'a', numPromptTokens: 6, maxTokens: 4 }); // 2 blocks
  scheduler.add({ seqId: 'b', numPromptTokens: 6, maxTokens: 4 }); // 2 blocks
  scheduler.add({ seqId: 'c', numPromptTokens: 2, maxTokens: 4 });
  assert.equal(show(step(scheduler).plan), 'a:6p* b:6p* c:2p*');
  scheduler.pause('b');
  scheduler.pause('a');
  // 4 paused blocks > 2: b, paused first, goes; a's 2 blocks are within the budget.
  const plan = step(scheduler).plan;
  assert.equal(show(plan), 'c:1d* -b');
  assert.deepEqual(plan.pausedEvictions, ['b']);
  assert.deepEqual(scheduler.inspect('b'), {
    state: 'waiting',
    paused: true,
    numComputed: 0,
    numOutputTokens: 1,
  });
  assert.equal(kv.blocksOf('b'), 0);
  assert.equal(kv.blocksOf('a'), 2);
  // Still paused: not admitted, though blocks are free.
  assert.equal(show(step(scheduler).plan), 'c:1d*');
  scheduler.resume('b');
  scheduler.resume('a');
  // b recomputes prompt + its one output token, then samples its second.
  assert.equal(show(step(scheduler).plan), 'a:1d* b:7p* c:1d*');
  drain(scheduler);
  assert.equal(kv.numUsedBlocks, 0);
});

test('out of blocks, a paused sequence is preempted before any running one', () => {
  const { scheduler } = make({ maxNumTokensPerStep: 16, maxNumSeqs: 4 }, 3, 4);
  scheduler.add({ seqId: 'a', numPromptTokens: 4, maxTokens: 8 });
  scheduler.add({ seqId: 'b', numPromptTokens: 4, maxTokens: 8 });
  assert.equal(show(step(scheduler).plan), 'a:4p* b:4p*');
  scheduler.pause('a');
  const plans = [1, 2, 3, 4, 5].map(() => step(scheduler).plan);
  // b (the newest, which would otherwise preempt itself) takes a's block at position 8.
  assert.deepEqual(plans.map(show), ['b:1d*', 'b:1d*', 'b:1d*', 'b:1d*', 'b:1d* -a']);
  assert.deepEqual(plans[4]!.pausedEvictions, ['a']);
  scheduler.resume('a');
  const { finished } = drain(scheduler);
  assert.deepEqual(
    finished.map((f) => `${f.seqId}:${f.reason}:${f.numOutputTokens}`),
    ['b:length:8', 'a:length:8'],
  );
});

test('a paused sequence gives its blocks to the waiting head', () => {
  const { scheduler } = make({ maxNumTokensPerStep: 16, maxNumSeqs: 4 }, 3, 4);
  scheduler.add({ seqId: 'a', numPromptTokens: 8, maxTokens: 4 });
  assert.equal(show(step(scheduler).plan), 'a:8p*');
  scheduler.pause('a');
  scheduler.add({ seqId: 'b', numPromptTokens: 8, maxTokens: 1 });
  const plan = step(scheduler).plan;
  assert.equal(show(plan), 'b:8p* -a');
  assert.deepEqual(plan.pausedEvictions, ['a']);
  scheduler.resume('a');
  assert.equal(show(step(scheduler).plan), 'a:9p*');
});

test('static batching: a batch is formed only when nothing runs, then runs to completion', () => {
  const { scheduler } = make({ maxNumTokensPerStep: 4, maxNumSeqs: 3, batching: 'static' }, 100, 4);
  scheduler.add({ seqId: 'a', numPromptTokens: 2, maxTokens: 2 });
  scheduler.add({ seqId: 'b', numPromptTokens: 6, maxTokens: 3 });
  scheduler.add({ seqId: 'c', numPromptTokens: 2, maxTokens: 1 });
  scheduler.add({ seqId: 'd', numPromptTokens: 2, maxTokens: 1 });
  const first = step(scheduler).plan;
  // a, b and c form the batch (c with no tokens yet: the budget is spent); d waits.
  assert.equal(show(first), 'a:2p* b:2p');
  assert.deepEqual(
    first.admitted.map((a) => a.seqId),
    ['a', 'b', 'c'],
  );
  assert.deepEqual(drain(scheduler).plans, [
    'a:1d* b:3p',
    'b:1p* c:2p*',
    'b:1d*',
    'b:1d*',
    // Only now, with the batch done, is d admitted.
    'd:2p*',
  ]);
});

// Among what this covers: a preempted sequence whose cached prefix plus the rest exceed the
// whole cache, at the head with nothing running, must end (kv_cache_full), not stall the queue.
test('property: pauses, a prefix cache and both batching modes keep every invariant', () => {
  const seen = { paused: 0, pausedEvictions: 0, cachedAdmissions: 0, preempted: 0, static: 0 };
  for (let seed = 1; seed <= 40; seed++) {
    const random = createRandom(1000 + seed);
    const isStatic = random.next() < 0.3;
    const options: SchedulerOptions = {
      maxNumTokensPerStep: 1 + random.int(32),
      maxNumSeqs: 1 + random.int(6),
      maxPausedBlocks: random.int(6),
      batching: isStatic ? 'static' : 'continuous',
    };
    if (isStatic) seen.static += 1;
    const kv = new CachingFakeKv(4 + random.int(20), 1 + random.int(8));
    const scheduler = new Scheduler(kv, options);
    const capacity = kv.numTotalBlocks * kv.blockSize;
    const ended = new Set<string>();
    const paused = new Set<string>();
    let added = 0;
    for (let stepIndex = 0; stepIndex < 5000; stepIndex++) {
      for (let i = 0; stepIndex < 150 && i < random.int(3); i++) {
        const id = `s${added++}`;
        const result = scheduler.add({
          seqId: id,
          numPromptTokens: 1 + random.int(capacity),
          maxTokens: 1 + random.int(16),
        });
        assert.equal(result.ok, true);
      }
      const live = [...Array(added).keys()].map((i) => `s${i}`).filter((id) => !ended.has(id));
      // Pause or resume at random while arrivals last; then resume everything to drain.
      for (const id of live) {
        if (stepIndex >= 150 || (paused.has(id) && random.next() < 0.2)) {
          scheduler.resume(id);
          paused.delete(id);
        } else if (!paused.has(id) && random.next() < 0.05) {
          scheduler.pause(id);
          paused.add(id);
          seen.paused += 1;
        }
      }
      const runningBefore = live.filter((id) => scheduler.inspect(id)?.state === 'running');
      const plan = scheduler.schedule();
      assert.ok(plan.numScheduledTokens <= options.maxNumTokensPerStep);
      assert.ok(plan.scheduled.length <= options.maxNumSeqs, `seed ${seed}`);
      assert.ok(kv.numUsedBlocks <= kv.numTotalBlocks);
      assert.ok(
        scheduler.numPausedBlocks <= options.maxPausedBlocks!,
        `paused budget, seed ${seed}`,
      );
      // Static: nothing joins a batch; one emptied by paused evictions takes the next batch.
      if (isStatic && plan.admitted.length > 0)
        assert.ok(
          runningBefore.every((id) => plan.pausedEvictions.includes(id)),
          `static: no joining, seed ${seed}`,
        );
      for (const s of plan.scheduled) {
        assert.equal(paused.has(s.seqId), false, 'a paused sequence is never scheduled');
        assert.equal(kv.positions.get(s.seqId), s.startPosition + s.numTokens);
      }
      for (const a of plan.admitted) {
        assert.equal(paused.has(a.seqId), false, 'a paused sequence is never admitted');
        assert.ok(a.numCachedTokens <= a.numTokens - 1);
        assert.equal(a.numCachedTokens % kv.blockSize, 0);
        if (a.numCachedTokens > 0) seen.cachedAdmissions += 1;
      }
      seen.preempted += plan.preempted.length;
      seen.pausedEvictions += plan.pausedEvictions.length;
      for (const id of plan.pausedEvictions) assert.ok(plan.preempted.includes(id));
      for (const id of plan.preempted) assert.equal(kv.positions.has(id), false);
      for (const f of plan.finished) ended.add(f.seqId);
      for (const f of scheduler.onStepDone()) ended.add(f.seqId);
      for (const id of live)
        if (!ended.has(id)) {
          const state = scheduler.inspect(id)!;
          assert.equal(state.paused, paused.has(id));
          if (state.state === 'waiting') assert.equal(kv.positions.has(id), false);
          else assert.equal(kv.positions.get(id) ?? 0, state.numComputed);
        }
      if (stepIndex >= 150 && scheduler.numRunning + scheduler.numWaiting === 0) break;
    }
    assert.equal(scheduler.numRunning + scheduler.numWaiting, 0, `seed ${seed} drained`);
    assert.equal(ended.size, added);
    assert.equal(kv.numUsedBlocks, 0);
  }
  console.log(`scheduler pause/cache property test: ${JSON.stringify(seen)}`);
  for (const [path, count] of Object.entries(seen)) assert.ok(count > 0, `${path} never ran`);
});
