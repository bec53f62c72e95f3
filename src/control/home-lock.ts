// One serving platform per home. A second one on the same folder would run a second
// reconciler over the same endpoints (every replica started twice) and a second gateway
// beside the first. The serving platform holds an exclusive SQLite lock on
// <home>/run/platform.lock for as long as it lives — a file lock the OS drops when the process
// ends, however it ends, so there is no stale lock to detect and no pid to trust — and writes
// its pid and start mark beside it (platform.pid: `PID START-MARK`, src/core/process-identity.ts)
// for the message another start prints and for `kiln down`, which signals that pid only while
// the start mark still names it. `kiln up --api-only` runs without the lock: the registry API
// alone. `kiln down` takes the lock without writing platform.pid (it serves nothing, and a
// second `kiln down` must not take it for a platform to signal).

import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { identifyProcess, type ProcessIdentity } from '../core/process-identity.ts';

export interface HomeLock {
  readonly path: string;
  /** Gives the home up (the OS does as much if the process dies). */
  release(): void;
}

/** Another live process serves this home. */
export class HomeInUseError extends Error {
  readonly code = 'KILN_HOME_IN_USE';
  constructor(
    readonly home: string,
    /** The holder's pid as it wrote it; null if it could not be read. */
    readonly pid: number | null,
    /** The holder as it recorded itself (pid + start mark); null if it did not. */
    readonly holder: ProcessIdentity | null = null,
  ) {
    super(
      `the Kiln home ${home} is served by another platform${pid === null ? '' : ` (pid ${pid})`}`,
    );
  }
}

export function lockHome(
  home: string,
  options: {
    /** Record this process as the platform serving the home (default true). */
    readonly announce?: boolean;
  } = {},
): HomeLock {
  const dir = join(home, 'run');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'platform.lock');
  const pidPath = join(dir, 'platform.pid');
  const db = new Database(path, { timeout: 0 });
  try {
    // Rollback-journal mode: EXCLUSIVE locks the file against every other connection, in
    // this process or another, until the transaction ends — here, until release or exit.
    db.pragma('journal_mode = DELETE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    db.close();
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY')
      throw new HomeInUseError(home, readPid(pidPath), readHolder(pidPath));
    throw error;
  }
  const announce = options.announce !== false;
  if (announce) {
    const me = identifyProcess(process.pid);
    writeFileSync(pidPath, `${process.pid}${me === null ? '' : ` ${me.startMark}`}\n`);
  }
  let held = true;
  return {
    path,
    release(): void {
      if (!held) return;
      held = false;
      if (announce && readPid(pidPath) === process.pid) rmSync(pidPath, { force: true });
      try {
        db.exec('ROLLBACK');
      } finally {
        db.close();
      }
    },
  };
}

function readPid(path: string): number | null {
  return readRecord(path)?.pid ?? null;
}

function readHolder(path: string): ProcessIdentity | null {
  const record = readRecord(path);
  return record === null || record.startMark === '' ? null : record;
}

function readRecord(path: string): { pid: number; startMark: string } | null {
  try {
    const [pidText = '', startMark = ''] = readFileSync(path, 'utf8').trim().split(' ');
    const pid = Number(pidText);
    return Number.isSafeInteger(pid) && pid > 0 ? { pid, startMark } : null;
  } catch {
    return null;
  }
}
