// Which replica last served a prompt prefix: a bounded LRU map from the prefix key (the
// endpoint and the prompt's first block, prompt-prefix.ts) to a replica id. A replica that
// served a prefix holds its KV blocks in its prefix cache, so sending the same prefix there
// again skips that prefill. Bounded because prompts are user input: the least recently used
// key goes first. A JavaScript Map iterates in insertion order, so re-inserting a key on
// every use keeps the oldest first.

export class PrefixAffinity {
  private readonly entries = new Map<string, string>();

  constructor(readonly capacity: number) {}

  /** The replica that last served `key`, if remembered (and marks the key recently used). */
  get(key: string): string | undefined {
    const replicaId = this.entries.get(key);
    if (replicaId !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, replicaId);
    }
    return replicaId;
  }

  /** Remembers that `replicaId` served `key`, forgetting the least recently used beyond capacity. */
  set(key: string, replicaId: string): void {
    this.entries.delete(key);
    this.entries.set(key, replicaId);
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}
