// Where `kiln up` leaves its admin token for the CLI on the same machine: written by the
// platform (src/control/control-tokens.ts), read by the CLI (src/cli/context.ts). Mode 0600:
// whoever can read it can do anything on the platform, as whoever can read the home can.

import { join } from 'node:path';

export function adminTokenPath(home: string): string {
  return join(home, 'admin.token');
}
