// `delegate-git delegate` killed outright (SIGKILL: no handler runs) while its unit's verification runs: the worker's
// files are on disk, with no verdict, in place of what they held (a user's uncommitted edit among them). Before, that
// was lost. Now the run keeps a copy of what the files held (in .git/delegate-git/unrecorded/) before it writes, and
// the next delegate in the worktree puts the files back, each only while it still holds what the worker wrote, and
// says so. Built CLI as a child process, real SIGKILL, a real HTTP worker on 127.0.0.1, temp repositories.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import {
  type DelegateRepo,
  fileBlock,
  makeDelegateRepo,
  patchBlock,
  type Receipt,
} from '../support/delegate-repo.js';
import { type FakeWorker, startFakeWorker } from '../support/fake-worker.js';
import { isAlive } from '../support/processes.js';

const COMMITTED_A = 'export function a() {\n  return 1;\n}\n';
/** The user's own edit, not committed: what a killed run must not lose. */
const EDITED_A = 'export function a() {\n  return 1; // mine\n}\n';
const MODE_A = 0o640;

let worker: FakeWorker;
const repos: DelegateRepo[] = [];

beforeAll(async () => {
  worker = await startFakeWorker();
});

afterEach(() => {
  for (const repo of repos.splice(0)) repo.cleanup();
});

afterAll(async () => {
  await worker?.close();
});

async function freshRepo(): Promise<DelegateRepo> {
  const repo = await makeDelegateRepo({ workerUrl: worker.url, files: { 'src/a.js': COMMITTED_A } });
  repos.push(repo);
  repo.write('src/a.js', EDITED_A);
  fs.chmodSync(path.join(repo.dir, 'src/a.js'), MODE_A);
  return repo;
}

function reply(): string {
  return (
    patchBlock('src/a.js', [['  return 1; // mine', '  return 2;']]) +
    fileBlock('src/new/b.js', 'export const b = 2;')
  );
}

/** Its verification writes `sentinel` (its pid) and waits `waitMs`. */
function unit(repo: DelegateRepo, sentinel: string, waitMs: number, name = 'killed'): string {
  const script = `require('fs').writeFileSync(${JSON.stringify(sentinel)}, String(process.pid)); setTimeout(() => {}, ${waitMs})`;
  return repo.writeUnit(
    {
      taskName: name,
      instruction: 'Make a return 2 and add b.',
      targetFiles: ['src/a.js', 'src/new/b.js'],
      runVerification: `node -e ${JSON.stringify(script)}`,
      verificationRepeats: 1,
    },
    `${name}.json`,
  );
}

/** A unit that writes only src/c.js: the run after the killed one, whose own files are not the killed run's. */
function otherUnit(repo: DelegateRepo): string {
  worker.enqueue({ content: fileBlock('src/c.js', 'export const c = 3;') });
  return repo.writeUnit(
    {
      taskName: 'next',
      instruction: 'Add c.',
      targetFiles: ['src/c.js'],
      runVerification: 'node -e 0',
      verificationRepeats: 1,
    },
    'next.json',
  );
}

