// The gateway's record in its state folder, `{stateDir}/gateway.json`: its pid, start mark
// (src/core/process-identity.ts), URL and the --host it was given, written once it listens and removed when it stops
// cleanly. The gateway outlives a control plane that dies; the next `kiln up` on the home
// reads this to adopt it (or stop it), and `kiln down` to stop it.

import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  identifyProcess,
  parseProcessIdentity,
  type ProcessIdentity,
} from '../core/process-identity.ts';

export const gatewayRecordFile = 'gateway.json';

export interface GatewayRecord {
  readonly process: ProcessIdentity;
  readonly url: string;
  /** The address it was asked to listen on (`localhost`, say, where `url` has 127.0.0.1). */
  readonly host: string;
  /** Gateway processes it runs on its port (`--gateway-processes`; 1 in older records). */
  readonly processes: number;
}

/** Records this process as the gateway listening at `url` (best effort). */
export function writeGatewayRecord(
  stateDir: string,
  url: string,
  host: string,
  processes = 1,
): void {
  const me = identifyProcess(process.pid);
  if (me === null) return;
  const path = join(stateDir, gatewayRecordFile);
  try {
    mkdirSync(stateDir, { recursive: true });
    writeFileSync(`${path}.${process.pid}.tmp`, JSON.stringify({ ...me, url, host, processes }));
    renameSync(`${path}.${process.pid}.tmp`, path);
  } catch {
    // a gateway nobody can find again still serves
  }
}

/** Removes the record if it is this process's (a successor may have written its own). */
export function removeGatewayRecord(stateDir: string): void {
  const record = readGatewayRecord(stateDir);
  if (record?.process.pid === process.pid)
    rmSync(join(stateDir, gatewayRecordFile), { force: true });
}

export function readGatewayRecord(stateDir: string): GatewayRecord | null {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(join(stateDir, gatewayRecordFile), 'utf8'));
  } catch {
    return null;
  }
  const identity = parseProcessIdentity(value);
  const { url, host, processes } = value as { url?: unknown; host?: unknown; processes?: unknown };
  if (identity === null || typeof url !== 'string' || typeof host !== 'string') return null;
  return { process: identity, url, host, processes: typeof processes === 'number' ? processes : 1 };
}

/**
 * A value kept in a file that another process rewrites, as a function read at each call: the
 * last non-empty content, else `initial` while the file is missing or empty. The gateway
 * reads the control plane's URL (`<home>/run/platform.url`, rewritten by every `kiln up`)
 * and its bearer token (`{stateDir}/control.token`, replaced by a platform when it no longer
 * checks) this way before every poll, so a gateway that outlived its platform follows the
 * next one.
 */
export function fileValue(path: string, initial: string): () => string {
  let last = initial;
  return () => {
    try {
      const value = readFileSync(path, 'utf8').trim();
      if (value !== '') last = value;
    } catch {
      // keep the last one (a control plane down or not yet listening; no token in --dev)
    }
    return last;
  };
}

/** Where the gateway's control-plane token is kept, in its state folder. */
export function controlTokenFile(stateDir: string): string {
  return join(stateDir, 'control.token');
}
