// Listens on PostgreSQL notification channels (LISTEN/NOTIFY) on one dedicated connection, so
// control planes learn of each other's changes at once instead of at their next poll:
//
//   kiln_store_changed      an API write committed on some control plane → the leader's
//                           reconciler runs a pass now (not at its next 500 ms tick)
//   kiln_routing_published  the leader stored a routing snapshot → followers read it now (not
//                           at their next 250 ms read)
//
// Notifications are a hint, never the only way: the periodic passes and reads stay, so a
// notification lost while the connection was down costs one period, not correctness. After a
// reconnect every handler is called once (a change may have been missed meanwhile).

import pg from 'pg';

export const storeChangedChannel = 'kiln_store_changed';
export const routingPublishedChannel = 'kiln_routing_published';

export class PgListener {
  #client: pg.Client | null = null;
  #closed = false;
  #retry: NodeJS.Timeout | null = null;
  #lastProblem = '';

  constructor(
    private readonly url: string,
    private readonly handlers: Readonly<Record<string, () => void>>,
    private readonly log: (message: string) => void = () => undefined,
    private readonly retryMs = 1000,
  ) {}

  /** Connects (and keeps reconnecting) in the background. */
  start(): void {
    void this.connect(false);
  }

  /** Resolves once listening (or closed): for tests that must not miss the first notification. */
  async listening(): Promise<void> {
    while (this.#client === null && !this.#closed) await new Promise((r) => setTimeout(r, 5));
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#retry !== null) clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(reconnected: boolean): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 10_000 });
    const lost = (error?: Error): void => {
      if (this.#client !== client) return;
      this.#client = null;
      void client.end().catch(() => undefined);
      this.problem(`notifications lost: ${error?.message ?? 'connection ended'}`);
      this.schedule();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (message) => this.handlers[message.channel]?.());
    try {
      await client.connect();
      for (const channel of Object.keys(this.handlers)) await client.query(`LISTEN ${channel}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      this.problem(`notifications not received: ${(error as Error).message}`);
      this.schedule();
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#lastProblem = '';
    if (reconnected) for (const handler of Object.values(this.handlers)) handler();
  }

  private schedule(): void {
    if (this.#closed || this.#retry !== null) return;
    this.#retry = setTimeout(() => {
      this.#retry = null;
      void this.connect(true);
    }, this.retryMs);
    this.#retry.unref();
  }

  private problem(message: string): void {
    if (message !== this.#lastProblem) this.log(message);
    this.#lastProblem = message;
  }
}
