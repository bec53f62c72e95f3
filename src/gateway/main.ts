// The gateway process, as `kiln up` spawns it:
//   node --import tsx src/gateway/main.ts (--control-url URL | --control-url-file FILE) \
//     --host 127.0.0.1 --port 8000 --state-dir DIR [--log] [--exit-with-parent]
// Prints exactly one line on stdout once listening — {"event":"listening","url":"…"} — or,
// if it cannot start, {"event":"failed","code","message"} and exits 1; exits 0 after
// closing on SIGTERM or SIGINT (a second signal exits at once). Once listening it records
// itself in {stateDir}/gateway.json (gateway-record.ts), removed when it stops cleanly.
// With --control-url-file (what `kiln up` passes) the control plane's URL is read from that
// file before every poll, so a gateway that outlived its control plane finds the next one,
// wherever it listens. With --exit-with-parent it instead stops when its stdin pipe closes:
// the control plane is gone.
// The bearer token its snapshot polls send (gateway role) is read before every poll from
// {stateDir}/control.token, which `kiln up` keeps (so an adopted gateway follows a token
// the next platform replaced), else taken from KILN_CONTROL_TOKEN; none in --dev.

import { parseArgs } from 'node:util';
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

// Whoever started us may be gone (the gateway outlives a control plane killed outright):
// a write to its end of our pipes must not crash the gateway.
process.stdout.on('error', () => undefined);
process.stderr.on('error', () => undefined);

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
    port,
    stateDir,
    logger: values.log,
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
  process.stdout.write(`${JSON.stringify(event)}\n`, () => process.exit(1));
  await new Promise(() => undefined);
  throw error;
}
let stopping = false;
function stop(): void {
  if (stopping) process.exit(1);
  stopping = true;
  removeGatewayRecord(stateDir);
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
writeGatewayRecord(stateDir, gateway.url, values.host);
process.stdout.write(`${JSON.stringify({ event: 'listening', url: gateway.url })}\n`);

// The control plane going away (even by kill -9: its end of our stdin pipe closes) leaves
// this gateway orphaned, holding its port: stop, as workers do.
if (values['exit-with-parent']) {
  process.stdin.on('end', stop);
  process.stdin.resume();
}
