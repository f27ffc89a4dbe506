// `delegate-git delegate` killed outright (SIGKILL: no handler runs) while its unit's verification runs: the worker's
// files are on disk, with no verdict, in place of what they held (a user's uncommitted edit among them). Before, that
// was lost. Now the run keeps a copy of what the files held (in .git/delegate-git/unrecorded/) before it writes, and
// the next delegate in the worktree puts the files back, each only while it still holds what the worker wrote and the
// user has not staged or committed it so (they kept it), and says so. Only the run's own verdict keeps its files
// (rt53 f07: a reviewer's rejection did), and then the copies are kept all the same; journals of several dead runs
// are undone newest first (rt53 f03); a journal is acted on only as a run writes it (rt53 f02: a planted one wrote
// outside the work tree, into .git, with a setuid bit), and one refused is named once its process is gone, as made
// elsewhere when the repository was moved. Built CLI as a child process, real SIGKILL, a real HTTP worker on
// 127.0.0.1, temp repositories.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { verdictStatement } from '../../packages/core/src/statement.js';
import { type DelegateRepo, fileBlock, patchBlock, type Receipt, runCli } from '../support/delegate-repo.js';
import { ledgerTip, verifying, waitingVerification, workerSession } from '../support/delegate-runs.js';
import { isAlive } from '../support/processes.js';
import { signedLine, subjectOf, testKey } from '../support/records.js';

const COMMITTED_A = 'export function a() {\n  return 1;\n}\n';
/** The user's own edit, not committed: what a killed run must not lose. */
const EDITED_A = 'export function a() {\n  return 1; // mine\n}\n';
/** src/a.js as the worker's patch leaves it. */
const WORKER_A = COMMITTED_A.replace('return 1;', 'return 2;');
const MODE_A = 0o640;
const INSTRUCTION = 'Make a return 2 and add b.';

const session = workerSession();

async function freshRepo(): Promise<DelegateRepo> {
  const repo = await session.repo({ files: { 'src/a.js': COMMITTED_A } });
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
  return repo.writeUnit(
    {
      taskName: name,
      instruction: INSTRUCTION,
      targetFiles: ['src/a.js', 'src/new/b.js'],
      runVerification: waitingVerification(sentinel, waitMs),
      verificationRepeats: 1,
    },
    `${name}.json`,
  );
}

