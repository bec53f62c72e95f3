// Watches the control plane for routing snapshots by long polling:
//
//   GET {controlUrl}/api/v1/routing/snapshot?after=N&waitMs=W&gateway=ID
//     200 → a snapshot newer than N (applied if it is still newer than ours)
//     204 → nothing newer within W ms; ask again at once
//     error / other status → back off (exponential with jitter) and ask again
//
// The watcher never stops the gateway: while the control plane is down the gateway keeps
// serving the last snapshot it has (static stability).

import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import type { RoutingSnapshot } from './routing-snapshot.ts';
import { checkRoutingSnapshot } from './snapshot-check.ts';

export interface SnapshotWatcherOptions {
  /**
   * Base URL of the control plane, or a function asked before every poll: a control plane
   * restarted on another port is found again (main.ts reads it from a file in the home).
   */
  readonly controlUrl: string | (() => string);
  /**
   * Bearer token sent with each poll ('' = none: a --dev control plane needs none); a
   * function is asked before every poll (the platform may replace the token).
   */
  readonly token?: string | (() => string);
  /** How long the control plane may hold one poll open, in ms. */
  readonly waitMs: number;
  readonly minBackoffMs: number;
  readonly maxBackoffMs: number;
  /** Version of the snapshot being served, or null when there is none yet. */
  readonly currentVersion: () => number | null;
  /** Applies a snapshot; returns false when it is not newer than the one served. */
  readonly apply: (snapshot: RoutingSnapshot) => boolean;
  readonly onError: (error: Error, retryInMs: number) => void;
  /**
   * This gateway process's stable id (`<supervisor pid>/<index>`), sent with each poll: the
   * control plane waits for every gateway's acknowledgement before it stops a replica.
   */
  readonly gatewayId?: string;
}

type PollOutcome = 'applied' | 'unchanged' | 'stale';

export class SnapshotWatcher {
  private readonly abort = new AbortController();
  private readonly agent: Agent;
  private readonly controlUrl: () => string;
  private running: Promise<void> | null = null;

  constructor(private readonly options: SnapshotWatcherOptions) {
    // Headers arrive only when the poll ends: allow the wait plus a margin.
    const timeoutMs = options.waitMs + 15_000;
    this.agent = new Agent({ headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    const { controlUrl } = options;
    this.controlUrl = typeof controlUrl === 'string' ? () => controlUrl : controlUrl;
  }

  start(): void {
    this.running ??= this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
    await this.agent.destroy();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.abort.signal.aborted) {
      try {
        const outcome = await this.pollOnce();
        failures = 0;
        // A control plane that keeps answering with old versions must not spin us.
        if (outcome === 'stale') await this.pause(this.options.minBackoffMs);
      } catch (error) {
        if (this.abort.signal.aborted) break;
        failures += 1;
        const delayMs = this.backoffMs(failures);
        this.options.onError(error as Error, delayMs);
        await this.pause(delayMs);
      }
    }
  }

  private async pollOnce(): Promise<PollOutcome> {
    const current = this.options.currentVersion();
    const { gatewayId } = this.options;
    const query =
      (current === null
        ? `?waitMs=${this.options.waitMs}`
        : `?after=${current}&waitMs=${this.options.waitMs}`) +
      (gatewayId === undefined ? '' : `&gateway=${encodeURIComponent(gatewayId)}`);
    const snapshotUrl = `${this.controlUrl().replace(/\/+$/, '')}/api/v1/routing/snapshot`;
    const response = await request(snapshotUrl + query, {
      dispatcher: this.agent,
      signal: this.abort.signal,
      headers: this.headers(),
    });
    if (response.statusCode === 204) {
      await response.body.dump();
      return 'unchanged';
    }
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new Error(`control plane answered ${response.statusCode} to the snapshot poll`);
    }
    const check = checkRoutingSnapshot(await response.body.json());
    if (!check.ok) throw new Error(`control plane sent an invalid snapshot: ${check.reason}`);
    return this.options.apply(check.snapshot) ? 'applied' : 'stale';
  }

  private headers(): Record<string, string> {
    const { token } = this.options;
    const bearer = typeof token === 'function' ? token() : (token ?? '');
    return bearer === ''
      ? { accept: 'application/json' }
      : { accept: 'application/json', authorization: `Bearer ${bearer}` };
  }

  private backoffMs(failures: number): number {
    const { minBackoffMs, maxBackoffMs } = this.options;
    const ceiling = Math.min(maxBackoffMs, minBackoffMs * 2 ** Math.min(failures - 1, 20));
    // Full jitter in the upper half, so many gateways do not poll in lockstep.
    return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
  }

  private async pause(ms: number): Promise<void> {
    try {
      await sleep(ms, undefined, { signal: this.abort.signal });
    } catch {
      // Aborted by stop(): the loop condition ends the watcher.
    }
  }
}
