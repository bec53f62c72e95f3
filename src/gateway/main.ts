// The gateway process, as `kiln up` spawns it:
//   node --import tsx src/gateway/main.ts --control-url URL --host 127.0.0.1 --port 8000 \
//     --state-dir DIR [--log]
// Prints exactly one line on stdout once listening — {"event":"listening","url":"…"} — and
// exits 0 after closing on SIGTERM or SIGINT (a second signal exits at once).

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
  },
  strict: true,
});
const controlUrl = values['control-url'] ?? fail('--control-url is required');
const stateDir = values['state-dir'] ?? fail('--state-dir is required');
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`bad --port ${values.port}`);

const gateway = await startGateway({
  controlUrl,
  host: values.host,
  port,
  stateDir,
  logger: values.log,
});
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