async function until(ready: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function ledgerTip(repo: DelegateRepo): string | null {
  try {
    return repo.gitText(['rev-parse', '-q', '--verify', 'refs/notes/delegations']);
  } catch {
    return null;
  }
}

/** Runs the unit and kills the delegate with SIGKILL (and its verification) once the files are written. */
async function killedWhileVerifying(repo: DelegateRepo): Promise<number> {
  const sentinel = path.join(repo.root, 'verifying');
  worker.enqueue({ content: reply() });
  const run = repo.start(['delegate', unit(repo, sentinel, 30_000), '--json']);
  await until(() => fs.existsSync(sentinel) && fs.readFileSync(sentinel, 'utf8') !== '', 'the verification');
  run.child.kill('SIGKILL');
  const result = await run.result;
  expect(result.signal).toBe('SIGKILL');
  process.kill(Number(fs.readFileSync(sentinel, 'utf8')), 'SIGKILL');
  // What was lost before: the user's edit is gone from the work tree, and nothing is recorded.
  expect(repo.read('src/a.js')).toBe(COMMITTED_A.replace('return 1;', 'return 2;'));
  expect(repo.exists('src/new/b.js')).toBe(true);
  return run.child.pid!;
}

function notice(pid: number, rest: string): RegExp {
  const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(
    `^An earlier \`delegate-git delegate\` of "killed" \\(process ${pid}, started [0-9T:.-]+Z\\) stopped before it could finish \\(killed, or the machine went down\\)\\. ${escaped(rest)}\n`,
  );
}

describe('a delegate killed while its verification runs', () => {
  test('the next delegate puts back what the worker wrote (the user edit, its mode; the new file and its directory gone) and says so', async () => {
    const repo = await freshRepo();
    const tipBefore = ledgerTip(repo);
    const pid = await killedWhileVerifying(repo);
    expect(ledgerTip(repo)).toBe(tipBefore);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    expect
      .soft(next.stderr)
      .toMatch(
        notice(
          pid,
          "Its verdict was never recorded, so the worker's files were put back as they were before it: src/a.js, src/new/b.js.",
        ),
      );
    expect.soft(next.code).toBe(0);
    expect.soft(fs.readFileSync(path.join(repo.dir, 'src/a.js'), 'utf8')).toBe(EDITED_A);
    expect.soft(fs.statSync(path.join(repo.dir, 'src/a.js')).mode & 0o7777).toBe(MODE_A);
    expect.soft(repo.exists('src/new')).toBe(false);
    // The run after it did its own work as usual.
    const receipt = JSON.parse(next.stdout) as Receipt;
    expect.soft(receipt.verdict).toBe('UNIT_PASSED');
    expect.soft(repo.read('src/c.js')).toBe('export const c = 3;\n');
    // Nothing is left to put back: a third run says nothing of it.
    expect.soft(fs.readdirSync(path.join(repo.stateDir, 'unrecorded'))).toEqual([]);
    const third = await repo.cli(['delegate', otherUnit(repo), '--json']);
    expect.soft(third.stderr).toBe('');
  });

  test('a file changed since the worker wrote it stays as it is, and what it held before is kept and named', async () => {
    const repo = await freshRepo();
    const pid = await killedWhileVerifying(repo);
    const later = 'export function a() {\n  return 3; // edited after the kill\n}\n';
    repo.write('src/a.js', later);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    const kept = next.stderr.match(/what it held before is kept in (\S+)\)/)?.[1];
    expect(kept).toBeDefined();
    expect
      .soft(next.stderr)
      .toMatch(
        notice(
          pid,
          `Its verdict was never recorded, so the worker's files were put back as they were before it: src/new/b.js. Left as they are: src/a.js (changed since the worker wrote it; what it held before is kept in ${kept}). The gates refuse what the worker wrote until it is delegated again or reviewed.`,
        ),
      );
    expect.soft(next.code).toBe(0);
    expect.soft(repo.read('src/a.js')).toBe(later);
    expect.soft(repo.exists('src/new')).toBe(false);
    expect.soft(kept!.startsWith(path.join(repo.stateDir, 'unrecorded-kept'))).toBe(true);
    expect.soft(fs.readFileSync(kept!, 'utf8')).toBe(EDITED_A);
    // Said once: the kept copy is no longer a journal to act on.
    const third = await repo.cli(['delegate', otherUnit(repo), '--json']);
    expect.soft(third.stderr).toBe('');
    expect.soft(repo.read('src/a.js')).toBe(later);
  });
});

