import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir } from '../../../test/support/git-repo.js';
import { DelegateGitError } from '../src/errors.js';
import { withFileLock } from '../src/file-lock.js';

const root = makeTempDir();
afterAll(() => removeDir(root));

let dir: string;
let lock: string;
let sleeper: ChildProcess | null = null;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(root, 'lock-'));
  lock = path.join(dir, 'state', 'thing.json.lock'); // its directory does not exist yet
});
afterEach(() => {
  sleeper?.kill('SIGKILL');
  sleeper = null;
});

const doing = { holderDoing: 'is changing the same thing' };

/** The pid of a process that has ended (spawned, waited for and reaped). */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '']).pid!;
}

/** The pid of a process that runs until the test ends. */
function livePid(): number {
  sleeper = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  return sleeper.pid!;
}

function holdAs(pid: number, host = os.hostname()): string {
  const text = `${pid} ${host} 0123456789abcdef\n`;
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  fs.writeFileSync(lock, text);
  return text;
}

describe('withFileLock', () => {
  it('creates the lock (and its directory) with its pid while the work runs, and removes it after', async () => {
    const seen = await withFileLock(lock, { waitMs: 1000, ...doing }, () => fs.readFileSync(lock, 'utf8'));
    expect(seen.split(' ').slice(0, 2)).toEqual([String(process.pid), os.hostname()]);
    expect(fs.readdirSync(path.dirname(lock))).toEqual([]);
  });

  it('removes the lock when the work fails, and passes the failure on', async () => {
    await expect(
      withFileLock(lock, { waitMs: 1000, ...doing }, () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(fs.existsSync(lock)).toBe(false);
  });

  it('takes over a lock whose holder no longer runs (a run killed with SIGKILL), leaving nothing behind', async () => {
    holdAs(deadPid());
    const started = Date.now();
    const ran = await withFileLock(lock, { waitMs: 5000, ...doing }, () => 'ran');
    expect(ran).toBe('ran');
    expect(Date.now() - started).toBeLessThan(2000); // taken over at once, not after the wait
    expect(fs.readdirSync(path.dirname(lock))).toEqual([]); // no lock, no stale copy moved aside
  });

  it('waits for a live holder, then fails naming the lock file and saying to remove it; the lock is left alone', async () => {
    const pid = livePid();
    const held = holdAs(pid);
    let ran = false;
    const started = Date.now();
    const error = await withFileLock(lock, { waitMs: 300, ...doing }, () => {
      ran = true;
    }).catch((e: unknown) => e);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(ran).toBe(false);
    expect(error).toBeInstanceOf(DelegateGitError);
    expect((error as DelegateGitError).code).toBe('IO');
    expect((error as DelegateGitError).message).toBe(
      `Another delegate-git (process ${pid}) is changing the same thing: it holds the lock file ${lock}, still after 0.3 s. Nothing was changed. Run the command again once it has finished; if no other delegate-git is running, remove ${lock} and run it again.`,
    );
    expect(fs.readFileSync(lock, 'utf8')).toBe(held);
  });

  it('refuses at once, naming it, a lock that is a directory or whose directory is a file (it spun for ever: fc audit f03); control: a lock removed meanwhile is taken', async () => {
    fs.mkdirSync(lock, { recursive: true });
    const started = Date.now();
    const directory = await withFileLock(lock, { waitMs: 60_000, ...doing }, () => 'ran').catch(
      (e: unknown) => e,
    );
    expect(Date.now() - started).toBeLessThan(5000);
    expect((directory as DelegateGitError).code).toBe('IO');
    expect((directory as DelegateGitError).message).toBe(
      `${lock} is a directory, so the lock delegate-git takes there cannot be taken. Nothing was changed. Remove it (or fix its permissions), then run the command again.`,
    );
    fs.rmSync(lock, { recursive: true });

    const parent = path.dirname(lock);
    fs.rmSync(parent, { recursive: true, force: true });
    fs.writeFileSync(parent, 'not a directory\n');
    const file = await withFileLock(lock, { waitMs: 60_000, ...doing }, () => 'ran').catch((e: unknown) => e);
    expect((file as DelegateGitError).message).toContain(`${parent} is not a directory`);
    fs.rmSync(parent);

    expect(await withFileLock(lock, { waitMs: 1000, ...doing }, () => 'ran')).toBe('ran');
  });

  it('goes on once a live holder releases the lock within the wait', async () => {
    holdAs(livePid());
    setTimeout(() => fs.rmSync(lock), 150);
    expect(await withFileLock(lock, { waitMs: 10_000, ...doing }, () => 'ran')).toBe('ran');
    expect(fs.existsSync(lock)).toBe(false);
  });

  it('never judges stale a lock of another host (a shared disk) or one that names nobody: they are waited for', async () => {
    holdAs(deadPid(), `not-${os.hostname()}`);
    await expect(withFileLock(lock, { waitMs: 100, ...doing }, () => 'ran')).rejects.toThrow(lock);
    fs.writeFileSync(lock, '');
    await expect(withFileLock(lock, { waitMs: 100, ...doing }, () => 'ran')).rejects.toThrow(
      `Another delegate-git is changing the same thing: it holds the lock file ${lock}`,
    );
  });

  it('lets one holder at a time read, change and write a file (control: without the lock, changes are lost)', async () => {
    const counter = path.join(dir, 'counter');
    const increment = async () => {
      const value = fs.existsSync(counter) ? Number(fs.readFileSync(counter, 'utf8')) : 0;
      await sleep(5); // the other writers read meanwhile
      fs.writeFileSync(counter, String(value + 1));
    };
    await Promise.all(Array.from({ length: 8 }, () => increment()));
    expect(Number(fs.readFileSync(counter, 'utf8'))).toBeLessThan(8);

    fs.rmSync(counter);
    await Promise.all(
      Array.from({ length: 8 }, () => withFileLock(lock, { waitMs: 10_000, ...doing }, increment)),
    );
    expect(Number(fs.readFileSync(counter, 'utf8'))).toBe(8);
    expect(fs.existsSync(lock)).toBe(false);
  });

  it('takes over one stale lock once when several wait on it: they still hold it one at a time', async () => {
    holdAs(deadPid());
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 6 }, () =>
        withFileLock(lock, { waitMs: 10_000, ...doing }, async () => {
          most = Math.max(most, ++inside);
          await sleep(5);
          inside--;
        }),
      ),
    );
    expect(most).toBe(1);
    expect(fs.readdirSync(path.dirname(lock))).toEqual([]);
  });
});