/** A unit that writes only src/c.js: the run after the killed one, whose own files are not the killed run's. */
function otherUnit(repo: DelegateRepo): string {
  session.worker.enqueue({ content: fileBlock('src/c.js', 'export const c = 3;') });
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

/** Runs the unit and kills the delegate with SIGKILL (and its verification) once the files are written. */
async function killedWhileVerifying(repo: DelegateRepo): Promise<number> {
  const sentinel = path.join(repo.root, 'verifying');
  session.worker.enqueue({ content: reply() });
  const run = repo.start(['delegate', unit(repo, sentinel, 30_000), '--json']);
  const verifier = await verifying(sentinel);
  run.child.kill('SIGKILL');
  const result = await run.result;
  expect(result.signal).toBe('SIGKILL');
  process.kill(verifier, 'SIGKILL');
  // What was lost before: the user's edit is gone from the work tree, and nothing is recorded.
  expect(repo.read('src/a.js')).toBe(WORKER_A);
  expect(repo.exists('src/new/b.js')).toBe(true);
  return run.child.pid!;
}

function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The paragraph the next delegate says of run `pid` (of the unit `name`): the start of a line, `rest` and its end. */
function notice(pid: number, rest: string, name = 'killed'): RegExp {
  return new RegExp(
    `^An earlier \`delegate-git delegate\` of "${name}" \\(process ${pid}, started [0-9T:.-]+Z\\) stopped before it could finish \\(killed, or the machine went down\\)\\. ${escaped(rest)}\n`,
    'm',
  );
}

const PUT_BACK_BOTH =
  "Its verdict was never recorded, so the worker's files were put back as they were before it: src/a.js, src/new/b.js.";

describe('a delegate killed while its verification runs', () => {
  test('the next delegate puts back what the worker wrote (the user edit, its mode; the new file and its directory gone) and says so', async () => {
    const repo = await freshRepo();
    const tipBefore = ledgerTip(repo);
    const pid = await killedWhileVerifying(repo);
    expect(ledgerTip(repo)).toBe(tipBefore);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    expect.soft(next.stderr).toMatch(notice(pid, PUT_BACK_BOTH));
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

  test('a reviewer rejecting what the worker wrote, after the kill, is no record of the run: its files are put back all the same', async () => {
    const repo = await freshRepo();
    const pid = await killedWhileVerifying(repo);
    const rejected = await repo.cli(['attest', '--reject', 'src/a.js', '-m', 'not this', '--yes']);
    expect(rejected.code).toBe(0);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    expect.soft(next.stderr).toMatch(notice(pid, PUT_BACK_BOTH));
    expect.soft(repo.read('src/a.js')).toBe(EDITED_A);
    expect.soft(repo.exists('src/new')).toBe(false);
    expect.soft(fs.existsSync(path.join(repo.stateDir, 'unrecorded-kept'))).toBe(false);
  });

  test('a verdict of the same unit on the same bytes signed by another key (synced from another clone) is no record of the run either', async () => {
    const repo = await freshRepo();
    const pid = await killedWhileVerifying(repo);
    const elsewhere = testKey({ name: 'elsewhere', roles: ['delegator'] });
    const file = subjectOf('src/a.js', WORKER_A);
    const line = signedLine(
      elsewhere,
      verdictStatement([file], {
        verdict: 'UNIT_PASSED',
        unit: { name: 'killed', instructionSha256: sha256(INSTRUCTION) },
        repository: { id: 'another-clone' },
        createdAt: new Date().toISOString(),
      }),
    );
    repo.git(['notes', '--ref=delegations', 'add', '-m', line, file.gitBlob]);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    expect.soft(next.stderr).toMatch(notice(pid, PUT_BACK_BOTH));
    expect.soft(repo.read('src/a.js')).toBe(EDITED_A);
  });

  test('a worker file the user staged after the kill (git add) stays as the worker wrote it, what it held before kept and named; an unstaged one beside it is put back', async () => {
    const repo = await freshRepo();
    const pid = await killedWhileVerifying(repo);
    repo.git(['add', 'src/a.js']);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    const kept = next.stderr.match(/what it held before is kept in (\S+)\)/)?.[1];
    expect(kept).toBeDefined();
    expect
      .soft(next.stderr)
      .toMatch(
        notice(
          pid,
          `Its verdict was never recorded, so the worker's files were put back as they were before it: src/new/b.js. Left as they are: src/a.js (staged or committed since the worker wrote it; what it held before is kept in ${kept}). The gates refuse what the worker wrote until it is delegated again or reviewed.`,
        ),
      );
    expect.soft(next.code).toBe(0);
    expect.soft(repo.read('src/a.js')).toBe(WORKER_A);
    expect.soft(repo.gitText(['show', ':src/a.js'])).toBe(WORKER_A.trimEnd());
    // Control: the file the user did not stage is put back as before.
    expect.soft(repo.exists('src/new')).toBe(false);
    expect.soft(kept!.startsWith(path.join(repo.stateDir, 'unrecorded-kept') + path.sep)).toBe(true);
    expect.soft(fs.readFileSync(kept!, 'utf8')).toBe(EDITED_A);
    const third = await repo.cli(['delegate', otherUnit(repo), '--json']);
    expect.soft(third.stderr).toBe('');
    expect.soft(repo.read('src/a.js')).toBe(WORKER_A);
  });

  test('worker files the user committed after the kill stay, even one unstaged again (HEAD alone holds it): neither undone nor deleted', async () => {
    const repo = await freshRepo();
    const pid = await killedWhileVerifying(repo);
    repo.git(['add', 'src/a.js', 'src/new/b.js']);
    repo.git(['commit', '-q', '--no-verify', '-m', 'keep what the worker wrote']);
    repo.git(['rm', '-q', '--cached', 'src/new/b.js']);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    const kept = next.stderr.match(/what it held before is kept in (\S+)\)/)?.[1];
    expect(kept).toBeDefined();
    expect
      .soft(next.stderr)
      .toMatch(
        notice(
          pid,
          `Its verdict was never recorded. Left as they are: src/a.js (staged or committed since the worker wrote it; what it held before is kept in ${kept}), src/new/b.js (staged or committed since the worker wrote it). The gates refuse what the worker wrote until it is delegated again or reviewed.`,
        ),
      );
    expect.soft(next.code).toBe(0);
    expect.soft(repo.read('src/a.js')).toBe(WORKER_A);
    expect.soft(repo.read('src/new/b.js')).toBe('export const b = 2;\n');
    expect.soft(fs.readFileSync(kept!, 'utf8')).toBe(EDITED_A);
    expect.soft(fs.readdirSync(path.join(repo.stateDir, 'unrecorded'))).toEqual([]);
  });
});

function sha256(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

function bootId(): string {
  return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
}

/** Writes `journal` (raw: anything a file can hold) and its copies as the journal `name`; returns its directory. */
function plantJournal(
  repo: DelegateRepo,
  name: string,
  journal: unknown,
  copies: Record<string, string> = {},
): string {
  const dir = path.join(repo.stateDir, 'unrecorded', name);
  fs.mkdirSync(dir, { recursive: true });
  for (const [copy, content] of Object.entries(copies)) fs.writeFileSync(path.join(dir, copy), content);
  fs.writeFileSync(
    path.join(dir, 'journal.json'),
    typeof journal === 'string' ? journal : JSON.stringify(journal),
  );
  return dir;
}

/**
 * A journal no run leaves (its one file, `outside`, lies outside the work tree, holding "outside\n"), so recovery
 * refuses it: of process `pid` in `boot`, started at `started`.
 */
function plantRefusedJournal(
  repo: DelegateRepo,
  name: string,
  at: { pid: number; boot: string; started: string; outside: string },
): string {
  return plantJournal(repo, name, {
    version: 1,
    pid: at.pid,
    boot: at.boot,
    started: at.started,
    taskName: 'refused',
    ledgerTip: null,
    files: [
      {
        path: at.outside,
        absolute: at.outside,
        inRepository: false,
        written: sha256('outside\n'),
        previous: null,
      },
    ],
    createdDirs: [],
  });
}

interface HandmadeJournal {
  pid: number;
  boot?: string | null;
  ledgerTip: string | null;
  /** The directory's name under unrecorded/ (default `<pid>-handmade`). */
  name?: string;
  taskName?: string;
  started?: string;
  /** Given: a version 2 journal, naming the run as a run of this build does; else version 1 (an earlier build). */
  run?: { keyid: string; instructionSha256: string; monotonic: string };
  /**
   * A version 4 journal (as this build writes it), with its process start time and the top level it was made in; each
   * file's `git` says what git held at its path before the write.
   */
  v4?: { starttime: string | null; top: string };
}

interface HandmadeFile {
  path: string;
  /** What the file held before the run (null: the run created it). */
  previous: string | null;
  mode?: number;
  /** What the worker wrote (default: what the file holds now). */
  written?: string;
  /** Version 4: what the index and HEAD held at its path before the write. */
  git?: { index: string | null; head: string | null } | null;
}

/** A journal as a run leaves it, for the cases a kill cannot be timed to reach. */
function writeJournal(repo: DelegateRepo, journal: HandmadeJournal, files: HandmadeFile[]): string {
  const copies: Record<string, string> = {};
  files.forEach((f, i) => {
    if (f.previous !== null) copies[String(i)] = f.previous;
  });
  return plantJournal(
    repo,
    journal.name ?? `${journal.pid}-handmade`,
    {
      version: journal.v4 ? 4 : journal.run ? 2 : 1,
      pid: journal.pid,
      boot: journal.boot === undefined ? bootId() : journal.boot,
      started: journal.started ?? '2026-12-03T00:00:00.000Z',
      ...(journal.run ?? {}),
      ...(journal.v4 && {
        keyid: 'a'.repeat(64),
        instructionSha256: sha256(INSTRUCTION),
        monotonic: String(process.hrtime.bigint()),
        ...journal.v4,
      }),
      taskName: journal.taskName ?? 'killed',
      ledgerTip: journal.ledgerTip,
      files: files.map((f, i) => ({
        path: f.path,
        absolute: path.join(repo.dir, f.path),
        inRepository: true,
        written: sha256(f.written ?? fs.readFileSync(path.join(repo.dir, f.path))),
        previous: f.previous === null ? null : { copy: String(i), mode: f.mode ?? 0o644 },
        ...(journal.v4 && { git: f.git ?? null }),
      })),
      createdDirs: [],
    },
    copies,
  );
}

function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  const pid = Number(child.stdout);
  expect(isAlive(pid)).toBe(false);
  return pid;
}

/** The keyid a delegate of this repository signs with: the one on the record it made of `file`. */
function signingKeyid(repo: DelegateRepo, file: string): string {
  const line = repo.noteLines(repo.gitText(['hash-object', file]))[0]!;
  return (JSON.parse(line) as { signatures: Array<{ keyid: string }> }).signatures[0]!.keyid;
}

describe('journals the next delegate finds (hand-made, as a run leaves them)', () => {
  test('a run killed after its record was written: its files stay as recorded, and what they held before is kept and named, unless they hold it now', async () => {
    const repo = await freshRepo();
    const tipBefore = ledgerTip(repo);
    session.worker.enqueue({ content: reply() });
    const recorded = await repo.cli(['delegate', unit(repo, path.join(repo.root, 'quick'), 0), '--json']);
    expect(recorded.code).toBe(0);
    const files = () => [
      { path: 'src/a.js', previous: EDITED_A },
      // Held these very bytes before: nothing of it to keep.
      { path: 'src/new/b.js', previous: repo.read('src/new/b.js') },
    ];
    // A journal of an earlier build (version 1, its run known by the unit's name only), then one of this build.
    const journals: Array<HandmadeJournal['run']> = [
      undefined,
      {
        keyid: signingKeyid(repo, 'src/a.js'),
        instructionSha256: sha256(INSTRUCTION),
        monotonic: String(process.hrtime.bigint()),
      },
    ];
    for (const run of journals) {
      const pid = deadPid();
      writeJournal(repo, { pid, ledgerTip: tipBefore, run }, files());

      const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

      const version = run ? 'version 2' : 'version 1';
      const kept = next.stderr.match(/src\/a\.js in (\S+)\.\n/)?.[1];
      expect(kept, version).toBeDefined();
      expect
        .soft(next.stderr, version)
        .toMatch(
          notice(
            pid,
            `Its verdict had been recorded, so its files stay as recorded. What they held before it is kept all the same: src/a.js in ${kept}.`,
          ),
        );
      expect.soft(repo.read('src/a.js'), version).toBe(WORKER_A);
      expect
        .soft(kept!.startsWith(path.join(repo.stateDir, 'unrecorded-kept') + path.sep), version)
        .toBe(true);
      expect.soft(fs.readFileSync(kept!, 'utf8'), version).toBe(EDITED_A);
      expect.soft(fs.readdirSync(path.join(repo.stateDir, 'unrecorded')), version).toEqual([]);
      fs.rmSync(path.join(repo.dir, 'src/c.js'), { force: true }); // the next run writes it anew
    }
  });

  test('control: the same journal with the record older than the run puts the file back', async () => {
    const repo = await freshRepo();
    session.worker.enqueue({ content: reply() });
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
    const live = writeJournal(
      repo,
      { pid: process.pid, ledgerTip: null, started: new Date().toISOString() },
      [{ path: 'src/a.js', previous: EDITED_A }],
    );

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

  test('a journal directory never finished is left while its run may be at work, and removed once that run is gone or its pid has outlived any run', async () => {
    const repo = await freshRepo();
    const root = path.join(repo.stateDir, 'unrecorded');
    fs.mkdirSync(root, { recursive: true });
    const unfinished = (pid: number, hoursAgo: number) => {
      const dir = path.join(root, `.${pid}-${String(hoursAgo).padStart(12, '0')}.tmp`);
      fs.mkdirSync(dir);
      const then = new Date(Date.now() - hoursAgo * 3_600_000);
      fs.utimesSync(dir, then, then);
      return dir;
    };
    const live = unfinished(process.pid, 0);
    const outlived = unfinished(process.pid, 25);
    const dead = unfinished(deadPid(), 0);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    expect.soft(next.stderr).toBe('');
    expect.soft(fs.existsSync(live)).toBe(true);
    expect.soft(fs.existsSync(outlived)).toBe(false);
    expect.soft(fs.existsSync(dead)).toBe(false);
  });

  test('two runs that wrote one file, both dead: replayed newest first, whatever order the directory lists them in, so the file is back as the user had it', async () => {
    const A_TEXT = EDITED_A.replace('return 1;', "return 'A';");
    const B_TEXT = A_TEXT.replace("return 'A';", "return 'B';");
    const cases = [
      // Journals of an earlier build (version 1): by the wall clock. Each order of names and of creation once: one
      // of the two lists the older journal first, on any file system.
      { names: ['1-journal', '2-journal'], olderFirst: true, clocks: null },
      { names: ['2-journal', '1-journal'], olderFirst: false, clocks: null },
      // This build's journals: by the monotonic clock, here against a wall clock that was set back between them.
      { names: ['2-journal', '1-journal'], olderFirst: false, clocks: ['1000', '2000'] },
    ] as const;
    const repo = await freshRepo();
    for (const { names, olderFirst, clocks } of cases) {
      repo.write('src/a.js', B_TEXT);
      fs.rmSync(path.join(repo.dir, 'src/c.js'), { force: true }); // the run writes it anew
      const [older, newer] = [deadPid(), deadPid()];
      const run = (name: string, monotonic: string | undefined) =>
        monotonic === undefined
          ? undefined
          : { keyid: 'a'.repeat(64), instructionSha256: sha256(name), monotonic };
      const make = {
        older: () =>
          writeJournal(
            repo,
            {
              pid: older,
              name: names[0],
              taskName: 'A',
              ledgerTip: null,
              started: clocks ? '2026-12-03T00:00:09.000Z' : '2026-12-03T00:00:01.000Z',
              run: run('A', clocks?.[0]),
            },
            [{ path: 'src/a.js', previous: EDITED_A, written: A_TEXT, mode: MODE_A }],
          ),
        // It wrote over the older run's worker bytes: those are what it keeps as the file's previous content.
        newer: () =>
          writeJournal(
            repo,
            {
              pid: newer,
              name: names[1],
              taskName: 'B',
              ledgerTip: null,
              started: '2026-12-03T00:00:02.000Z',
              run: run('B', clocks?.[1]),
            },
            [{ path: 'src/a.js', previous: A_TEXT, written: B_TEXT, mode: MODE_A }],
          ),
      };
      if (olderFirst) {
        make.older();
        make.newer();
      } else {
        make.newer();
        make.older();
      }

      const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

      const putBack =
        "Its verdict was never recorded, so the worker's files were put back as they were before it: src/a.js.";
      const which = `${names.join(', ')}${clocks ? ', monotonic' : ''}`;
      expect.soft(next.stderr, which).toMatch(notice(newer, putBack, 'B'));
      expect.soft(next.stderr, which).toMatch(notice(older, putBack, 'A'));
      expect.soft(next.stderr.indexOf('"B"'), which).toBeLessThan(next.stderr.indexOf('"A"'));
      expect.soft(repo.read('src/a.js'), which).toBe(EDITED_A);
      expect.soft(fs.existsSync(path.join(repo.stateDir, 'unrecorded-kept')), which).toBe(false);
    }
  });
});

describe('journals that are not as a run leaves them (planted in .git, damaged, or of a moved path)', () => {
  test('a journal naming files outside the work tree, in .git, or a copy outside itself is refused: named, left in place, nothing touched; a sound one beside it is acted on, with no setuid bit', async () => {
    const repo = await freshRepo();
    const outside = path.join(repo.root, 'outside');
    fs.mkdirSync(path.join(outside, 'emptydir'), { recursive: true });
    const victim = path.join(outside, 'victim.txt');
    const victim2 = path.join(outside, 'victim2.txt');
    fs.writeFileSync(victim, 'victim\n');
    fs.writeFileSync(victim2, 'victim2\n');
    const description = path.join(repo.dir, '.git', 'description');
    const descriptionBefore = fs.readFileSync(description, 'utf8');
    const hashOf = (file: string) => sha256(fs.readFileSync(file));
    const planted = (name: string, files: object[], createdDirs: string[], copies: Record<string, string>) =>
      plantJournal(
        repo,
        name,
        {
          version: 1,
          pid: deadPid(),
          boot: bootId(),
          started: '2026-12-03T00:00:00.000Z',
          taskName: 'planted',
          ledgerTip: null,
          files,
          createdDirs,
        },
        copies,
      );
    const outsideDir = planted(
      '1-outside',
      [
        {
          path: victim,
          absolute: victim,
          inRepository: false,
          written: hashOf(victim),
          previous: { copy: '0', mode: 0o6755 },
        },
        { path: victim2, absolute: victim2, inRepository: false, written: hashOf(victim2), previous: null },
        {
          path: '.git/description',
          absolute: description,
          inRepository: true,
          written: hashOf(description),
          previous: { copy: '2', mode: 0o644 },
        },
      ],
      [path.join(outside, 'emptydir')],
      { '0': '#!/bin/sh\necho PWNED\n', '2': 'PWNED\n' },
    );
    const up = '../'.repeat(path.join(repo.stateDir, 'unrecorded', '2-copy').split(path.sep).length);
    const copyDir = planted(
      '2-copy',
      [
        {
          path: 'src/a.js',
          absolute: path.join(repo.dir, 'src/a.js'),
          inRepository: true,
          written: hashOf(path.join(repo.dir, 'src/a.js')),
          previous: { copy: `${up}etc/hostname`, mode: 0o644 },
        },
      ],
      [],
      {},
    );
    const soundPid = deadPid();
    repo.write('src/a.js', WORKER_A);
    writeJournal(repo, { pid: soundPid, name: '3-sound', ledgerTip: null }, [
      { path: 'src/a.js', previous: EDITED_A, mode: 0o4750 },
    ]);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    const refused = (dir: string, problems: string) =>
      new RegExp(
        `^A journal of an earlier \`delegate-git delegate\` that stopped before it could finish, ${escaped(dir)}, is not as a run leaves one, so nothing was done with it: ${problems}\\. It is left as it is: if a run of yours left it, its numbered files hold what the files it names held before that run\\. Remove the directory once you no longer need it\\.$`,
        'm',
      );
    expect
      .soft(next.stderr)
      .toMatch(
        refused(
          outsideDir,
          [
            `files.0.absolute ${escaped(victim)} is outside the work tree ${escaped(fs.realpathSync(repo.dir))} and every emitAllowlist root`,
            `files.1.absolute ${escaped(victim2)} is outside the work tree ${escaped(fs.realpathSync(repo.dir))} and every emitAllowlist root`,
            `files.2.absolute ${escaped(description)} is inside a git directory`,
            `field createdDirs.0 ${escaped(path.join(outside, 'emptydir'))} is outside the work tree ${escaped(fs.realpathSync(repo.dir))} and every emitAllowlist root`,
          ].join('; '),
        ),
      );
    expect
      .soft(next.stderr)
      .toMatch(
        refused(copyDir, 'field files\\.0\\.previous\\.copy must be the number of a copy in the journal'),
      );
    expect.soft(fs.readFileSync(victim, 'utf8')).toBe('victim\n');
    expect.soft(fs.statSync(victim).mode & 0o7000).toBe(0);
    expect.soft(fs.existsSync(victim2)).toBe(true);
    expect.soft(fs.existsSync(path.join(outside, 'emptydir'))).toBe(true);
    expect.soft(fs.readFileSync(description, 'utf8')).toBe(descriptionBefore);
    // Control: the sound journal beside them is acted on, its file put back without the setuid bit.
    expect
      .soft(next.stderr)
      .toMatch(
        notice(
          soundPid,
          "Its verdict was never recorded, so the worker's files were put back as they were before it: src/a.js.",
        ),
      );
    expect.soft(repo.read('src/a.js')).toBe(EDITED_A);
    expect.soft(fs.statSync(path.join(repo.dir, 'src/a.js')).mode & 0o7777).toBe(0o750);
    expect.soft(next.code).toBe(0);
    // Left in place, and named again by the next run.
    expect.soft(fs.existsSync(path.join(outsideDir, 'journal.json'))).toBe(true);
    expect.soft(fs.existsSync(path.join(copyDir, 'journal.json'))).toBe(true);
    const again = await repo.cli(['delegate', otherUnit(repo), '--json']);
    expect.soft(again.stderr).toMatch(refused(outsideDir, '.*'));
    expect.soft(again.stderr).toMatch(refused(copyDir, '.*'));
  });

  test('a refused journal of a process still running (another delegate at work) is not named until that process is gone; never acted on', async () => {
    const repo = await freshRepo();
    const outside = path.join(repo.root, 'outside.txt');
    fs.writeFileSync(outside, 'outside\n');
    const refusedJournal = (name: string, pid: number, boot: string) =>
      plantRefusedJournal(repo, name, { pid, boot, started: new Date().toISOString(), outside });
    const named = (dir: string) =>
      new RegExp(
        `^A journal of an earlier \`delegate-git delegate\` that stopped before it could finish, ${escaped(dir)}, is not as a run leaves one, so nothing was done with it: files\\.0\\.absolute ${escaped(outside)} is outside the work tree`,
        'm',
      );
    const live = refusedJournal('1-live', process.pid, bootId());
    // Controls: a pid no process has, and the same pid in an earlier boot, are runs that are over.
    const dead = refusedJournal('2-dead', deadPid(), bootId());
    const earlierBoot = refusedJournal('3-earlier-boot', process.pid, 'an-earlier-boot');

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    expect.soft(next.code).toBe(0);
    expect.soft(next.stderr).not.toContain(live);
    expect.soft(next.stderr).toMatch(named(dead));
    expect.soft(next.stderr).toMatch(named(earlierBoot));
    expect.soft(fs.existsSync(path.join(live, 'journal.json'))).toBe(true);

    // Its process gone, it is named, and still never acted on.
    const journal = JSON.parse(fs.readFileSync(path.join(live, 'journal.json'), 'utf8'));
    fs.writeFileSync(path.join(live, 'journal.json'), JSON.stringify({ ...journal, pid: deadPid() }));
    fs.rmSync(path.join(repo.dir, 'src/c.js'), { force: true }); // the run writes it anew
    const after = await repo.cli(['delegate', otherUnit(repo), '--json']);
    expect.soft(after.stderr).toMatch(named(live));
    expect.soft(fs.readFileSync(outside, 'utf8')).toBe('outside\n');
  });

  test('a repository moved (renamed) after the kill: its journal is named as made at the old place, with each copy to put back by hand; nothing is touched', async () => {
    const repo = await freshRepo();
    await killedWhileVerifying(repo);
    const old = fs.realpathSync(repo.dir);
    const moved = path.join(repo.root, 'moved');
    fs.renameSync(repo.dir, moved);
    const top = fs.realpathSync(moved);
    const unrecorded = path.join(moved, '.git', 'delegate-git', 'unrecorded');
    const [name] = fs.readdirSync(unrecorded);
    const dir = path.join(unrecorded, name!);

    const next = await runCli(['delegate', otherUnit(repo), '--json'], { cwd: moved, env: repo.env });

    expect.soft(next.code).toBe(0);
    expect
      .soft(next.stderr)
      .toMatch(
        new RegExp(
          `^${escaped(
            `A journal of an earlier \`delegate-git delegate\` that stopped before it could finish, ${dir}, was made when the repository was at ${old}, and it is at ${top} now: its paths name the old place, so nothing was done with it. The files it names may still hold what that run's worker wrote. To undo it by hand, put back what each held before that run (a path in the repository is under ${top} now): src/a.js from ${path.join(dir, '0')}, src/new/b.js (that run created it: remove it). Then remove the directory ${dir}.`,
          )}$`,
          'm',
        ),
      );
    expect.soft(fs.readFileSync(path.join(moved, 'src/a.js'), 'utf8')).toBe(WORKER_A);
    expect.soft(fs.existsSync(path.join(moved, 'src/new/b.js'))).toBe(true);
    expect.soft(fs.readFileSync(path.join(dir, '0'), 'utf8')).toBe(EDITED_A);

    // Done as the notice says, the next run has nothing more to say.
    fs.copyFileSync(path.join(dir, '0'), path.join(moved, 'src/a.js'));
    fs.rmSync(path.join(moved, 'src/new'), { recursive: true });
    fs.rmSync(dir, { recursive: true });
    fs.rmSync(path.join(moved, 'src/c.js'), { force: true }); // the run writes it anew
    const after = await runCli(['delegate', otherUnit(repo), '--json'], { cwd: moved, env: repo.env });
    expect.soft(after.stderr).toBe('');
    expect.soft(fs.readFileSync(path.join(moved, 'src/a.js'), 'utf8')).toBe(EDITED_A);
  });

  test('a journal that is not JSON, or lacks a field, is named on every run: never skipped, never a crash', async () => {
    const repo = await freshRepo();
    const broken = plantJournal(repo, '1-broken', '{"version":1,"pid":', { '0': EDITED_A });
    const pid = deadPid();
    const dir = writeJournal(repo, { pid, name: '2-no-created-dirs', ledgerTip: null }, [
      { path: 'src/a.js', previous: EDITED_A },
    ]);
    const { createdDirs: _dropped, ...lacking } = JSON.parse(
      fs.readFileSync(path.join(dir, 'journal.json'), 'utf8'),
    );
    fs.writeFileSync(path.join(dir, 'journal.json'), JSON.stringify(lacking));

    for (const run of [1, 2]) {
      fs.rmSync(path.join(repo.dir, 'src/c.js'), { force: true }); // the run writes it anew
      const next = await repo.cli(['delegate', otherUnit(repo), '--json']);
      expect.soft(next.code, `run ${run}`).toBe(0);
      expect
        .soft(next.stderr, `run ${run}`)
        .toMatch(
          new RegExp(
            `^A journal of an earlier \`delegate-git delegate\` that stopped before it could finish, ${escaped(broken)}, is not as a run leaves one, so nothing was done with it: its journal\\.json is not JSON \\(.+\\)\\. It is left as it is`,
            'm',
          ),
        );
      expect
        .soft(next.stderr, `run ${run}`)
        .toMatch(
          new RegExp(
            `^A journal of an earlier \`delegate-git delegate\` that stopped before it could finish, ${escaped(dir)}, is not as a run leaves one, so nothing was done with it: field createdDirs must be array \\(got nothing\\)\\. It is left as it is`,
            'm',
          ),
        );
      expect.soft(repo.read('src/a.js'), `run ${run}`).toBe(EDITED_A);
    }
    expect.soft(fs.readFileSync(path.join(broken, '0'), 'utf8')).toBe(EDITED_A);
  });

  test('a journaled file whose path leads through a symbolic link now is not written through it: left, its copy kept and named', async () => {
    const repo = await freshRepo();
    const outside = path.join(repo.root, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'x.js'), 'outside\n');
    fs.symlinkSync(outside, path.join(repo.dir, 'src', 'link'));
    const pid = deadPid();
    writeJournal(repo, { pid, ledgerTip: null }, [{ path: 'src/link/x.js', previous: 'PWNED\n' }]);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    const kept = next.stderr.match(/what it held before is kept in (\S+)\)/)?.[1];
    expect(kept).toBeDefined();
    expect
      .soft(next.stderr)
      .toMatch(
        notice(
          pid,
          `Its verdict was never recorded. Left as they are: src/link/x.js (its path leads through a symbolic link now; what it held before is kept in ${kept}). The gates refuse what the worker wrote until it is delegated again or reviewed.`,
        ),
      );
    expect.soft(fs.readFileSync(path.join(outside, 'x.js'), 'utf8')).toBe('outside\n');
    expect.soft(fs.readFileSync(kept!, 'utf8')).toBe('PWNED\n');
  });
});