/** A journal as a run leaves it, for the cases a kill cannot be timed to reach. */
function writeJournal(
  repo: DelegateRepo,
  journal: { pid: number; boot?: string | null; ledgerTip: string | null },
  files: Array<{ path: string; previous: string | null }>,
): string {
  const dir = path.join(repo.stateDir, 'unrecorded', `${journal.pid}-handmade`);
  fs.mkdirSync(dir, { recursive: true });
  files.forEach((f, i) => {
    if (f.previous !== null) fs.writeFileSync(path.join(dir, String(i)), f.previous);
  });
  const boot = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  fs.writeFileSync(
    path.join(dir, 'journal.json'),
    JSON.stringify({
      version: 1,
      pid: journal.pid,
      boot: journal.boot === undefined ? boot : journal.boot,
      started: '2026-12-03T00:00:00.000Z',
      taskName: 'killed',
      ledgerTip: journal.ledgerTip,
      files: files.map((f, i) => ({
        path: f.path,
        absolute: path.join(repo.dir, f.path),
        inRepository: true,
        written: createHash('sha256')
          .update(fs.readFileSync(path.join(repo.dir, f.path)))
          .digest('hex'),
        previous: f.previous === null ? null : { copy: String(i), mode: 0o644 },
      })),
      createdDirs: [],
    }),
  );
  return dir;
}

function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  const pid = Number(child.stdout);
  expect(isAlive(pid)).toBe(false);
  return pid;
}

describe('journals the next delegate finds (hand-made, as a run leaves them)', () => {
  test('a run killed after its record was written: its files stay as recorded', async () => {
    const repo = await freshRepo();
    const tipBefore = ledgerTip(repo);
    worker.enqueue({ content: reply() });
    const recorded = await repo.cli(['delegate', unit(repo, path.join(repo.root, 'quick'), 0), '--json']);
    expect(recorded.code).toBe(0);
    const pid = deadPid();
    writeJournal(repo, { pid, ledgerTip: tipBefore }, [{ path: 'src/a.js', previous: EDITED_A }]);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    expect
      .soft(next.stderr)
      .toMatch(notice(pid, 'Its verdict had been recorded, so its files stay as recorded.'));
    expect.soft(repo.read('src/a.js')).toBe(COMMITTED_A.replace('return 1;', 'return 2;'));
  });

  test('control: the same journal with the record older than the run puts the file back', async () => {
    const repo = await freshRepo();
    worker.enqueue({ content: reply() });
    const recorded = await repo.cli(['delegate', unit(repo, path.join(repo.root, 'quick'), 0), '--json']);
    expect(recorded.code).toBe(0);
    const pid = deadPid();
    // The ledger already held that record when this run began: not its own.
    writeJournal(repo, { pid, ledgerTip: ledgerTip(repo) }, [{ path: 'src/a.js', previous: EDITED_A }]);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    expect
      .soft(next.stderr)
      .toMatch(
        notice(
          pid,
          "Its verdict was never recorded, so the worker's files were put back as they were before it: src/a.js.",
        ),
      );
    expect.soft(repo.read('src/a.js')).toBe(EDITED_A);
  });

  test('a journal of a run still going (another delegate at work) is left alone; one from an earlier boot is acted on', async () => {
    const repo = await freshRepo();
    const written = COMMITTED_A.replace('return 1;', 'return 9;');
    repo.write('src/a.js', written);
    const live = writeJournal(repo, { pid: process.pid, ledgerTip: null }, [
      { path: 'src/a.js', previous: EDITED_A },
    ]);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    expect.soft(next.stderr).toBe('');
    expect.soft(repo.read('src/a.js')).toBe(written);
    expect.soft(fs.existsSync(live)).toBe(true);

    // The same pid in another boot is some other process: that run is gone.
    fs.rmSync(live, { recursive: true });
    writeJournal(repo, { pid: process.pid, boot: 'an-earlier-boot', ledgerTip: null }, [
      { path: 'src/a.js', previous: EDITED_A },
    ]);
    const after = await repo.cli(['delegate', otherUnit(repo), '--json']);
    expect.soft(after.stderr).toContain("the worker's files were put back as they were before it: src/a.js.");
    expect.soft(repo.read('src/a.js')).toBe(EDITED_A);
  });
});
