// The routing snapshot on disk: `{stateDir}/routing-snapshot.json`. Written atomically
// (temp file in the same folder, fsync, rename) so a crash mid-write leaves the previous
// snapshot intact; read at start so the gateway serves before, or without, the control
// plane (static stability).

import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { RoutingSnapshot } from './routing-snapshot.ts';
import { checkRoutingSnapshot } from './snapshot-check.ts';

export const snapshotFileName = 'routing-snapshot.json';

export type PersistedSnapshot =
  | { readonly ok: true; readonly snapshot: RoutingSnapshot | null }
  | { readonly ok: false; readonly reason: string };

/** The persisted snapshot; `snapshot: null` when there is none yet. */
export async function readPersistedSnapshot(stateDir: string): Promise<PersistedSnapshot> {
  let text: string;
  try {
    text = await readFile(join(stateDir, snapshotFileName), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, snapshot: null };
    return { ok: false, reason: (error as Error).message };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `not JSON: ${(error as Error).message}` };
  }
  const check = checkRoutingSnapshot(value);
  return check.ok ? { ok: true, snapshot: check.snapshot } : check;
}

export async function persistSnapshot(stateDir: string, snapshot: RoutingSnapshot): Promise<void> {
  await mkdir(stateDir, { recursive: true });
  const target = join(stateDir, snapshotFileName);
  const temp = `${target}.${process.pid}.tmp`;
  const file = await open(temp, 'w');
  try {
    await file.writeFile(JSON.stringify(snapshot));
    await file.sync();
  } finally {
    await file.close();
  }
  try {
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