describe('a journal recovery cannot finish', () => {
  test('a journal recovery cannot finish (unrecorded-kept is a file, not a directory) is named and left for the next run; the delegate goes on', async () => {
    const repo = await freshRepo();
    repo.write('src/a.js', 'export function a() {\n  return 3; // edited after the run\n}\n');
    const pid = deadPid();
    const dir = writeJournal(repo, { pid, ledgerTip: null }, [
      { path: 'src/a.js', previous: EDITED_A, written: WORKER_A },
    ]);
    fs.writeFileSync(path.join(repo.stateDir, 'unrecorded-kept'), 'in the way\n');

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    expect
      .soft(next.stderr)
      .toMatch(
        new RegExp(
          `^Putting back the files of an earlier \`delegate-git delegate\` that stopped before it could finish, from its journal ${escaped(dir)}, failed part-way: .+\\. The journal is left as it is, and the next delegate tries again; its numbered files hold what the files it names held before that run\\.$`,
          'm',
        ),
      );
    expect.soft(next.code).toBe(0);
    expect.soft(fs.readFileSync(path.join(dir, '0'), 'utf8')).toBe(EDITED_A);
  });
});

/** The start time /proc gives `pid` (field 22 of its stat: clock ticks since boot). */
function startTime(pid: number): string {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[22 - 3]!;
}

