// Which models a pool worker keeps loaded: least recently used first out, within a memory
// budget. Pure bookkeeping (no clock reads, no I/O): the worker loads and unloads, this says
// what to drop. A model in use (requests running on it) is never chosen; a model larger than
// the whole budget is still held — alone — rather than refused: serving it slowly beats not
// serving it.
//
//   order (a Map keeps insertion order; a use re-inserts at the end):
//     least recently used ─▶ [m3][m7][m1] … [m9] ◀─ most recently used
//   invariant once `evictFor` ran: sum(bytes) <= budget, unless every other entry is in use
//   or the newest alone passes it.

export interface CachedModel<T> {
  readonly key: string;
  readonly value: T;
  /** Measured once loaded. */
  readonly bytes: number;
  readonly loadedAtMs: number;
  lastUsedMs: number;
  /** Requests running on it now: > 0 keeps it loaded. */
  users: number;
  /** Requests it served. */
  requests: number;
}

export class ModelCache<T> {
  private readonly entries = new Map<string, CachedModel<T>>();
  private total = 0;

  constructor(readonly budgetBytes: number) {}

  get residentBytes(): number {
    return this.total;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Looks a model up without marking it used. */
  peek(key: string): CachedModel<T> | undefined {
    return this.entries.get(key);
  }

  /** Marks it used now (most recent) and returns it. */
  use(key: string, nowMs: number): CachedModel<T> | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    entry.lastUsedMs = nowMs;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry;
  }

  /** Adds a model just loaded, as the most recently used. */
  add(key: string, value: T, bytes: number, nowMs: number): CachedModel<T> {
    this.remove(key);
    const entry: CachedModel<T> = {
      key,
      value,
      bytes,
      loadedAtMs: nowMs,
      lastUsedMs: nowMs,
      users: 0,
      requests: 0,
    };
    this.entries.set(key, entry);
    this.total += bytes;
    return entry;
  }

  remove(key: string): CachedModel<T> | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    this.total -= entry.bytes;
    return entry;
  }

  /**
   * Removes least recently used models not in use (and not `keep`) until `incomingBytes`
   * more fit in the budget, or nothing more can go. Returns what was removed, oldest first:
   * the caller unloads them.
   */
  evictFor(incomingBytes: number, keep: string | null = null): CachedModel<T>[] {
    const removed: CachedModel<T>[] = [];
    for (const entry of [...this.entries.values()]) {
      if (this.total + incomingBytes <= this.budgetBytes) break;
      if (entry.key === keep || entry.users > 0) continue;
      this.remove(entry.key);
      removed.push(entry);
    }
    return removed;
  }

  /** Most recently used first. */
  list(): CachedModel<T>[] {
    return [...this.entries.values()].reverse();
  }
}
