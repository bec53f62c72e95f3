// An intrusive doubly-linked FIFO: the batcher's per-(shape, priority) queue. Entries carry
// their own links, so a cancelled or expired request leaves the middle of a queue in O(1)
// without searching or shifting an array.
//
//   head ─► [a] ⇄ [b] ⇄ [c] ◄─ tail        entry.list === this list while queued, else null

export interface ListNode<N extends ListNode<N>> {
  prev: N | null;
  next: N | null;
  list: RequestList<N> | null;
}

export class RequestList<N extends ListNode<N>> {
  head: N | null = null;
  tail: N | null = null;
  size = 0;

  push(node: N): void {
    node.list = this;
    node.prev = this.tail;
    node.next = null;
    if (this.tail === null) this.head = node;
    else this.tail.next = node;
    this.tail = node;
    this.size += 1;
  }

  remove(node: N): void {
    if (node.list !== this) return;
    if (node.prev === null) this.head = node.next;
    else node.prev.next = node.next;
    if (node.next === null) this.tail = node.prev;
    else node.next.prev = node.prev;
    node.prev = null;
    node.next = null;
    node.list = null;
    this.size -= 1;
  }
}
