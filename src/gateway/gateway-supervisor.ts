// `kiln up --gateway-processes N` (issue 16): the gateway process GatewayProcess spawns
// becomes, for N > 1, a small supervisor (a node:cluster primary) of N gateway processes
// that share its one listening port. It serves no request itself:
//
//   supervisor (this file; its pid is in gateway.json) ── one `listening` line, the record,
//    │                                                     SIGTERM → drains every process
//    ├─ gateway process 0 ┐ each a whole gateway (start-gateway.ts): its own snapshot
//    ├─ gateway process 1 ├ long-poll (id `<supervisor pid>/<index>`), pools, limits (its
//    └─ …                 ┘ share: process-share.ts); /metrics merges all of them
//
// The port: node:cluster hands connections to the processes round robin (the default on
// Linux; NODE_CLUSTER_SCHED_POLICY=none lets the kernel pick). Every process listens with
// the same port number, so they share one handle: a port of 0 is resolved to a free one
// before the first process starts, and a process restarted later gets the same.
//
// A process that dies is started again with backoff (per index) while the others keep
// serving; only the requests it had in flight fail (their connections reset). The
// supervisor itself dying takes the processes with it (their IPC channel closes and
// node:cluster ends them): GatewayProcess then restarts the whole gateway.

import cluster, { type Worker } from 'node:cluster';
import { createServer } from 'node:net';
import { AggregatorRegistry } from 'prom-client';
import { removeGatewayRecord, writeGatewayRecord } from './gateway-record.ts';
import type { ClusterMessage } from './cluster-member.ts';

export interface GatewaySupervisorOptions {
  readonly processes: number;
  readonly host: string;
  readonly port: number;
  readonly stateDir: string;
  /** Stop when stdin closes (the control plane is gone; `--exit-with-parent`). */
  readonly exitWithParent: boolean;
}

/** A process that served this long before it died starts its backoff over, ms. */
const backoffResetAfterMs = 60_000;
/** Between two sends of the others' admitted requests to each process, ms. */
const admissionShareMs = 20;
/** How long a merged /metrics waits for each process's part, ms (a silent one is left out). */
const collectTimeoutMs = 2_000;

