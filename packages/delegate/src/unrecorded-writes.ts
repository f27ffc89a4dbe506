/**
 * The worker's files between their write and their verdict's record, journaled on disk. An interrupt puts them back
 * (delegate.ts); a delegate that is killed (SIGKILL, the OOM killer, a power cut) cannot, and would leave the worker's
 * files in place of what they held, a user's uncommitted edits among them, with nothing recorded. So before the first
 * write, what each file held is kept under the worktree's state directory beside a journal naming it, and the journal
 * goes when the run ends. The next delegate finds the journals of runs that died and puts their files back, each only
 * while it still holds what the worker wrote: an edit made since is the user's, and stays (its earlier content is
 * kept, and said where).
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { gitText } from '@delegate-git/core/git';
import type { Repository } from '@delegate-git/core/repository';
import { shownPath } from '@delegate-git/core/shown-path';
import { removeIfEmpty, writeAtomically } from './write-plan.js';
import { errorCode } from './write-target.js';

const JOURNALS = 'unrecorded';
/** Journals whose files could not all be put back: their copies stay here, named in the notice, until removed. */
const KEPT = 'unrecorded-kept';
const JOURNAL_FILE = 'journal.json';

export interface JournaledFile {
  /** As the notice shows it: relative to the repository's top level, or absolute outside it. */
  path: string;
  absolute: string;
  /** True for a path inside the repository: what a record can name. */
  inRepository: boolean;
  /** sha256 of the bytes the worker's file was given. */
  written: string;
  /** The name of the copy of what the file held, and its permission bits; null when the write created it. */
  previous: { copy: string; mode: number } | null;
}

interface Journal {
  version: 1;
  pid: number;
  /** The boot the process ran in (Linux): a pid alive after a reboot is some other process. */
  boot: string | null;
  started: string;
  taskName: string;
  /** The ledger's tip before the write: a record made after it is the run's own. */
  ledgerTip: string | null;
  files: JournaledFile[];
  /** Directories the writes create, outermost first: removed again when left empty. */
  createdDirs: string[];
}

export interface FileToWrite {
  path: string;
  absolute: string;
  inRepository: boolean;
  content: Buffer;
  previous: { content: Buffer; mode: number } | null;
}

/** One run's journal, kept until the run ends (`end`), whatever its verdict: only a run that dies leaves it. */
export class WriteJournal {
  private constructor(private readonly dir: string) {}

  /**
   * Keeps what each file holds and the journal naming it, whole before any file is written: written into a directory
   * of its own that is renamed into place last, so a journal is never read half-made.
   */
  static keep(
    stateDir: string,
    run: { taskName: string; ledgerTip: string | null },
    files: readonly FileToWrite[],
    createdDirs: readonly string[],
  ): WriteJournal {
    const root = path.join(stateDir, JOURNALS);
    fs.mkdirSync(root, { recursive: true, mode: 0o700 });
    const name = `${process.pid}-${randomBytes(6).toString('hex')}`;
    const making = path.join(root, `.${name}.tmp`);
    fs.mkdirSync(making, { mode: 0o700 });
    try {
      const journal: Journal = {
        version: 1,
        pid: process.pid,
        boot: bootId(),
        started: new Date().toISOString(),
        taskName: run.taskName,
        ledgerTip: run.ledgerTip,
        files: files.map((file, i) => ({
          path: file.path,
          absolute: file.absolute,
          inRepository: file.inRepository,
          written: sha256Of(file.content),
          previous: file.previous && { copy: String(i), mode: file.previous.mode },
        })),
        createdDirs: [...createdDirs],
      };
      files.forEach((file, i) => {
        if (file.previous) writeDurably(path.join(making, String(i)), file.previous.content);
      });
      writeDurably(path.join(making, JOURNAL_FILE), Buffer.from(JSON.stringify(journal)));
      fs.renameSync(making, path.join(root, name));
    } catch (error) {
      fs.rmSync(making, { recursive: true, force: true });
      throw error;
    }
    return new WriteJournal(path.join(root, name));
  }

