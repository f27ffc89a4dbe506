/**
 * A lock file for a read-modify-write that two delegate-git processes must not interleave (two `config set` each
 * reading the same settings and writing back only their own change; two `init` each writing a policy of its own).
 * The lock is `<name>.lock`, created with O_EXCL, so exactly one process holds it; the others wait a little, then
 * give up with a message naming it. It holds its holder's pid and host, so that a lock left by a process that was
 * killed (SIGKILL, a power loss: no `finally` runs) is recognised and taken over, instead of blocking every later
 * run until someone removes it by hand.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DelegateGitError } from './errors.js';
import { processRuns } from './process-runs.js';

export interface FileLockOptions {
  /** How long to wait for another holder, in milliseconds, before giving up. */
  waitMs: number;
  /** What the holder is doing, for the message when it is still held: "is changing the same settings". */
  holderDoing: string;
}

/** How often a waiting process looks at the lock again: short, as the writes a lock guards take milliseconds. */
const POLL_MS = 25;

/** Runs `work` holding `lock` (created, with its directory, if need be); the lock is removed however work ends. */
export async function withFileLock<T>(
  lock: string,
  options: FileLockOptions,
  work: () => Promise<T> | T,
): Promise<T> {
  const mine = await takeFileLock(lock, options);
  try {
    return await work();
  } finally {
    releaseFileLock(lock, mine);
  }
}

async function takeFileLock(lock: string, { waitMs, holderDoing }: FileLockOptions): Promise<string> {
  // Unique to this holder: release removes the lock only while it is still this one.
  const mine = `${process.pid} ${os.hostname()} ${randomBytes(8).toString('hex')}\n`;
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      fs.mkdirSync(path.dirname(lock), { recursive: true });
      const fd = fs.openSync(lock, 'wx', 0o644);
      try {
        fs.writeSync(fd, mine);
      } catch (error) {
        fs.rmSync(lock, { force: true }); // never leave a lock that names nobody
        throw error;
      } finally {
        fs.closeSync(fd);
      }
      return mine;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new DelegateGitError(
          'IO',
          `Could not create the lock file ${lock}: ${(error as Error).message}. Nothing was changed. Check that ${path.dirname(lock)} is writable.`,
          { cause: error },
        );
    }
    const held = heldLock(lock);
    if (held === null) continue; // released between our attempt and the read: try again at once
    if (holderIsGone(held)) {
      removeStale(lock, held);
      continue;
    }
    if (Date.now() >= deadline) {
      const pid = held.split(' ')[0];
      throw new DelegateGitError(
        'IO',
        `Another delegate-git${/^\d+$/.test(pid ?? '') ? ` (process ${pid})` : ''} ${holderDoing}: it holds the lock file ${lock}, still after ${waitMs / 1000} s. Nothing was changed. Run the command again once it has finished; if no other delegate-git is running, remove ${lock} and run it again.`,
      );
    }
    await sleep(POLL_MS);
  }
}

function releaseFileLock(lock: string, mine: string): void {
  // Only our own: were ours ever taken over (see removeStale), the lock there now is another holder's.
  if (readLock(lock) === mine) fs.rmSync(lock, { force: true });
}

/**
 * What the lock that exists holds; null once it is gone. A lock that cannot be read (a directory there, a file where
 * its directory should be, no permission) is refused at once: waiting on it would spin for ever (fc audit f03).
 */
function heldLock(lock: string): string | null {
  try {
    return fs.readFileSync(lock, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    const what =
      code === 'EISDIR'
        ? `${lock} is a directory`
        : code === 'ENOTDIR'
          ? `${path.dirname(lock)} is not a directory`
          : `${lock} cannot be read (${(error as Error).message})`;
    throw new DelegateGitError(
      'IO',
      `${what}, so the lock delegate-git takes there cannot be taken. Nothing was changed. Remove it (or fix its permissions), then run the command again.`,
      { cause: error },
    );
  }
}

function readLock(lock: string): string | null {
  try {
    return fs.readFileSync(lock, 'utf8');
  } catch {
    return null;
  }
}

/**
 * Whether the lock's holder has ended without removing it: a process of this host whose pid no longer runs
 * (signal 0 checks without sending anything: ESRCH, no such process; EPERM means it runs as another user). A lock of
 * another host (a git directory on a shared disk) or one that names nobody (its holder killed between creating it
 * and writing its pid, a window of one system call) is never judged gone: it is waited for, and the message says
 * to remove it. A pid reused by an unrelated process reads as alive, with the same outcome.
 */
function holderIsGone(held: string): boolean {
  const [pid, host] = held.split(' ');
  if (!/^\d+$/.test(pid ?? '') || host !== os.hostname()) return false;
  return !processRuns(Number(pid));
}

/**
 * Removes a stale lock, and only it: the lock is first moved aside under a name of our own (atomically), then
 * compared with what was judged stale. Two waiters can judge the same lock stale at once and one of them take it
 * over first; the other then moves the new holder's lock aside, sees it is not the stale one, and puts it back.
 */
function removeStale(lock: string, stale: string): void {
  const aside = `${lock}.${process.pid}.${randomBytes(4).toString('hex')}.stale`;
  try {
    fs.renameSync(lock, aside);
  } catch {
    return; // gone already: another waiter removed it
  }
  try {
    if (readLock(aside) !== stale) fs.linkSync(aside, lock);
  } catch {
    // Taken meanwhile by a third waiter: the one moved aside is given up, and its holder's release leaves it alone.
  } finally {
    fs.rmSync(aside, { force: true });
  }
}