/** A process that is no delegate-git run, alive until the test ends: what a dead run's pid may be given to. */
function unrelatedProcess(): { pid: number; stop: () => void } {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 120000)'], { stdio: 'ignore' });
  const pid = child.pid!;
  expect(isAlive(pid)).toBe(true);
  return { pid, stop: () => child.kill('SIGKILL') };
}

const TWO_DAYS_AGO = () => new Date(Date.now() - 48 * 3_600_000).toISOString();

describe('what git held before the run is no stage of the user (whyLeft)', () => {
  test('a killed run whose worker wrote a file back as HEAD holds it (undoing an uncommitted edit): the edit is put back, not called staged or committed', async () => {
    const repo = await freshRepo();
    const sentinel = path.join(repo.root, 'verifying');
    // The worker's patch turns the user's edit back into what HEAD holds.
    session.worker.enqueue({ content: patchBlock('src/a.js', [['  return 1; // mine', '  return 1;']]) });
    const unitFile = repo.writeUnit(
      {
        taskName: 'killed',
        instruction: INSTRUCTION,
        targetFiles: ['src/a.js'],
        runVerification: waitingVerification(sentinel, 30_000),
        verificationRepeats: 1,
      },
      'killed.json',
    );
    const run = repo.start(['delegate', unitFile, '--json']);
    const verifier = await verifying(sentinel);
    // The journal says which process made it, by its start time too: a later process given the pid is not it.
    const [name] = fs.readdirSync(path.join(repo.stateDir, 'unrecorded'));
    const journal = JSON.parse(
      fs.readFileSync(path.join(repo.stateDir, 'unrecorded', name!, 'journal.json'), 'utf8'),
    );
    expect
      .soft(journal)
      .toMatchObject({ version: 4, pid: run.child.pid, starttime: startTime(run.child.pid!) });
    const headBlob = repo.gitText(['rev-parse', 'HEAD:src/a.js']);
    expect.soft(journal.files[0].git).toEqual({ index: headBlob, head: headBlob });
    run.child.kill('SIGKILL');
    await run.result;
    process.kill(verifier, 'SIGKILL');
    expect(repo.read('src/a.js')).toBe(COMMITTED_A);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    expect
      .soft(next.stderr)
      .toMatch(
        notice(
          run.child.pid!,
          "Its verdict was never recorded, so the worker's files were put back as they were before it: src/a.js.",
        ),
      );
    expect.soft(repo.read('src/a.js')).toBe(EDITED_A);
    expect.soft(fs.existsSync(path.join(repo.stateDir, 'unrecorded-kept'))).toBe(false);
  });

  test('a worker that wrote back the very bytes the file held: nothing to undo, said as put back, not as staged or committed', async () => {
    const repo = await freshRepo();
    repo.write('src/a.js', COMMITTED_A); // as HEAD holds it, and as the worker wrote it again
    const pid = deadPid();
    writeJournal(repo, { pid, ledgerTip: null }, [{ path: 'src/a.js', previous: COMMITTED_A }]);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    expect
      .soft(next.stderr)
      .toMatch(
        notice(
          pid,
          "Its verdict was never recorded, so the worker's files were put back as they were before it: src/a.js.",
        ),
      );
    expect.soft(repo.read('src/a.js')).toBe(COMMITTED_A);
    expect.soft(fs.existsSync(path.join(repo.stateDir, 'unrecorded-kept'))).toBe(false);
  });

  test('a journal of an earlier version, which does not say what git held before the run: the file is left, its copy kept, and the reason says it cannot tell', async () => {
    const repo = await freshRepo();
    repo.write('src/a.js', COMMITTED_A);
    const pid = deadPid();
    writeJournal(repo, { pid, ledgerTip: null }, [{ path: 'src/a.js', previous: EDITED_A }]);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    const kept = next.stderr.match(/what it held before is kept in (\S+)\)/)?.[1];
    expect(kept).toBeDefined();
    expect
      .soft(next.stderr)
      .toMatch(
        notice(
          pid,
          `Its verdict was never recorded. Left as they are: src/a.js (staged or committed as the worker wrote it, whether since the run or before it: a journal of an earlier version does not say which; what it held before is kept in ${kept}). The gates refuse what the worker wrote until it is delegated again or reviewed.`,
        ),
      );
    expect.soft(repo.read('src/a.js')).toBe(COMMITTED_A);
    expect.soft(fs.readFileSync(kept!, 'utf8')).toBe(EDITED_A);
  });
});

