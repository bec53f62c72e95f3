// Stops the serving platform of a home and everything it runs (`kiln down`). A live `kiln up`
// is asked to shut down (SIGTERM: it stops its gateway and workers itself, draining them);
// a platform that died left its gateway and workers serving (they outlive it), so those are
// stopped here, found by the records they keep in the home and signalled only while their
// pid still names them. Holding the home's lock meanwhile, so no `kiln up` starts halfway.
//
//   live platform:  SIGTERM ─► its lock is free ─► sweep what it may have left ─► done
//   dead platform:  take the lock ─► stop the recorded gateway and workers ─► done

import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isRunning, stopProcess } from '../core/process-identity.ts';
import { gatewayRecordFile, readGatewayRecord } from '../gateway/gateway-record.ts';
import { LocalBackend } from './backends/local/local-backend.ts';
import { HomeInUseError, lockHome, type HomeLock } from './home-lock.ts';

export interface Leftovers {
  /** A gateway was running (and was stopped). */
  readonly gateway: boolean;
  /** Workers that were running (and were stopped). */
  readonly workers: number;
}

export type HomeStopped =
  | { readonly kind: 'platform'; readonly pid: number; readonly leftovers: Leftovers }
  | { readonly kind: 'leftovers'; readonly leftovers: Leftovers }
  | { readonly kind: 'nothing' };

/** The platform could not be stopped (not ours to signal, or it would not stop). */
export class StopHomeError extends Error {
  readonly code = 'KILN_STOP_FAILED';
}

export async function stopHome(
  home: string,
  options: { readonly timeoutMs?: number } = {},
): Promise<HomeStopped> {
  // A folder that never served holds nothing to stop; do not make one by looking.
  if (!existsSync(join(home, 'run'))) return { kind: 'nothing' };
  const timeoutMs = options.timeoutMs ?? 60_000;
  const first = tryLock(home);
  let lock: HomeLock | null = first instanceof HomeInUseError ? null : first;
  let platformPid: number | null = null;
  if (first instanceof HomeInUseError) {
    const holder = first.holder;
    // Signalled only while its start mark still names it: the record of a platform that just
    // died (another starting in its place, or another `kiln down`, which records nothing)
    // must never send a signal to whatever reuses its pid. Then the lock is simply awaited.
    if (holder !== null && isRunning(holder)) {
      platformPid = holder.pid;
      signalPlatform(holder.pid, 'SIGTERM');
    }
    lock = await waitForLock(home, timeoutMs);
    if (lock === null && platformPid !== null && holder !== null && isRunning(holder)) {
      // It would not stop in time: end it; what it leaves is swept below.
      signalPlatform(holder.pid, 'SIGKILL');
      lock = await waitForLock(home, 10_000);
    }
    if (lock === null) {
      throw new StopHomeError(
        platformPid === null
          ? `${home} is held by a process that did not record itself (a platform starting, or another kiln down)`
          : `the platform serving ${home} (pid ${platformPid}) did not stop`,
      );
    }
  }
  try {
    // Whatever platform.pid names is not the lock's holder (we are): a record left by a
    // platform that died. Gone, so no later `kiln down` or message names that pid.
    await rm(join(home, 'run', 'platform.pid'), { force: true });
    const leftovers = await stopLeftovers(home);
    if (platformPid !== null) return { kind: 'platform', pid: platformPid, leftovers };
    return leftovers.gateway || leftovers.workers > 0
      ? { kind: 'leftovers', leftovers }
      : { kind: 'nothing' };
  } finally {
    lock?.release();
  }
}

/** Stops the gateway and workers recorded in the home (its platform is gone). */
async function stopLeftovers(home: string): Promise<Leftovers> {
  const stateDir = join(home, 'gateway');
  const record = readGatewayRecord(stateDir);
  let gateway = false;
  if (record !== null && isRunning(record.process)) {
    gateway = true;
    await stopProcess(record.process, 10_000);
  }
  // A gateway that had to be killed could not remove its record.
  await rm(join(stateDir, gatewayRecordFile), { force: true });
  // The backend's start-up scan: removes the folders of workers that are gone, stops those
  // that cannot be adopted, and offers the rest, which are stopped here (draining first).
  const backend = new LocalBackend({ runDir: join(home, 'run') });
  await backend.init();
  const survivors = backend.survivors();
  await Promise.all(survivors.map((survivor) => survivor.stop(30_000)));
  await rm(join(home, 'run', 'platform.url'), { force: true });
  return { gateway, workers: survivors.length };
}

function tryLock(home: string): HomeLock | HomeInUseError {
  try {
    return lockHome(home, { announce: false });
  } catch (error) {
    if (error instanceof HomeInUseError) return error;
    throw error;
  }
}

async function waitForLock(home: string, timeoutMs: number): Promise<HomeLock | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lock = tryLock(home);
    if (!(lock instanceof HomeInUseError)) return lock;
    if (Date.now() >= deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function signalPlatform(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ESRCH') return; // ending already: its lock goes with it
    throw new StopHomeError(
      `cannot signal the platform (pid ${pid}): ${code === 'EPERM' ? 'permission denied' : String(code)}`,
    );
  }
}
