// A process named so that a recycled pid never matches it. The platform signals processes
// it did not spawn in its own life (a gateway or worker an earlier `kiln up` started and
// left running, adopted or stopped at the next start or by `kiln down`); a pid alone would
// name whatever process the OS gave that number since. So each such process records its pid
// with its start mark — on Linux the boot id and its start time in clock ticks
// (/proc/<pid>/stat), elsewhere `ps`'s start time — and a pid is signalled only while both
// still match. A zombie (exited, not yet reaped by whoever adopted the orphan) counts as gone.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface ProcessIdentity {
  readonly pid: number;
  readonly startMark: string;
}

/** The identity of a live process (this one: `process.pid`); null if there is none. */
export function identifyProcess(pid: number): ProcessIdentity | null {
  const startMark = startMarkOf(pid);
  return startMark === null ? null : { pid, startMark };
}

/** Whether the process recorded as `identity` still runs (not a recycled pid, not a zombie). */
export function isRunning(identity: ProcessIdentity): boolean {
  return startMarkOf(identity.pid) === identity.startMark;
}

/** Reads a recorded identity from parsed JSON; null if the value is not one. */
export function parseProcessIdentity(value: unknown): ProcessIdentity | null {
  const record = value as { pid?: unknown; startMark?: unknown } | null;
  if (typeof record !== 'object' || record === null) return null;
  const { pid, startMark } = record;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return null;
  if (typeof startMark !== 'string' || startMark === '') return null;
  return { pid, startMark };
}

/**
 * Asks the process to stop (SIGTERM: it drains), kills it after graceMs, and resolves once it
 * is gone. Never signals a pid that no longer names this process.
 */
export async function stopProcess(identity: ProcessIdentity, graceMs: number): Promise<void> {
  if (!signal(identity, 'SIGTERM')) return;
  const killAt = Date.now() + graceMs;
  let killed = false;
  while (isRunning(identity)) {
    if (!killed && Date.now() >= killAt) {
      killed = true;
      signal(identity, 'SIGKILL');
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Sends `name` if the process is still the one recorded; false if it is gone. */
export function signal(identity: ProcessIdentity, name: NodeJS.Signals): boolean {
  if (!isRunning(identity)) return false;
  try {
    process.kill(identity.pid, name);
    return true;
  } catch {
    return false; // gone between the check and the signal
  }
}

let bootId: string | null | undefined;

function startMarkOf(pid: number): string | null {
  if (!Number.isSafeInteger(pid) || pid <= 0) return null;
  if (process.platform === 'linux') return linuxStartMark(pid);
  try {
    const out = execFileSync('ps', ['-o', 'stat=,lstart=', '-p', String(pid)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    if (out === '' || out.startsWith('Z')) return null;
    return out.replace(/^\S+\s+/, '');
  } catch {
    return null; // ps exits 1 when there is no such process
  }
}

function linuxStartMark(pid: number): string | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // "pid (comm) state ppid … starttime …": comm may hold spaces and parentheses, so the
  // fields are counted from the last ')'. After it: field 3 (state) … field 22 (starttime).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const startTicks = fields[19];
  if (state === undefined || startTicks === undefined || state === 'Z' || state === 'X')
    return null;
  bootId ??= readBootId();
  return `${bootId ?? 'boot'}:${startTicks}`;
}

function readBootId(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return null;
  }
}
