// The batcher's deadline heap against a sorted list, with entries leaving early (dispatched
// or cancelled) at random and the heap compacted along the way (seeded).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRandom } from '../../../src/core/random.ts';
import { DeadlineHeap } from '../../../src/worker/batching/deadline-heap.ts';

interface Item {
  readonly id: number;
  readonly deadline: number;
  gone: boolean;
}

void test('deadlines come out earliest first; entries gone meanwhile never do', () => {
  for (let seed = 1; seed <= 20; seed++) {
    const random = createRandom(seed);
    const heap = new DeadlineHeap<Item>(
      (item) => item.deadline,
      (item) => item.gone,
    );
    const live: Item[] = [];
    let id = 0;
    for (let step = 0; step < 2_000; step++) {
      const roll = random.next();
      if (roll < 0.5) {
        const item = { id: id++, deadline: random.int(1_000), gone: false };
        heap.push(item);
        live.push(item);
      } else if (roll < 0.75 && live.length > 0) {
        const [item] = live.splice(random.int(live.length), 1);
        item!.gone = true; // left the queue another way
        heap.compact(live.length);
      } else {
        const expected = live.reduce<Item | null>(
          (best, item) => (best === null || item.deadline < best.deadline ? item : best),
          null,
        );
        const taken = heap.take();
        if (expected === null) assert.equal(taken, null);
        else {
          assert.ok(taken !== null && !taken.gone && live.includes(taken), 'a live entry');
          assert.equal(taken.deadline, expected.deadline, `seed ${seed}, step ${step}`);
          live.splice(live.indexOf(taken), 1);
        }
      }
      assert.ok(heap.size <= 2 * live.length + 1024 + 1, 'gone entries are compacted away');
    }
  }
});
