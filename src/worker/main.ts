// Entry point of a worker process: `node --import tsx src/worker/main.ts --spec FILE`.
// Speaks to its supervisor through JSON lines on stdout (see WorkerEvent) and exits 3 when
// the model cannot be loaded, 0 after a drain on SIGTERM/SIGINT.

import { readWorkerSpec, type WorkerEvent } from './worker-spec.ts';
import { startWorker } from './start-worker.ts';

const specIndex = process.argv.indexOf('--spec');
const specPath = specIndex >= 0 ? process.argv[specIndex + 1] : undefined;
if (specPath === undefined) {
  process.stderr.write('usage: worker --spec FILE\n');
  process.exit(2);
}

const emit = (event: WorkerEvent): void => {
  process.stdout.write(`${JSON.stringify(event)}\n`);
};

const spec = await readWorkerSpec(specPath);
const worker = await startWorker(spec, emit);
await worker.loaded;
if (worker.state.phase === 'failed') {
  // Let the event reach the supervisor, then leave: a failed worker never serves.
  process.stdout.write('', () => process.exit(3));
} else {
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    worker
      .close()
      .then(() => process.exit(0))
      .catch(() => process.exit(1));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // The supervisor going away (its stdin pipe closes) means this worker is orphaned.
  process.stdin.on('end', stop);
  process.stdin.resume();
}
