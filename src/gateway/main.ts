// The gateway process, as `kiln up` spawns it:
//   node --import tsx src/gateway/main.ts --control-url URL --host 127.0.0.1 --port 8000 \
//     --state-dir DIR [--log] [--exit-with-parent]
// Prints exactly one line on stdout once listening — {"event":"listening","url":"…"} — or,
// if it cannot start, {"event":"failed","code","message"} and exits 1; exits 0 after
// closing on SIGTERM or SIGINT (a second signal exits at once). With --exit-with-parent
// (what `kiln up` passes) it also stops when its stdin pipe closes: the control plane is gone.
// KILN_CONTROL_TOKEN, when set, is the bearer token its snapshot polls send (gateway role).

import { parseArgs } from 'node:util';
import { startGateway } from './start-gateway.ts';

function fail(message: string): never {
  process.stderr.write(`kiln gateway: ${message}\n`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    'control-url': { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    port: { type: 'string', default: '8000' },
    'state-dir': { type: 'string' },
    log: { type: 'boolean', default: false },
    'exit-with-parent': { type: 'boolean', default: false },
  },
  strict: true,
});
const controlUrl = values['control-url'] ?? fail('--control-url is required');
const stateDir = values['state-dir'] ?? fail('--state-dir is required');
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`bad --port ${values.port}`);

let gateway: Awaited<ReturnType<typeof startGateway>>;
try {
  gateway = await startGateway({
    controlUrl,
    host: values.host,
    port,
    stateDir,
    logger: values.log,
    controlToken: process.env.KILN_CONTROL_TOKEN ?? '',
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
process.stdout.write(`${JSON.stringify({ event: 'listening', url: gateway.url })}\n`);

let stopping = false;
function stop(): void {
  if (stopping) process.exit(1);
  stopping = true;
  gateway.close().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`kiln gateway: close failed: ${String(error)}\n`);
      process.exit(1);
    },
  );
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// The control plane going away (even by kill -9: its end of our stdin pipe closes) leaves
// this gateway orphaned, holding its port: stop, as workers do.
if (values['exit-with-parent']) {
  process.stdin.on('end', stop);
  process.stdin.resume();
}
