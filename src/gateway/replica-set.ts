// Replica state that outlives snapshots: one undici Pool per worker URL (keep-alive,
// pipelining 1) and, per replica, the count of requests in flight and its ejection
// deadline. A new snapshot reuses the state of every replica it still lists, so in-flight
// counts stay true across snapshot changes; pools of replicas it drops are closed
// gracefully (requests already sent to them finish).

import { Pool } from 'undici';
import type { ReplicaLoad } from './replica-picker.ts';
import { performance } from 'node:perf_hooks';
import { ChannelClient } from './channel-client.ts';
import { LlmReplicaLoad } from './llm-replica-load.ts';
import type { LlmReplicaView } from './llm-replica-picker.ts';
import type { ReplicaRoute, RoutingSnapshot } from './routing-snapshot.ts';

export class ReplicaState implements ReplicaLoad, LlmReplicaView {
  outstanding = 0;
  ejectedUntilMs = 0;
  /** An hf-llm replica's reported load (unused for other formats). */
  readonly llmLoad = new LlmReplicaLoad();
  /** No longer in the routing (a newer snapshot dropped it): its load is polled no more. */
  retired = false;
  readonly versionText: string;
  /** The model it serves, for the `kiln-model` header of its answers. */
  readonly model: string;
  /** The URL's path without a trailing slash ('' for a bare origin), prefixed to v2 paths. */
  readonly pathPrefix: string;

  constructor(
    readonly id: string,
    readonly url: string,
    readonly version: number,
    readonly pool: Pool,
    /** Infer requests go here when set (a Kiln worker); else through `pool`. */
    readonly channel: ChannelClient | null,
    model = '',
  ) {
    this.versionText = String(version);
    this.model = model;
    this.pathPrefix = new URL(url).pathname.replace(/\/+$/, '');
  }
}

export interface ReplicaSetOptions {
  /** Per-request upstream limit: no response headers, or a body stall, this long → 504. */
  readonly upstreamTimeoutMs: number;
  /** Send infer requests on worker channels where replicas offer one (default: yes). */
  readonly useChannels?: boolean;
}

export class ReplicaSet {
  private readonly pools = new Map<string, Pool>();
  /** Worker channels by replica key. */
  private readonly channels = new Map<string, ChannelClient>();
  private replicas = new Map<string, ReplicaState>();

  constructor(private readonly options: ReplicaSetOptions) {}

  /**
   * Brings the set in line with a snapshot; returns each endpoint's replicas in snapshot
   * order, under the endpoint's name, and those of each traffic variant and shadow under
   * `versionReplicasKey` (a replica listed in several places is one state). Replicas are
   * matched by id and URL, so a worker restarted on a new port is new.
   */
  sync(snapshot: RoutingSnapshot): Map<string, ReplicaState[]> {
    const next = new Map<string, ReplicaState>();
    const byEndpoint = new Map<string, ReplicaState[]>();
    const states = (routes: readonly ReplicaRoute[], model: string): ReplicaState[] => {
      const list: ReplicaState[] = [];
      for (const route of routes) {
        const key = replicaKey(route);
        const served = route.model ?? model;
        let state = next.get(key) ?? this.replicas.get(key);
        if (state === undefined || state.version !== route.version || state.model !== served) {
          state = new ReplicaState(
            route.id,
            route.url,
            route.version,
            this.poolFor(route.url),
            this.channelFor(route),
            served,
          );
        }
        next.set(key, state);
        list.push(state);
      }
      return list;
    };
    for (const endpoint of snapshot.endpoints) {
      byEndpoint.set(endpoint.name, states(endpoint.replicas, endpoint.model));
      const traffic = endpoint.traffic;
      if (traffic === undefined) continue;
      for (const version of [...traffic.variants, ...traffic.shadows]) {
        const key = versionReplicasKey(endpoint.name, version.model, version.version);
        byEndpoint.set(key, states(version.replicas, version.model));
      }
    }
    for (const [key, state] of this.replicas) {
      if (next.get(key) !== state) state.retired = true;
    }
    this.replicas = next;
    const liveUrls = new Set<string>();
    for (const state of next.values()) liveUrls.add(state.url);
    for (const [key, channel] of this.channels) {
      if (next.get(key)?.channel !== channel) {
        this.channels.delete(key);
        channel.close(); // requests already sent finish first
      }
    }
    for (const [url, pool] of this.pools) {
      if (!liveUrls.has(url)) {
        this.pools.delete(url);
        pool.close().catch(ignore);
      }
    }
    return byEndpoint;
  }

  async close(): Promise<void> {
    for (const state of this.replicas.values()) state.retired = true;
    for (const channel of this.channels.values()) channel.destroy();
    this.channels.clear();
    const pools = [...this.pools.values()];
    this.pools.clear();
    this.replicas.clear();
    await Promise.all(pools.map((pool) => pool.close().catch(ignore)));
  }

  private channelFor(route: ReplicaRoute): ChannelClient | null {
    if (route.channel === undefined || !this.options.useChannels) return null;
    const key = replicaKey(route);
    let channel = this.channels.get(key);
    if (channel === undefined) {
      channel = new ChannelClient(
        route.url,
        route.channel,
        this.options.upstreamTimeoutMs,
        () => performance.now(),
        route.socketPath ?? null,
      );
      this.channels.set(key, channel);
    }
    return channel;
  }

  private poolFor(url: string): Pool {
    const origin = new URL(url).origin;
    let pool = this.pools.get(url);
    if (pool === undefined) {
      pool = new Pool(origin, {
        pipelining: 1,
        headersTimeout: this.options.upstreamTimeoutMs,
        bodyTimeout: this.options.upstreamTimeoutMs,
        connectTimeout: 5_000,
      });
      this.pools.set(url, pool);
    }
    return pool;
  }
}

/** Where `sync` lists the replicas of one version of an endpoint's traffic policy. */
export function versionReplicasKey(endpoint: string, model: string, version: number): string {
  return `${endpoint}\u0000${model}:${version}`;
}

function replicaKey(route: ReplicaRoute): string {
  return `${route.id} ${route.url} ${route.socketPath ?? ''}`;
}

function ignore(): void {}
