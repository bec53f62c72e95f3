// One serving platform per home. A second one on the same folder would run a second
// reconciler over the same endpoints (every replica started twice) and a second gateway
// beside the first. The platform that serves holds <home>/run/platform.lock (its pid,
// created with O_EXCL); another start refuses while that process lives (`kiln up --api-only`
// runs beside it without the lock: registry API only), and takes over a lock whose holder
// died without removing it.

import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface HomeLock {
  readonly path: string;
  /** Removes the lock if it is still this holder's. */
  release(): void;
}

/** Another live process serves this home. */
export class HomeInUseError extends Error {
  readonly code = 'KILN_HOME_IN_USE';
  constructor(
    readonly home: string,
    readonly pid: number,
  ) {
    super(`the Kiln home ${home} is served by another platform (pid ${pid})`);
  }
}

export function lockHome(home: string, pid = process.pid): HomeLock {
  const path = join(home, 'run', 'platform.lock');
  mkdirSync(dirname(path), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx', 0o600);
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'EEXIST') throw error;
      const holder = readHolder(path);
      if (holder !== null && holder !== pid && processAlive(holder))
        throw new HomeInUseError(home, holder);
      // Its holder is gone (or it is unreadable: a crash mid-write): take it over.
      rmSync(path, { force: true });
      continue;
    }
    try {
      writeSync(fd, `${pid}\n`);
    } finally {
      closeSync(fd);
    }
    return {
      path,
      release(): void {
        if (readHolder(path) === pid) rmSync(path, { force: true });
      },
    };
  }
  // Two starts raced for a stale lock and the other one won.
  throw new HomeInUseError(home, readHolder(path) ?? 0);
}

function readHolder(path: string): number | null {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** Whether a process with this pid exists (EPERM: it does, and is someone else's). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: unknown }).code === 'EPERM';
  }
}
