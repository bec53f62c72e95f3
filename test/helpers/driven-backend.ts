// A backend the test drives (reconciler tests): every start is recorded, and the test
// decides when each replica listens, becomes ready and exits, so rollouts are checked step
// by step with no timing involved.

import type {
  Backend,
  ReplicaEvent,
  ReplicaLaunch,
  SurvivingReplica,
} from '../../src/control/backends/backend.ts';

export interface Launched {
  readonly launch: ReplicaLaunch;
  readonly emit: (event: ReplicaEvent) => void;
  stopRequested: boolean;
  exited: boolean;
  /** Resolves stop()'s promise: a replica is gone when it has exited. */
  gone: () => void;
}

/** Every start is recorded; the test makes replicas listen, get ready and exit. */
export class DrivenBackend implements Backend {
  readonly kind = 'local' as const;
  readonly launched: Launched[] = [];
  private port = 9000;

  /** Starts that throw (as a spawn or a folder that cannot be made would), before any succeeds. */
  failStarts = 0;

  start(launch: ReplicaLaunch, onEvent: (event: ReplicaEvent) => void) {
    if (this.failStarts > 0) {
      this.failStarts -= 1;
      throw new Error('ENOSPC: no space left on device');
    }
    let gone!: () => void;
    const exited = new Promise<void>((resolve) => (gone = resolve));
    const entry: Launched = { launch, emit: onEvent, stopRequested: false, exited: false, gone };
    this.launched.push(entry);
    const port = this.port++;
    return {
      id: launch.replicaId,
      pid: port,
      stop: () => {
        entry.stopRequested = true; // it drains until the test says it exited
        return exited;
      },
    };
  }

  ready(entry: Launched): void {
    entry.emit({
      kind: 'listening',
      url: `http://127.0.0.1:${9000 + this.launched.indexOf(entry)}`,
      socketPath: null,
    });
    entry.emit({
      kind: 'ready',
      schema: { inputs: [], outputs: [] },
      memoryBytes: 0,
      featureNames: null,
    });
  }

  exit(entry: Launched): void {
    entry.exited = true;
    entry.emit({ kind: 'exited', code: 0, signal: null });
    entry.gone();
  }

  /**
   * A replica an earlier platform left running: adopted, it is tracked like a launch and
   * reports ready once "probed" (a turn later).
   */
  survivor(launch: ReplicaLaunch): SurvivingReplica {
    return {
      launch,
      pid: 4242,
      adopt: (onEvent) => {
        const handle = this.start(launch, onEvent);
        const entry = this.launched.at(-1)!;
        queueMicrotask(() => this.ready(entry));
        return handle;
      },
      stop: () => Promise.resolve(),
    };
  }

  /** Launches not asked to stop and not exited. */
  running(): Launched[] {
    return this.launched.filter((l) => !l.stopRequested && !l.exited);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