describe('an intent-to-add entry (git add -N) is no content the user staged', () => {
  /** src/e.js: the user's, not committed, marked with `git add -N`; the worker emptied it, and its run was killed. */
  async function emptied(): Promise<{ repo: DelegateRepo; pid: number }> {
    const repo = await freshRepo();
    repo.write('src/e.js', 'mine\n');
    repo.git(['add', '-N', 'src/e.js']);
    repo.write('src/e.js', '');
    const pid = deadPid();
    writeJournal(repo, { pid, ledgerTip: null }, [{ path: 'src/e.js', previous: 'mine\n' }]);
    return { repo, pid };
  }

  test('the empty file the worker wrote over an intent-to-add entry is put back', async () => {
    const { repo, pid } = await emptied();
    // git stages the empty blob for it: what the worker's empty file hashes to.
    expect(repo.gitText(['ls-files', '-s', 'src/e.js'])).toContain(
      'e69de29bb2d1d6434b8b29ae775ad8c2e48c5391',
    );

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    expect
      .soft(next.stderr)
      .toMatch(
        notice(
          pid,
          "Its verdict was never recorded, so the worker's files were put back as they were before it: src/e.js.",
        ),
      );
    expect.soft(repo.read('src/e.js')).toBe('mine\n');
  });

  test('control: the empty file staged for real (git add) after the kill stays, its copy kept', async () => {
    const { repo } = await emptied();
    repo.git(['add', 'src/e.js']);

    const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

    const kept = next.stderr.match(/src\/e\.js \([^;]+; what it held before is kept in (\S+)\)/)?.[1];
    expect(kept).toBeDefined();
    expect.soft(repo.read('src/e.js')).toBe('');
    expect.soft(fs.readFileSync(kept!, 'utf8')).toBe('mine\n');
  });
});

