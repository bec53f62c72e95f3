// The simulator's pending events, earliest first: a binary min-heap on (atMs, seq). The
// sequence number breaks ties in insertion order, so two events at the same instant always
// run in the same order and a seeded run repeats exactly.
//
//   index:   0        1    2      3  4  5  6
//   tree:   [root] [l0] [r0] [l1 ...]      children of i at 2i+1, 2i+2; parent (i-1)>>1

export interface HeapEvent {
  readonly atMs: number;
  /** Set by push. */
  seq: number;
}

export class EventHeap<E extends HeapEvent> {
  readonly #items: E[] = [];
  #nextSeq = 0;

  get size(): number {
    return this.#items.length;
  }

  /** The earliest event's time; Infinity when empty. */
  peekTime(): number {
    return this.#items[0]?.atMs ?? Infinity;
  }

  push(event: E): void {
    event.seq = this.#nextSeq++;
    const items = this.#items;
    items.push(event);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const above = items[parent];
      if (above === undefined || !before(event, above)) break;
      items[i] = above;
      i = parent;
    }
    items[i] = event;
  }

  pop(): E | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const leftItem = items[left];
      const rightItem = items[right];
      if (leftItem === undefined) break;
      const child = rightItem !== undefined && before(rightItem, leftItem) ? right : left;
      const childItem = items[child];
      if (childItem === undefined || !before(childItem, last)) break;
      items[i] = childItem;
      i = child;
    }
    items[i] = last;
    return top;
  }
}

function before(a: HeapEvent, b: HeapEvent): boolean {
  return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);
}
