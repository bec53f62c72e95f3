// Standby workers (src/worker/standby.ts): worker processes started ahead of need, so a
// replica start takes one already booted — Node, the TypeScript loader, the worker and the
// tree runtime imported — instead of paying that on the cold start's critical path.
//
//   fill() ─► spawn `--standby` (up to `size`) ─► {"event":"standby"}: warm
//   take()  ─► a live one leaves the pool; the backend writes its handoff line
//
// The backend fills the pool when a replica it started is ready (or gone), not at the take:
// a new standby booting beside a loading replica would share the CPU the cold start needs.
// A standby that exits by itself is dropped; after a few in a row the pool stops refilling
// (a worker that cannot even boot must not be respawned for ever) and says so once.

import { WorkerProcess, type WorkerProcessOptions } from './worker-process.ts';

/** Standbys that died before they were warm, in a row, after which the pool gives up. */
const maxFailuresInARow = 3;

export interface StandbyWorkersOptions {
  /** How many standbys to keep (0: none). */
  readonly size: number;
  /** How a standby is started (args `--standby`, its log path, …). */
  readonly spawn: () => WorkerProcessOptions;
}

export class StandbyWorkers {
  private readonly waiting = new Set<WorkerProcess>();
  private readonly warm = new WeakSet<WorkerProcess>();
  private failuresInARow = 0;
  private closed = false;

  constructor(private readonly options: StandbyWorkersOptions) {}

  /** Starts standbys until `size` wait (no-op once closed or given up). */
  fill(): void {
    while (
      !this.closed &&
      this.waiting.size < this.options.size &&
      this.failuresInARow < maxFailuresInARow
    ) {
      let worker: WorkerProcess;
      try {
        worker = new WorkerProcess(this.options.spawn());
      } catch (error) {
        // No folder for its log, spawn refused: replicas start without one.
        this.failuresInARow = maxFailuresInARow;
        process.stderr.write(`standby workers: could not start one: ${String(error)}\n`);
        return;
      }
      worker.hold(false);
      this.waiting.add(worker);
      worker.listen((event) => {
        if (event.event !== 'standby') return;
        this.warm.add(worker);
        this.failuresInARow = 0;
      });
      void worker.exited.then((exit) => {
        if (!this.waiting.delete(worker) || this.closed) return;
        if (this.warm.has(worker)) return;
        this.failuresInARow += 1;
        if (this.failuresInARow === maxFailuresInARow) {
          const how = exit.signal ?? `code ${exit.code ?? '?'}`;
          const said = worker.stderr.trim().split('\n').slice(-3).join(' | ');
          process.stderr.write(
            `standby workers: ${maxFailuresInARow} exited (${how}) before they were ready; replicas start without one${said === '' ? '' : `: ${said}`}\n`,
          );
        }
      });
    }
  }

  /**
   * A standby to hand a replica, warm ones first (one still booting beats a fresh process: it
   * has a head start); null when none waits. The caller now owns it.
   */
  take(): WorkerProcess | null {
    const live = [...this.waiting].filter((worker) => !worker.gone);
    const picked = live.find((worker) => this.warm.has(worker)) ?? live[0] ?? null;
    if (picked !== null) {
      this.waiting.delete(picked);
      picked.hold(true);
    }
    return picked;
  }

  /** Pids of the standbys waiting, and whether each is warm (tests, `kiln` diagnostics). */
  list(): { readonly pid: number | null; readonly warm: boolean }[] {
    return [...this.waiting].map((worker) => ({ pid: worker.pid, warm: this.warm.has(worker) }));
  }

  /** Stops every waiting standby (they hold nothing: a plain SIGTERM ends them). */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.waiting];
    this.waiting.clear();
    for (const worker of all) worker.child.kill('SIGTERM');
    await Promise.all(
      all.map(async (worker) => {
        const timer = setTimeout(() => worker.child.kill('SIGKILL'), 10_000);
        await worker.exited;
        clearTimeout(timer);
      }),
    );
  }
}