describe('journals of earlier versions in a repository moved since', () => {
  test('version 1 and 2 journals are named as made at the old place, with each copy to put back by hand, as version 3 ones are; nothing is touched', async () => {
    const repo = await freshRepo();
    repo.write('src/a.js', WORKER_A);
    const old = fs.realpathSync(repo.dir);
    const v1 = deadPid();
    const v2 = deadPid();
    writeJournal(repo, { pid: v1, name: '1-v1', ledgerTip: null }, [
      { path: 'src/a.js', previous: EDITED_A },
    ]);
    writeJournal(
      repo,
      {
        pid: v2,
        name: '2-v2',
        ledgerTip: null,
        run: { keyid: 'a'.repeat(64), instructionSha256: sha256(INSTRUCTION), monotonic: '1' },
      },
      [{ path: 'src/a.js', previous: EDITED_A }],
    );
    const moved = path.join(repo.root, 'moved');
    fs.renameSync(repo.dir, moved);
    const top = fs.realpathSync(moved);
    const unrecorded = path.join(moved, '.git', 'delegate-git', 'unrecorded');

    const next = await runCli(['delegate', otherUnit(repo), '--json'], { cwd: moved, env: repo.env });

    expect.soft(next.code).toBe(0);
    for (const name of ['1-v1', '2-v2']) {
      const dir = path.join(unrecorded, name);
      expect
        .soft(next.stderr, name)
        .toMatch(
          new RegExp(
            `^${escaped(
              `A journal of an earlier \`delegate-git delegate\` that stopped before it could finish, ${dir}, was made when the repository was at ${old}, and it is at ${top} now: its paths name the old place, so nothing was done with it. The files it names may still hold what that run's worker wrote. To undo it by hand, put back what each held before that run (a path in the repository is under ${top} now): src/a.js from ${path.join(dir, '0')}. Then remove the directory ${dir}.`,
            )}$`,
            'm',
          ),
        );
    }
    expect.soft(fs.readFileSync(path.join(moved, 'src/a.js'), 'utf8')).toBe(WORKER_A);
  });

  test('a moved journal naming a file in an emitAllowlist root outside the repository names it where it is, apart from the files in the repository', async () => {
    const repo = await freshRepo();
    const out = fs.realpathSync(fs.mkdtempSync(path.join(repo.root, 'out-')));
    await repo.configSet('emitAllowlist', JSON.stringify([out]));
    const gen = path.join(out, 'gen.js');
    fs.writeFileSync(gen, 'worker\n');
    repo.write('src/a.js', WORKER_A);
    const old = fs.realpathSync(repo.dir);
    const dir = plantJournal(
      repo,
      '1-v3',
      {
        version: 3,
        pid: deadPid(),
        boot: bootId(),
        started: '2026-12-03T00:00:00.000Z',
        monotonic: '1',
        keyid: 'a'.repeat(64),
        instructionSha256: sha256(INSTRUCTION),
        taskName: 'killed',
        ledgerTip: null,
        top: old,
        files: [
          {
            path: 'src/a.js',
            absolute: path.join(old, 'src/a.js'),
            inRepository: true,
            written: sha256(WORKER_A),
            previous: { copy: '0', mode: 0o644 },
          },
          {
            path: gen,
            absolute: gen,
            inRepository: false,
            written: sha256('worker\n'),
            previous: { copy: '1', mode: 0o644 },
          },
        ],
        createdDirs: [],
      },
      { '0': EDITED_A, '1': 'before\n' },
    );
    const moved = path.join(repo.root, 'moved');
    fs.renameSync(repo.dir, moved);
    const top = fs.realpathSync(moved);
    const movedDir = path.join(moved, path.relative(repo.dir, dir));

    const next = await runCli(['delegate', otherUnit(repo), '--json'], { cwd: moved, env: repo.env });

    expect.soft(next.code).toBe(0);
    expect
      .soft(next.stderr)
      .toContain(
        `To undo it by hand, put back what each held before that run (a path in the repository is under ${top} now): src/a.js from ${path.join(movedDir, '0')}; and outside the repository, where that run wrote them (these are not put back automatically either: whether that run's verdict was recorded, and its files are to stay, is told only by its files in the repository): ${gen} from ${path.join(movedDir, '1')}. Then remove the directory ${movedDir}.`,
      );
    expect.soft(fs.readFileSync(gen, 'utf8')).toBe('worker\n');
  });
});

describe('a journal naming a live pid that is no delegate-git run (the number given to another process)', () => {
  /** A journal of this version naming `other`'s pid with `starttime`, for src/a.js as the worker wrote it. */
  function journalOf(repo: DelegateRepo, pid: number, starttime: string): string {
    repo.write('src/a.js', WORKER_A);
    const blob = repo.gitText(['rev-parse', 'HEAD:src/a.js']);
    return writeJournal(repo, { pid, ledgerTip: null, v4: { starttime, top: fs.realpathSync(repo.dir) } }, [
      { path: 'src/a.js', previous: EDITED_A, git: { index: blob, head: blob } },
    ]);
  }

  test('control: a journal naming a live process by its own start time may be that run at work: left alone, unsaid', async () => {
    const repo = await freshRepo();
    const other = unrelatedProcess();
    try {
      const live = journalOf(repo, other.pid, startTime(other.pid));

      const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

      expect.soft(next.stderr).toBe('');
      expect.soft(repo.read('src/a.js')).toBe(WORKER_A);
      expect.soft(fs.existsSync(path.join(live, 'journal.json'))).toBe(true);
    } finally {
      other.stop();
    }
  });

  test('a journal of this version (it records its process start time): another process with the pid is told apart, and the run undone', async () => {
    const repo = await freshRepo();
    const other = unrelatedProcess();
    try {
      journalOf(repo, other.pid, String(Number(startTime(other.pid)) - 1));

      const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

      expect
        .soft(next.stderr)
        .toMatch(
          notice(
            other.pid,
            "Its verdict was never recorded, so the worker's files were put back as they were before it: src/a.js.",
          ),
        );
      expect.soft(repo.read('src/a.js')).toBe(EDITED_A);
    } finally {
      other.stop();
    }
  });

  test('a journal of an earlier version (no start time) whose pid has been alive for days is named with what to do, never acted on; a refused one too', async () => {
    const repo = await freshRepo();
    const other = unrelatedProcess();
    try {
      repo.write('src/a.js', WORKER_A);
      const outside = path.join(repo.root, 'outside.txt');
      fs.writeFileSync(outside, 'outside\n');
      const sound = writeJournal(
        repo,
        { pid: other.pid, name: '1-sound', ledgerTip: null, started: TWO_DAYS_AGO() },
        [{ path: 'src/a.js', previous: EDITED_A }],
      );
      const refused = plantRefusedJournal(repo, '2-refused', {
        pid: other.pid,
        boot: bootId(),
        started: TWO_DAYS_AGO(),
        outside,
      });

      const next = await repo.cli(['delegate', otherUnit(repo), '--json']);

      expect.soft(next.code).toBe(0);
      expect
        .soft(next.stderr)
        .toMatch(
          new RegExp(
            `^${escaped(
              `A journal of an earlier \`delegate-git delegate\` of "killed" (process ${other.pid}, started `,
            )}[0-9T:.-]+Z\\), ${escaped(sound)}, names a process that is still running 4[78] hours after the journal was made: .* If \`ps -o args= -p ${other.pid}\` shows no \`delegate-git delegate\`, undo that run by hand, for each file that still holds what its worker wrote: put back ${escaped(
              `src/a.js from ${path.join(sound, '0')}. Then remove the directory ${sound}.`,
            )}`,
            'm',
          ),
        );
      expect
        .soft(next.stderr)
        .toMatch(
          new RegExp(
            `^A journal of an earlier \`delegate-git delegate\` that stopped before it could finish, ${escaped(refused)}, is not as a run leaves one, so nothing was done with it: .*\\. Process ${other.pid}, which it names, is still running 4[78] hours after it was made`,
            'm',
          ),
        );
      expect.soft(repo.read('src/a.js')).toBe(WORKER_A);
      expect.soft(fs.existsSync(path.join(sound, 'journal.json'))).toBe(true);
      expect.soft(fs.readFileSync(outside, 'utf8')).toBe('outside\n');
    } finally {
      other.stop();
    }
  });
});