export async function superviseGateways(options: GatewaySupervisorOptions): Promise<void> {
  const { processes, host, stateDir } = options;
  const workers: (Worker | null)[] = new Array<Worker | null>(processes).fill(null);
  const restarts = new Array<number>(processes).fill(0);
  const upSinceMs = new Array<number | null>(processes).fill(null);
  let stopping = false;

  // Merged metrics: a process asks (its scrape), the supervisor collects every live
  // process's registry and answers with the sum (gauges by their aggregator).
  let collection = 0;
  const pending = new Map<string, (metrics: unknown[] | null) => void>();
  const collectFrom = (worker: Worker, id: number): Promise<unknown[] | null> =>
    new Promise((resolve) => {
      const key = `${id}:${worker.id}`;
      const timer = setTimeout(() => {
        pending.delete(key);
        resolve(null);
      }, collectTimeoutMs);
      pending.set(key, (metrics) => {
        clearTimeout(timer);
        pending.delete(key);
        resolve(metrics);
      });
      send(worker, { kiln: 'collect', id });
    });
  const merged = async (): Promise<string> => {
    const id = (collection += 1);
    const live = workers.filter((w): w is Worker => w !== null && w.isConnected());
    const parts = await Promise.all(live.map((worker) => collectFrom(worker, id)));
    const found = parts.filter((part): part is unknown[] => part !== null);
    return AggregatorRegistry.aggregate(found).metrics();
  };
  // Shared admission bounds (admission.ts): each process's admitted requests by endpoint,
  // and, every few ms, to each process the sum of the others' (when it changed).
  const admitted = new Map<number, ReadonlyMap<string, number>>();
  const othersSent = new Map<number, string>();
  const sendOthers = setInterval(() => {
    for (const worker of workers) {
      if (worker === null || !worker.isConnected()) continue;
      const others = new Map<string, number>();
      for (const [id, counts] of admitted) {
        if (id === worker.id) continue;
        for (const [endpoint, count] of counts)
          others.set(endpoint, (others.get(endpoint) ?? 0) + count);
      }
      const counts = [...others];
      const key = JSON.stringify(counts);
      if (othersSent.get(worker.id) === key) continue;
      othersSent.set(worker.id, key);
      send(worker, { kiln: 'others', counts });
    }
  }, admissionShareMs);
  sendOthers.unref();
  cluster.on('exit', (worker: Worker) => {
    admitted.delete(worker.id);
    othersSent.delete(worker.id);
  });
  cluster.on('message', (worker: Worker, message: ClusterMessage) => {
    if (message.kiln === 'admitted') admitted.set(worker.id, new Map(message.counts));
    if (message.kiln === 'collected') pending.get(`${message.id}:${worker.id}`)?.(message.metrics);
    if (message.kiln === 'metrics') {
      merged().then(
        (text) => send(worker, { kiln: 'merged', id: message.id, text }),
        (error: unknown) => send(worker, { kiln: 'merged', id: message.id, error: String(error) }),
      );
    }
  });

  const fork = (index: number, port: number): Promise<string> => {
    const worker = cluster.fork({
      KILN_GATEWAY_INDEX: String(index),
      KILN_GATEWAY_PORT: String(port),
      KILN_GATEWAY_SUPERVISOR: String(process.pid),
    });
    workers[index] = worker;
    return new Promise((resolve, reject) => {
      let listening = false;
      let failure: { code: string; message: string } | null = null;
      worker.on('message', (message: ClusterMessage) => {
        if (message.kiln === 'failed') failure = { code: message.code, message: message.message };
        if (message.kiln === 'listening') {
          listening = true;
          upSinceMs[index] = Date.now();
          resolve(message.url);
        }
      });
      worker.once('exit', (code, signal) => {
        if (workers[index] === worker) workers[index] = null;
        for (const [key, answer] of pending) if (key.endsWith(`:${worker.id}`)) answer(null);
        if (!listening) {
          const error = new Error(
            failure?.message ?? `gateway process ${index} exited before listening`,
          ) as Error & { code?: string };
          error.code = failure?.code ?? 'UNKNOWN';
          reject(error);
          return;
        }
        if (!stopping)
          restartLater(index, port, `gateway process ${index} exited (${code ?? signal})`);
      });
    });
  };

  const restartLater = (index: number, port: number, why: string): void => {
    if (stopping) return;
    const up = upSinceMs[index];
    if (up !== null && up !== undefined && Date.now() - up >= backoffResetAfterMs)
      restarts[index] = 0;
    upSinceMs[index] = null;
    restarts[index] = (restarts[index] ?? 0) + 1;
    const delayMs = Math.min(30_000, 125 * 2 ** Math.min(restarts[index] ?? 1, 8));
    process.stderr.write(`kiln gateway: ${why}; restarting it in ${delayMs} ms\n`);
    // Not unref'd: with every process dead, this timer is what keeps the supervisor alive.
    setTimeout(() => {
      if (stopping) return;
      fork(index, port).catch((error: unknown) => {
        if (!stopping)
          restartLater(index, port, `gateway process ${index} failed to start: ${String(error)}`);
      });
    }, delayMs);
  };

  const stopAll = async (): Promise<void> => {
    const exits = workers.map((worker) =>
      worker === null || worker.isDead()
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            worker.once('exit', () => resolve());
            worker.process.kill('SIGTERM');
          }),
    );
    // Each drains (10 s at most, start-gateway.ts closeServer); then no more waiting.
    const timer = setTimeout(() => {
      for (const worker of workers)
        if (worker !== null && !worker.isDead()) worker.process.kill('SIGKILL');
    }, 15_000);
    await Promise.all(exits);
    clearTimeout(timer);
  };

  let url: string;
  try {
    const port = options.port === 0 ? await freePort(host) : options.port;
    url = await fork(0, port);
    await Promise.all(Array.from({ length: processes - 1 }, (_, i) => fork(i + 1, port)));
  } catch (error) {
    stopping = true;
    await stopAll();
    const code = (error as { code?: unknown }).code;
    const event = {
      event: 'failed',
      code: typeof code === 'string' ? code : 'UNKNOWN',
      message: (error as Error).message,
    };
    process.stdout.write(`${JSON.stringify(event)}\n`, () => process.exit(1));
    return;
  }

  const stop = (): void => {
    if (stopping) process.exit(1);
    stopping = true;
    removeGatewayRecord(stateDir);
    stopAll().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  writeGatewayRecord(stateDir, url, host, processes);
  process.stdout.write(`${JSON.stringify({ event: 'listening', url })}\n`);
  if (options.exitWithParent) {
    process.stdin.on('end', stop);
    process.stdin.resume();
  }
}

function send(worker: Worker, message: ClusterMessage): void {
  if (!worker.isConnected()) return;
  try {
    worker.send(message);
  } catch {
    // it is going away; its exit is handled
  }
}

/** A port free on `host` now (the cluster's processes all listen on the same number). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}