  end(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** What the next delegate found of a run that died before its verdict was recorded, and did about it. */
export interface StoppedDelegation {
  taskName: string;
  pid: number;
  started: string;
  /** The run's record is in the ledger after all (it died after writing it): its files stay, as recorded. */
  recorded: boolean;
  putBack: string[];
  /** Files changed since the worker wrote them (or that could not be put back): left as they are. */
  left: Array<{ path: string; why: string; copy: string | null }>;
}

/**
 * Puts back the files of every delegate in this worktree that died before recording its verdict, and says what it
 * did. Journals of runs still alive (another delegate at work) are left alone.
 */
export async function recoverStoppedDelegations(repo: Repository): Promise<StoppedDelegation[]> {
  const root = path.join(repo.stateDir, JOURNALS);
  let names: string[];
  try {
    names = fs.readdirSync(root);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
  const found: StoppedDelegation[] = [];
  for (const name of names) {
    const dir = path.join(root, name);
    if (name.endsWith('.tmp')) {
      // A journal never finished: its run wrote no file yet. Removed once that run is gone.
      if (!isRunning(Number(name.slice(1).split('-')[0]), bootId()))
        fs.rmSync(dir, { recursive: true, force: true });
      continue;
    }
    const journal = readJournal(dir);
    if (journal === null || isRunning(journal.pid, journal.boot)) continue;
    found.push(await recover(repo, dir, journal));
  }
  return found;
}

async function recover(repo: Repository, dir: string, journal: Journal): Promise<StoppedDelegation> {
  const stopped: StoppedDelegation = {
    taskName: journal.taskName,
    pid: journal.pid,
    started: journal.started,
    recorded: false,
    putBack: [],
    left: [],
  };
  const unchanged = journal.files.filter((file) => holds(file.absolute, file.written));
  if (await recordedSince(repo, journal, unchanged)) {
    stopped.recorded = true;
    fs.rmSync(dir, { recursive: true, force: true });
    return stopped;
  }
  for (const file of journal.files) {
    const copy = file.previous && path.join(dir, file.previous.copy);
    if (!unchanged.includes(file)) {
      stopped.left.push({ path: file.path, why: 'changed since the worker wrote it', copy });
      continue;
    }
    try {
      if (file.previous === null) fs.rmSync(file.absolute, { force: true });
      else writeAtomically(file.absolute, fs.readFileSync(copy!), file.previous.mode);
      stopped.putBack.push(file.path);
    } catch (error) {
      stopped.left.push({ path: file.path, why: (error as Error).message, copy });
    }
  }
  for (const created of [...journal.createdDirs].reverse()) removeIfEmpty(created);
  if (stopped.left.some((l) => l.copy !== null)) {
    const kept = path.join(repo.stateDir, KEPT, path.basename(dir));
    fs.mkdirSync(path.dirname(kept), { recursive: true, mode: 0o700 });
    fs.renameSync(dir, kept);
    for (const l of stopped.left) if (l.copy) l.copy = path.join(kept, path.basename(l.copy));
  } else fs.rmSync(dir, { recursive: true, force: true });
  return stopped;
}

/**
 * Whether the ledger took a record on a file as the worker wrote it after the run began: the run died between its
 * record and the journal's removal, and its files stand as recorded. One file is enough: a record names them all.
 */
async function recordedSince(
  repo: Repository,
  journal: Journal,
  unchanged: JournaledFile[],
): Promise<boolean> {
  const file = unchanged.find((f) => f.inRepository);
  if (file === undefined) return false;
  const blob = await gitText(['hash-object', '--stdin', `--path=${file.path}`], {
    cwd: repo.layout.topLevel!,
    env: repo.env,
    input: fs.readFileSync(file.absolute),
  });
  const now = await repo.ledger.linesOn(blob);
  if (now.length === 0) return false;
  const before = journal.ledgerTip === null ? [] : await repo.ledger.linesOn(blob, journal.ledgerTip);
  return now.some((line) => !before.includes(line));
}

/** The paragraph that says what was found and done, for the operator. */
export function stoppedNotice(s: StoppedDelegation): string {
  const run = `An earlier \`delegate-git delegate\` of "${s.taskName}" (process ${s.pid}, started ${s.started}) stopped before it could finish (killed, or the machine went down).`;
  if (s.recorded) return `${run} Its verdict had been recorded, so its files stay as recorded.\n`;
  const parts = [`${run} Its verdict was never recorded`];
  if (s.putBack.length > 0)
    parts.push(
      `, so the worker's files were put back as they were before it: ${s.putBack.map(shownPath).join(', ')}`,
    );
  parts.push('.');
  if (s.left.length > 0) {
    const left = s.left.map(
      (l) => `${shownPath(l.path)} (${l.why}${l.copy ? `; what it held before is kept in ${l.copy}` : ''})`,
    );
    parts.push(
      ` Left as they are: ${left.join(', ')}. The gates refuse what the worker wrote until it is delegated again or reviewed.`,
    );
  }
  return `${parts.join('')}\n`;
}

function readJournal(dir: string): Journal | null {
  try {
    const journal = JSON.parse(fs.readFileSync(path.join(dir, JOURNAL_FILE), 'utf8')) as Journal;
    return journal.version === 1 && Number.isInteger(journal.pid) && Array.isArray(journal.files)
      ? journal
      : null;
  } catch {
    return null; // never made whole (renamed into place last), or not ours: nothing to act on
  }
}

/** Whether `pid` runs, in this boot; a zombie runs nothing. */
function isRunning(pid: number, boot: string | null): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (boot !== bootId()) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    return errorCode(error) === 'EPERM';
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return true;
  }
}

function bootId(): string | null {
  try {
    return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return null;
  }
}

function holds(absolute: string, sha256: string): boolean {
  try {
    return sha256Of(fs.readFileSync(absolute)) === sha256;
  } catch {
    return false;
  }
}

function sha256Of(content: Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}

function writeDurably(file: string, content: Buffer): void {
  const fd = fs.openSync(file, 'wx', 0o600);
  try {
    fs.writeFileSync(fd, content);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
