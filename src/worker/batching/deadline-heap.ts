// The batcher's queued deadlines, earliest first: a binary min-heap, so finding what has
// expired (and when the next deadline falls) touches only the due entries, not the whole
// queue. Entries leave the queues by other ways too (dispatched, cancelled): the heap keeps
// them until they surface (`isGone` says so) or until it is rebuilt from the live ones.

export class DeadlineHeap<E> {
  private items: E[] = [];

  constructor(
    private readonly deadlineOf: (entry: E) => number,
    /** Whether an entry has left the queues since it was pushed. */
    private readonly isGone: (entry: E) => boolean,
  ) {}

  get size(): number {
    return this.items.length;
  }

  push(entry: E): void {
    const items = this.items;
    items.push(entry);
    let i = items.length - 1;
    const deadline = this.deadlineOf(entry);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.deadlineOf(items[parent]!) <= deadline) break;
      items[i] = items[parent]!;
      i = parent;
    }
    items[i] = entry;
  }

  /** The live entry with the earliest deadline (gone ones on top are dropped), or null. */
  peek(): E | null {
    while (this.items.length > 0 && this.isGone(this.items[0]!)) this.pop();
    return this.items[0] ?? null;
  }

  /** Removes and returns the live entry with the earliest deadline, or null. */
  take(): E | null {
    const top = this.peek();
    if (top !== null) this.pop();
    return top;
  }

  /** Keeps only live entries, when gone ones outnumber them (bounds the heap's memory). */
  compact(live: number): void {
    if (this.items.length <= 2 * live + 1024) return;
    const kept = this.items.filter((entry) => !this.isGone(entry));
    this.items = [];
    for (const entry of kept) this.push(entry);
  }

  private pop(): void {
    const items = this.items;
    const last = items.pop()!;
    if (items.length === 0) return;
    const deadline = this.deadlineOf(last);
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child =
        right < items.length && this.deadlineOf(items[right]!) < this.deadlineOf(items[left]!)
          ? right
          : left;
      if (this.deadlineOf(items[child]!) >= deadline) break;
      items[i] = items[child]!;
      i = child;
    }
    items[i] = last;
  }
}
