// A read-write lock for async work in one process: many readers at once, or one writer.
// First come, first served: a reader arriving while a writer waits queues behind it, so a
// steady stream of readers cannot starve the writer.

export class ReadWriteLock {
  private readers = 0;
  private writing = false;
  private readonly waiting: { readonly write: boolean; readonly grant: () => void }[] = [];

  /** Runs `work` while holding the lock shared with other readers. */
  read<T>(work: () => Promise<T>): Promise<T> {
    return this.hold(false, work);
  }

  /** Runs `work` while holding the lock alone. */
  write<T>(work: () => Promise<T>): Promise<T> {
    return this.hold(true, work);
  }

  private async hold<T>(write: boolean, work: () => Promise<T>): Promise<T> {
    if (this.waiting.length === 0 && this.free(write)) this.take(write);
    else await new Promise<void>((grant) => this.waiting.push({ write, grant }));
    try {
      return await work();
    } finally {
      if (write) this.writing = false;
      else this.readers -= 1;
      this.next();
    }
  }

  private free(write: boolean): boolean {
    return write ? !this.writing && this.readers === 0 : !this.writing;
  }

  private take(write: boolean): void {
    if (write) this.writing = true;
    else this.readers += 1;
  }

  /** Grants the lock to the waiters at the head of the queue that can have it now. */
  private next(): void {
    for (;;) {
      const head = this.waiting[0];
      if (head === undefined || !this.free(head.write)) return;
      this.waiting.shift();
      this.take(head.write);
      head.grant();
      if (head.write) return;
    }
  }
}
