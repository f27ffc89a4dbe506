/**
 * What the system says of a process (Linux /proc; elsewhere only whether the pid exists): what a journal records of
 * the run that made it, and what recovery compares it with (journal-writer.ts).
 */
import fs from 'node:fs';
import type { ProcessSeen } from './journal-writer.js';
import { errorCode } from './write-target.js';

export function bootId(): string | null {
  try {
    return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return null;
  }
}

/** The start time of `pid` (field 22 of /proc/<pid>/stat, clock ticks since boot), or null where it cannot be read. */
export function startTimeOf(pid: number | 'self'): string | null {
  return statOf(pid)?.starttime ?? null;
}

export function seeProcess(pid: number): ProcessSeen {
  const now = { boot: bootId(), monotonic: process.hrtime.bigint(), wall: Date.now() };
  if (!Number.isInteger(pid) || pid <= 0) return { ...now, alive: false, starttime: null };
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists, and belongs to another user.
    if (errorCode(error) !== 'EPERM') return { ...now, alive: false, starttime: null };
  }
  const stat = statOf(pid);
  // Without /proc it is taken for alive: the signal found it.
  return { ...now, alive: stat?.state !== 'Z', starttime: stat?.starttime ?? null };
}

function statOf(pid: number | 'self'): { state: string; starttime: string | null } | null {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may hold spaces and parentheses: the fields after its last `)`
  // are fields 3 onwards.
  const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const starttime = after[22 - 3];
  return {
    state: after[0] ?? '',
    starttime: starttime !== undefined && /^\d+$/.test(starttime) ? starttime : null,
  };
}
