// One collection of the namespace, kept current: list once, then watch from the list's
// resourceVersion. A stream that ends (the server's timeout, a dropped connection) is resumed
// from the last resourceVersion seen, so nothing is missed and nothing replayed; a 410 Gone
// (that version was compacted away) relists. Failures (403, the API server down) are reported
// and retried with a capped backoff: the control plane never crash-loops on its watches.
//
//   list ──► items, rv ──► watch(rv) ──event──► items, rv ──► ...
//     ▲                     │ ended: watch(rv) again
//     └──── 410 Gone ◄──────┘ error: wait (0.5 s … 30 s), then watch(rv) or list

import type {
  KubeApi,
  KubeApiError,
  KubeCollection,
  KubeItem,
  KubeWatchEvent,
  KubeWatchHandle,
} from './kube-api.ts';

export interface ResumableWatchOptions {
  readonly api: KubeApi;
  readonly collection: KubeCollection;
  readonly labelSelector: string;
  /** Called after every change of `items` (a list, an event). */
  readonly onChange: () => void;
  /** A failed list or watch (retried); null once one succeeds again. */
  readonly onProblem: (problem: KubeApiError | null) => void;
  /** First retry delay (doubling to 30 s); default 500 ms. */
  readonly retryMs?: number;
}

const maxRetryMs = 30_000;

export class ResumableWatch {
  /** The collection's objects by name. */
  readonly items = new Map<string, KubeItem>();
  /** How often it listed (the first list included) and resumed a stream: tests, status. */
  lists = 0;
  resumes = 0;
  private resourceVersion: string | null = null;
  private handle: KubeWatchHandle | null = null;
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;
  private closed = false;
  private synced: Promise<void>;
  private markSynced: () => void = () => undefined;

  constructor(private readonly options: ResumableWatchOptions) {
    this.synced = new Promise((resolve) => (this.markSynced = resolve));
  }

  start(): void {
    void this.relist();
  }

  /** Resolves once the first list has succeeded. */
  whenSynced(): Promise<void> {
    return this.synced;
  }

  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.handle?.abort();
    this.handle = null;
  }

  private async relist(): Promise<void> {
    if (this.closed) return;
    this.resourceVersion = null;
    let list;
    try {
      list = await this.options.api.list(this.options.collection, this.options.labelSelector);
    } catch (error) {
      this.fail(error as KubeApiError);
      return;
    }
    if (this.closed) return;
    this.lists += 1;
    this.items.clear();
    for (const item of list.items) this.items.set(item.metadata.name, item);
    this.resourceVersion = list.resourceVersion;
    this.recovered();
    this.markSynced();
    this.options.onChange();
    await this.watch();
  }

  private async watch(): Promise<void> {
    if (this.closed || this.resourceVersion === null) return;
    let gone = false;
    let ended = false;
    try {
      const handle = await this.options.api.watch(
        this.options.collection,
        this.options.labelSelector,
        this.resourceVersion,
        (event) => {
          if (!gone && this.apply(event) === 'gone') {
            gone = true;
            this.handle?.abort();
          }
        },
        (error) => {
          ended = true;
          this.handle = null;
          if (this.closed) return;
          if (gone || error?.status === 410) return void this.relist();
          if (error !== null) return this.fail(error);
          this.resumes += 1;
          void this.watch();
        },
      );
      // The client ends a refused watch before returning it: then a retry owns `handle`.
      if (this.closed) handle.abort();
      else if (!ended) {
        this.handle = handle;
        this.recovered(); // streaming again
      }
    } catch (error) {
      this.fail(error as KubeApiError);
    }
  }

  /** Applies one event; 'gone' when the server says the version is too old (410). */
  private apply(event: KubeWatchEvent): 'ok' | 'gone' {
    const object = event.object;
    const version = object.metadata?.resourceVersion;
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED':
        this.items.set(object.metadata.name, object);
        break;
      case 'DELETED':
        this.items.delete(object.metadata.name);
        break;
      case 'BOOKMARK':
        break;
      case 'ERROR':
        if ((object as { code?: unknown }).code === 410) return 'gone';
        return 'ok';
      default:
        return 'ok';
    }
    if (version !== undefined) this.resourceVersion = version;
    this.recovered();
    if (event.type !== 'BOOKMARK') this.options.onChange();
    return 'ok';
  }

  private recovered(): void {
    if (this.failures === 0) return;
    this.failures = 0;
    this.options.onProblem(null);
  }

  /** Reports the failure and tries again later: from the last version, or a fresh list. */
  private fail(error: KubeApiError): void {
    if (this.closed) return;
    this.failures += 1;
    this.options.onProblem(error);
    const delay = Math.min(maxRetryMs, (this.options.retryMs ?? 500) * 2 ** (this.failures - 1));
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.resourceVersion === null) void this.relist();
      else {
        this.resumes += 1;
        void this.watch();
      }
    }, delay);
    this.timer.unref();
  }
}
