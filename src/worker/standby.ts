// A standby worker: a worker process started before any replica needs it, so a replica start
// (a scale-up, a wake from zero) skips what every process pays before it can load a model —
// booting Node, the TypeScript loader, importing the worker and the tree runtime — about
// 0.5 s of a tree endpoint's ~0.8 s cold start on a small machine (docs/autoscaling.md,
// "Cold start"). Lambda and OpenWhisk call it a pre-warmed container.
//
//   spawn `main.ts --standby` ─► import + warm ─► print {"event":"standby"} ─► read stdin
//   supervisor writes one line {spec, replicaId, supervised} ─► the worker runs that spec
//
// Nothing is served and no folder exists before the handoff: a standby is not a replica, and
// a platform that finds none of its folders after a crash has lost nothing. Its supervisor
// going away (stdin ends) before a handoff ends it.

import { warmTreeRuntime } from '../runtimes/trees/warm-tree-runtime.ts';
import type { WorkerEvent } from './worker-spec.ts';

/** What the supervisor hands a standby: the spec file it is to serve, as `--spec` says. */
export interface StandbyHandoff {
  /** The spec file, written in the replica's folder. */
  readonly spec: string;
  readonly replicaId: string;
  /**
   * Whether the supervisor's end of stdin closing means this worker is orphaned (a platform
   * whose workers stop with it), as a pipe on stdin does for a worker started with `--spec`.
   * False for workers that outlive their platform (`kiln up`).
   */
  readonly supervised: boolean;
  /**
   * Environment the replica's worker gets beyond the standby's own (its placement: KILN_NODE).
   * Absent in older handoffs: none.
   */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * Prepares the process (imports, one warm-up load), announces it, and waits for the handoff
 * line on stdin. Exits (0) if stdin ends first; an unreadable handoff exits 2.
 */
export async function standBy(emit: (event: WorkerEvent) => void): Promise<StandbyHandoff> {
  const line = firstLine();
  try {
    await warmTreeRuntime();
  } catch (error) {
    // Only slower: the replica this process serves loads as a fresh process's would.
    process.stderr.write(`worker: the standby warm-up failed: ${String(error)}\n`);
  }
  emit({ event: 'standby' });
  const text = await line;
  if (text === null) process.exit(0);
  const handoff = parseHandoff(text);
  if (handoff === null) {
    process.stderr.write(`worker: not a standby handoff: ${text.slice(0, 200)}\n`);
    process.exit(2);
  }
  // What a worker started for this replica gets in its environment.
  process.env.KILN_REPLICA_ID = handoff.replicaId;
  for (const [name, value] of Object.entries(handoff.env ?? {})) process.env[name] = value;
  return handoff;
}

export function parseHandoff(text: string): StandbyHandoff | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { spec, replicaId, supervised, env } = value as Record<string, unknown>;
  if (typeof spec !== 'string' || typeof replicaId !== 'string' || typeof supervised !== 'boolean')
    return null;
  if (env === undefined) return { spec, replicaId, supervised };
  if (
    typeof env !== 'object' ||
    env === null ||
    Object.values(env).some((v) => typeof v !== 'string')
  )
    return null;
  return { spec, replicaId, supervised, env: env as Record<string, string> };
}

/** The first line on stdin (without its newline), or null if stdin ends before one. */
function firstLine(): Promise<string | null> {
  return new Promise((resolve) => {
    let buffered = '';
    const onData = (chunk: Buffer): void => {
      buffered += chunk.toString('utf8');
      const end = buffered.indexOf('\n');
      if (end < 0) return;
      process.stdin.off('data', onData);
      process.stdin.off('end', onEnd);
      process.stdin.pause();
      resolve(buffered.slice(0, end));
    };
    const onEnd = (): void => resolve(null);
    process.stdin.on('data', onData);
    process.stdin.once('end', onEnd);
  });
}
