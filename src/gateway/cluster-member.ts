// The gateway process's side of gateway-supervisor.ts (one of N gateway processes on one
// port): it tells the supervisor it listens (or why it cannot) over the cluster's IPC
// channel instead of stdout, and its /metrics asks the supervisor for every process's
// metrics merged, answering the supervisor's collection with its own registry.

import type { AdmissionPeers, LocalMetrics } from './start-gateway.ts';

/** Messages between the supervisor and its gateway processes. */
export type ClusterMessage =
  | { readonly kiln: 'listening'; readonly url: string }
  | { readonly kiln: 'failed'; readonly code: string; readonly message: string }
  /** A process's scrape: merge everyone's. */
  | { readonly kiln: 'metrics'; readonly id: number }
  /** The merge, back to the process that asked. */
  | {
      readonly kiln: 'merged';
      readonly id: number;
      readonly text?: string;
      readonly error?: string;
    }
  /** The supervisor collects: answer with this process's registry as JSON. */
  | { readonly kiln: 'collect'; readonly id: number }
  | { readonly kiln: 'collected'; readonly id: number; readonly metrics: unknown[] }
  /** A process's admitted requests by endpoint (admission.ts shares each bound). */
  | { readonly kiln: 'admitted'; readonly counts: readonly (readonly [string, number])[] }
  /** To a process: the other processes' admitted requests by endpoint. */
  | { readonly kiln: 'others'; readonly counts: readonly (readonly [string, number])[] };

/** This process's place among the gateway processes, when the supervisor started it. */
export interface ClusterPlace {
  readonly index: number;
  readonly port: number;
  /** Sent with snapshot polls: `<supervisor pid>/<index>` (a restart keeps it). */
  readonly gatewayId: string;
}

export function clusterPlace(env: NodeJS.ProcessEnv): ClusterPlace | null {
  const { KILN_GATEWAY_INDEX, KILN_GATEWAY_PORT, KILN_GATEWAY_SUPERVISOR } = env;
  if (KILN_GATEWAY_INDEX === undefined || process.send === undefined) return null;
  return {
    index: Number(KILN_GATEWAY_INDEX),
    port: Number(KILN_GATEWAY_PORT),
    gatewayId: `${KILN_GATEWAY_SUPERVISOR}/${KILN_GATEWAY_INDEX}`,
  };
}

/** Sends `message`; `sent` runs once it is written (or could not be). */
export function tellSupervisor(message: ClusterMessage, sent?: () => void): void {
  try {
    process.send?.(message, undefined, {}, () => sent?.());
  } catch {
    // the supervisor is gone: node:cluster ends this process
    sent?.();
  }
}

/**
 * Answers the supervisor's collections with `local()`, and returns what GET /metrics
 * answers: every process's metrics merged (this one's alone if the supervisor cannot).
 */
export function clusterMetrics(local: LocalMetrics): () => Promise<string> {
  let next = 0;
  const waiting = new Map<number, (message: ClusterMessage & { kiln: 'merged' }) => void>();
  process.on('message', (message: ClusterMessage) => {
    if (message.kiln === 'collect') {
      local.json().then(
        (metrics) => tellSupervisor({ kiln: 'collected', id: message.id, metrics }),
        () => tellSupervisor({ kiln: 'collected', id: message.id, metrics: [] }),
      );
    }
    if (message.kiln === 'merged') waiting.get(message.id)?.(message);
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      next += 1;
      const id = next;
      const timer = setTimeout(() => {
        waiting.delete(id);
        resolve(local.text());
      }, 5_000);
      waiting.set(id, (message) => {
        clearTimeout(timer);
        waiting.delete(id);
        if (message.text !== undefined) resolve(message.text);
        else reject(new Error(message.error ?? 'merging the gateway processes’ metrics failed'));
      });
      tellSupervisor({ kiln: 'metrics', id });
    });
}

/** The other gateway processes' admitted requests, through the supervisor. */
export const clusterAdmissionPeers: AdmissionPeers = {
  publish: (admitted) => tellSupervisor({ kiln: 'admitted', counts: [...admitted] }),
  subscribe: (onOthers) =>
    process.on('message', (message: ClusterMessage) => {
      if (message.kiln === 'others') onOthers(new Map(message.counts));
    }),
};
