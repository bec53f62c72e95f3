// The gateway process, as `kiln up` spawns it:
//   node --import tsx src/gateway/main.ts (--control-url URL | --control-url-file FILE) \
//     --host 127.0.0.1 --port 8000 --state-dir DIR [--processes N] [--log] [--exit-with-parent]
// Prints exactly one line on stdout once listening — {"event":"listening","url":"…"} — or,
// if it cannot start, {"event":"failed","code","message"} and exits 1; exits 0 after
// closing on SIGTERM or SIGINT (a second signal exits at once). Once listening it records
// itself in {stateDir}/gateway.json (gateway-record.ts), removed when it stops cleanly.
// With --control-url-file (what `kiln up` passes) the control plane's URL is read from that
// file before every poll, so a gateway that outlived its control plane finds the next one,
// wherever it listens. With --exit-with-parent it instead stops when its stdin pipe closes:
// the control plane is gone.
// With --processes N > 1 this process is a supervisor (gateway-supervisor.ts) of N gateway
// processes on its port, this same file run as node:cluster workers (cluster-member.ts):
// the contract above (the line, the record, the signals, the exit codes) is the supervisor's.
// The bearer token its snapshot polls send (gateway role) is read before every poll from
// {stateDir}/control.token, which `kiln up` keeps (so an adopted gateway follows a token
// the next platform replaced), else taken from KILN_CONTROL_TOKEN; none in --dev.

import cluster from 'node:cluster';
import { parseArgs } from 'node:util';
import {
  clusterAdmissionPeers,
  clusterMetrics,
  clusterPlace,
  tellSupervisor,
} from './cluster-member.ts';
import { superviseGateways } from './gateway-supervisor.ts';
import {
  controlTokenFile,
  fileValue,
  removeGatewayRecord,
  writeGatewayRecord,
} from './gateway-record.ts';
import { startGateway } from './start-gateway.ts';
import { tracingFromEnv } from '../observability/tracing/start-tracing.ts';
import { startProcessDiagnostics } from '../observability/process-diagnostics.ts';
import { applyV8FlagsFromEnv } from '../observability/v8-flags-from-env.ts';

function fail(message: string): never {
  process.stderr.write(`kiln gateway: ${message}\n`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    'control-url': { type: 'string' },
    'control-url-file': { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '8000' },
    'state-dir': { type: 'string' },
    log: { type: 'boolean', default: false },
    'exit-with-parent': { type: 'boolean', default: false },
    processes: { type: 'string', default: '1' },
  },
  strict: true,
});
const controlUrlFile = values['control-url-file'];
const controlUrl =
  controlUrlFile === undefined
    ? (values['control-url'] ?? fail('--control-url or --control-url-file is required'))
    : fileValue(controlUrlFile, values['control-url'] ?? 'http://127.0.0.1:8080');
const stateDir = values['state-dir'] ?? fail('--state-dir is required');
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`bad --port ${values.port}`);
const processes = Number(values.processes);
if (!Number.isInteger(processes) || processes < 1 || processes > 64)
  fail(`bad --processes ${values.processes} (an integer 1..64)`);

// Whoever started us may be gone (the gateway outlives a control plane killed outright):
// a write to its end of our pipes must not crash the gateway.
process.stdout.on('error', () => undefined);
process.stderr.on('error', () => undefined);

if (cluster.isPrimary && processes > 1) {
  await superviseGateways({
    processes,
    host: values.host,
    port,
    stateDir,
    exitWithParent: values['exit-with-parent'],
  });
} else {
  await serve();
}

/** Runs one gateway: alone, or as one of the supervisor's processes (`place`). */
async function serve(): Promise<void> {
  const place = clusterPlace(process.env);
  // KILN_DIAGNOSTICS_DIR set (bench tail): event-loop delay, GC pauses and CPU, once a second.
  startProcessDiagnostics('gateway');
  applyV8FlagsFromEnv();
  // Tracing is on when `kiln up --otlp URL` (or the environment) names a collector.
  const tracing = await tracingFromEnv('kiln-gateway', { 'service.instance.id': `${process.pid}` });
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  try {
    gateway = await startGateway({
      tracing,
      controlUrl,
      host: values.host,
      port: place?.port ?? port,
      stateDir,
      logger: values.log,
      ...(place === null
        ? {}
        : {
            processes,
            processIndex: place.index,
            gatewayId: place.gatewayId,
            mergeMetrics: clusterMetrics,
            admissionPeers: clusterAdmissionPeers,
          }),
      controlToken: fileValue(controlTokenFile(stateDir), process.env.KILN_CONTROL_TOKEN ?? ''),
    });
  } catch (error) {
    // Tell the supervisor why (e.g. EADDRINUSE) instead of dying with a stack trace.
    const code = (error as { code?: unknown }).code;
    const event = {
      event: 'failed',
      code: typeof code === 'string' ? code : 'UNKNOWN',
      message: (error as Error).message,
    };
    if (place !== null) {
      tellSupervisor({ kiln: 'failed', code: event.code, message: event.message }, () =>
        process.exit(1),
      );
      await new Promise(() => undefined);
    }
    process.stdout.write(`${JSON.stringify(event)}\n`, () => process.exit(1));
    await new Promise(() => undefined);
    throw error;
  }
  let stopping = false;
  function stop(): void {
    // A process of the supervisor's may get a terminal's SIGINT and then the supervisor's
    // SIGTERM: the second must not cut its drain short (the supervisor escalates).
    if (stopping && place !== null) return;
    if (stopping) process.exit(1);
    stopping = true;
    if (place === null) removeGatewayRecord(stateDir);
    gateway
      .close()
      .then(() => tracing?.shutdown())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          process.stderr.write(`kiln gateway: close failed: ${String(error)}\n`);
          process.exit(1);
        },
      );
  }
  // Before the record and the line that announce it: a supervisor may signal as soon as it
  // reads the line (a pipe write can reach it before this tick ends), and without a handler
  // SIGTERM kills outright — no drain, and a record left naming a gateway that is gone.
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  if (place !== null) {
    tellSupervisor({ kiln: 'listening', url: gateway.url });
    return;
  }
  writeGatewayRecord(stateDir, gateway.url, values.host);
  process.stdout.write(`${JSON.stringify({ event: 'listening', url: gateway.url })}\n`);

  // The control plane going away (even by kill -9: its end of our stdin pipe closes) leaves
  // this gateway orphaned, holding its port: stop, as workers do.
  if (values['exit-with-parent']) {
    process.stdin.on('end', stop);
    process.stdin.resume();
  }
}
