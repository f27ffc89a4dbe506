/**
 * The worker's files between their write and their verdict's record, journaled on disk. An interrupt puts them back
 * (delegate.ts); a delegate that is killed (SIGKILL, the OOM killer, a power cut) cannot, and would leave the
 * worker's files in place of what they held, a user's uncommitted edits among them, with nothing recorded. So before
 * the first write, what each file held is kept under the worktree's state directory beside a journal naming it, and
 * the journal goes when the run ends. The next delegate finds the journals of runs that died and puts their files
 * back, each only while it still holds what the worker wrote and the user has not staged or committed it so: an edit
 * made since is the user's, and so is a file they kept (`git add`, `git commit`); either stays (its earlier content
 * is kept, and said where). A copy of what a file held is never deleted while the file holds something else: where a
 * file stays as the worker wrote it (its record landed after all, or it could not be put back), the copy is kept in
 * `unrecorded-kept` and named.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { git } from '@delegate-git/core/git';
import { decodeRecord } from '@delegate-git/core/record';
import type { Repository } from '@delegate-git/core/repository';
import { canonicaliseAgainst, canonicalisePath } from './containment.js';
import { type HeldInGit, heldInGit } from './git-held.js';
import {
  checkJournal,
  isOwnVerdict,
  type Journal,
  type JournalBounds,
  type JournalCheck,
  type JournaledFile,
  type JournalRun,
  type MovedFile,
  replayOrder,
  whyLeft,
} from './journal-rules.js';
import { type JournalWriter, writerState } from './journal-writer.js';
import { bootId, seeProcess, startTimeOf } from './process-identity.js';
import { removeIfEmpty, writeAtomically } from './write-plan.js';
import { errorCode } from './write-target.js';

const JOURNALS = 'unrecorded';
/** Journals whose files could not all be put back: their copies stay here, named in the notice, until removed. */
const KEPT = 'unrecorded-kept';
const JOURNAL_FILE = 'journal.json';
/** Far more than a run's journal holds (a few hundred bytes a file); a larger one is no journal a run made. */
const MAX_JOURNAL_BYTES = 32 * 1024 * 1024;
/** How a run names the directory it makes its journal in, before it is renamed into place. */
const UNFINISHED = /^\.(\d+)-[0-9a-f]+\.tmp$/;

export interface FileToWrite {
  path: string;
  absolute: string;
  inRepository: boolean;
  content: Buffer;
  previous: { content: Buffer; mode: number } | null;
  /** What the index and HEAD hold at its path before the write (null: outside the repository, or not known). */
  heldBefore: HeldInGit | null;
}

/** One run's journal, kept until the run ends (`end`), whatever its verdict: only a run that dies leaves it. */
export class WriteJournal {
  /** Where `setAside` moved the journal; then the run no longer removes it. */
  private setAsideIn: string | null = null;

  private constructor(
    private readonly stateDir: string,
    private readonly dir: string,
    /** Each journaled file's copy of what it held, by absolute path (none for a file the write creates). */
    private readonly copies: ReadonlyMap<string, string>,
  ) {}

  /**
   * Keeps what each file holds and the journal naming it, whole before any file is written: written into a directory
   * of its own that is renamed into place last, so a journal is never read half-made.
   */
  static keep(
    stateDir: string,
    /** The work tree's top level: a journal found under another (the repository moved) is not acted on. */
    top: string,
    run: JournalRun & { ledgerTip: string | null },
    files: readonly FileToWrite[],
    createdDirs: readonly string[],
  ): WriteJournal {
    const root = path.join(stateDir, JOURNALS);
    fs.mkdirSync(root, { recursive: true, mode: 0o700 });
    const name = `${process.pid}-${randomBytes(6).toString('hex')}`;
    const making = path.join(root, `.${name}.tmp`);
    fs.mkdirSync(making, { mode: 0o700 });
    try {
      const journal = {
        version: 4,
        pid: process.pid,
        boot: bootId(),
        // With the pid and the boot, what tells this process from a later one given the same pid.
        starttime: startTimeOf('self'),
        started: new Date().toISOString(),
        monotonic: process.hrtime.bigint().toString(),
        taskName: run.taskName,
        instructionSha256: run.instructionSha256,
        keyid: run.keyid,
        ledgerTip: run.ledgerTip,
        files: files.map((file, i) => ({
          path: file.path,
          absolute: file.absolute,
          inRepository: file.inRepository,
          written: sha256Of(file.content),
          previous: file.previous && { copy: String(i), mode: file.previous.mode },
          git: file.inRepository ? file.heldBefore : null,
        })),
        createdDirs: [...createdDirs],
        top: canonicalisePath(top),
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
    const copies = new Map<string, string>();
    files.forEach((file, i) => {
      if (file.previous) copies.set(file.absolute, String(i));
    });
    return new WriteJournal(stateDir, path.join(root, name), copies);
  }

  /**
   * Files the run could not put back (an interrupt, a write that failed part-way): the journal holds the only copy of
   * what they held, so it is not removed but set aside in `unrecorded-kept`, where no later run acts on it. Says where
   * each one's copy is; a file the write created has none, and with no copy to keep the journal ends as usual (`end`).
   */
  setAside(absolutes: readonly string[]): Map<string, string> {
    const held = absolutes.filter((a) => this.copies.has(a));
    if (held.length === 0) return new Map();
    let dir = this.dir;
    try {
      dir = moveToKept(this.stateDir, this.dir);
    } catch {
      // Left where it is (a full disk can refuse even a new directory): the next delegate recovers from it there.
    }
    this.setAsideIn = dir;
    return new Map(held.map((a) => [a, path.join(dir, this.copies.get(a)!)]));
  }

  end(): void {
    if (this.setAsideIn === null) fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** What the next delegate found of a run that died before its verdict was recorded, and did about it. */
export interface StoppedDelegation {
  kind: 'stopped';
  taskName: string;
  pid: number;
  started: string;
  /** The run's record is in the ledger after all (it died after writing it): its files stay, as recorded. */
  recorded: boolean;
  putBack: string[];
  /**
   * Files changed since the worker wrote them, or staged or committed as it did (or that could not be put back): left
   * as they are.
   */
  left: Array<{ path: string; why: string; copy: string | null }>;
  /** Of files that stay as recorded: where what they held before the run is kept. */
  kept: Array<{ path: string; copy: string }>;
}

/**
 * A journal the next delegate did not act on (`refused`), or could not finish acting on (`failed`: a file system or
 * git error part-way), and why: left where it is for the user to look at.
 */
export interface RefusedJournal {
  kind: 'refused' | 'failed';
  dir: string;
  problems: string[];
  /**
   * A journal sound where it was made, in a repository moved since: where it was and is, and the files the run wrote
   * with where what each held before is (null for a file the run created).
   */
  moved?: { from: string; to: string; files: MovedFile[] };
  /** Named although a process with its pid runs: for longer than any run lasts (`forMs` since it was made). */
  alive?: { pid: number; forMs: number };
}

/**
 * A sound journal whose pid a process has held for longer than any run lasts, with nothing recorded to tell whether
 * it is the run: never replayed (that run may still be at work), but named, with what to do.
 */
export interface UnsureJournal {
  kind: 'unsure';
  dir: string;
  taskName: string;
  pid: number;
  started: string;
  forMs: number;
  /** The files the run wrote, with where what each held before is (null for a file the run created). */
  files: Array<{ path: string; copy: string | null }>;
}

export type FoundJournal = StoppedDelegation | RefusedJournal | UnsureJournal;

/**
 * Puts back the files of every delegate in this worktree that died before recording its verdict, newest first, and
 * says what it did. Journals of runs still alive (another delegate at work) are left alone; a journal that is not
 * one a run could have made (journal-rules.ts) is named, and left alone too. `emitAllowlist`: the operator's
 * setting, the roots outside the work tree a run may have written in.
 */
export async function recoverStoppedDelegations(
  repo: Repository,
  opts: { emitAllowlist?: readonly string[] } = {},
): Promise<FoundJournal[]> {
  const root = path.join(repo.stateDir, JOURNALS);
  let names: string[];
  try {
    names = fs.readdirSync(root).sort();
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
  const bounds = boundsOf(repo, opts.emitAllowlist ?? []);
  const found: FoundJournal[] = [];
  const stopped: Array<{ name: string; dir: string; journal: Journal; key: Journal }> = [];
  for (const name of names) {
    const dir = path.join(root, name);
    const unfinished = UNFINISHED.exec(name);
    if (unfinished) {
      // A journal never finished: its run wrote no file yet. Removed once that run is gone, or once a process with
      // its pid has outlived any run since the directory was made (a later process given the same pid): only its
      // name tells the run, and removing it loses nothing.
      const writer = {
        pid: Number(unfinished[1]),
        boot: bootId(),
        starttime: null,
        monotonic: null,
        made: modifiedAt(dir),
      };
      if (writerState(writer, seeProcess(writer.pid)).state !== 'running')
        fs.rmSync(dir, { recursive: true, force: true });
      continue;
    }
    const read = readJournal(dir, bounds);
    if (!read.ok) {
      // Refused all the same, but not named while the process that wrote it runs: it is no stopped run's yet (a
      // concurrent delegate). It is named once that process is gone, or has run for longer than a run lasts.
      const state = read.writer
        ? writerState(read.writer, seeProcess(read.writer.pid))
        : ({ state: 'gone' } as const);
      if (state.state === 'running') continue;
      const moved = read.moved && {
        from: read.moved.from,
        to: bounds.top,
        files: read.moved.files.map((f) => ({ ...f, copy: f.copy && path.join(dir, f.copy) })),
      };
      found.push({
        kind: 'refused',
        dir,
        problems: read.problems,
        ...(moved && { moved }),
        ...(state.state === 'unsure' && { alive: { pid: read.writer!.pid, forMs: state.forMs } }),
      });
      continue;
    }
    const { journal } = read;
    const state = writerState(writerOfJournal(journal), seeProcess(journal.pid));
    if (state.state === 'gone') stopped.push({ name, dir, journal, key: journal });
    else if (state.state === 'unsure')
      found.push({
        kind: 'unsure',
        dir,
        taskName: journal.taskName,
        pid: journal.pid,
        started: journal.started,
        forMs: state.forMs,
        files: journal.files.map((f) => ({
          path: f.path,
          copy: f.previous && path.join(dir, f.previous.copy),
        })),
      });
  }
  for (const s of replayOrder(stopped)) {
    try {
      found.push(await recover(repo, s.dir, s.journal));
    } catch (error) {
      // One journal that cannot be dealt with must not stop the others, nor the delegate that found it.
      found.push({ kind: 'failed', dir: s.dir, problems: [(error as Error).message] });
    }
  }
  return found;
}

function modifiedAt(dir: string): number | null {
  try {
    return fs.statSync(dir).mtimeMs;
  } catch {
    return null;
  }
}

function writerOfJournal(journal: Journal): JournalWriter {
  const { pid, boot, starttime, monotonic } = journal;
  return { pid, boot, starttime, monotonic, made: Date.parse(journal.started) };
}

/** Where a run of this repository could have written (canonical, as the run's own paths are). */
function boundsOf(repo: Repository, emitAllowlist: readonly string[]): JournalBounds {
  const top = canonicalisePath(repo.layout.topLevel!);
  const writableRoots = emitAllowlist
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .flatMap((entry) => {
      try {
        return [canonicaliseAgainst(top, entry)];
      } catch {
        return []; // a link loop: nothing could have been written under it
      }
    });
  const gitDirs = [
    ...new Set([repo.layout.gitDir, repo.layout.commonDir].map((d) => canonicalisePath(path.resolve(d)))),
  ];
  return { top, writableRoots, gitDirs };
}

async function recover(repo: Repository, dir: string, journal: Journal): Promise<StoppedDelegation> {
  const stopped: StoppedDelegation = {
    kind: 'stopped',
    taskName: journal.taskName,
    pid: journal.pid,
    started: journal.started,
    recorded: false,
    putBack: [],
    left: [],
    kept: [],
  };
  // A run's paths are canonical: one that leads through a symbolic link now is not the file the run wrote, and
  // nothing is written or removed through it.
  const elsewhere = new Set(journal.files.filter((f) => !isCanonical(f.absolute)));
  const unchanged = journal.files.filter((f) => !elsewhere.has(f) && holds(f.absolute, f.written));
  // The worker's bytes as git stores them: what the ledger, the index and HEAD know a file by.
  const written = await blobsOf(
    repo,
    unchanged.filter((f) => f.inRepository),
  );
  if (await recordedSince(repo, journal, written)) {
    stopped.recorded = true;
    // The files stay as recorded. What they held before is kept all the same, unless it is what they hold now: the
    // record judged the worker's bytes, and the user's earlier version (uncommitted, perhaps) may still be wanted.
    const differ = journal.files.filter((f) => f.previous && !holdsCopy(dir, f));
    const kept = settle(repo, dir, differ);
    for (const f of differ) stopped.kept.push({ path: f.path, copy: kept.get(f)! });
    return stopped;
  }
  const held = await heldInGit(
    repo,
    [...written.keys()].map((f) => f.path),
  );
  const left: Array<{ file: JournaledFile; why: string }> = [];
  for (const file of journal.files) {
    const blob = written.get(file);
    const asBefore = file.previous !== null && copyHolds(dir, file, file.written);
    const why = whyLeft({
      canonical: !elsewhere.has(file),
      asWritten: unchanged.includes(file),
      asBefore,
      blobs: blob === undefined ? null : { written: blob, ...held(file.path), before: file.heldBefore },
    });
    if (why !== null) {
      left.push({ file, why });
      continue;
    }
    try {
      if (file.previous === null) fs.rmSync(file.absolute, { force: true });
      // It holds what it held before: written again, it would only change its inode and time.
      else if (!asBefore) writeAtomically(file.absolute, readCopy(dir, file), file.previous.mode);
      stopped.putBack.push(file.path);
    } catch (error) {
      left.push({ file, why: (error as Error).message });
    }
  }
  for (const created of [...journal.createdDirs].reverse()) if (isCanonical(created)) removeIfEmpty(created);
  const kept = settle(
    repo,
    dir,
    left.flatMap((l) => (l.file.previous ? [l.file] : [])),
  );
  stopped.left = left.map(({ file, why }) => ({ path: file.path, why, copy: kept.get(file) ?? null }));
  return stopped;
}

/**
 * The journal once recovery is done with it: moved to `unrecorded-kept` when `keep` names files whose copy must
 * stay (where each one is then), else removed.
 */
function settle(repo: Repository, dir: string, keep: readonly JournaledFile[]): Map<JournaledFile, string> {
  if (keep.length === 0) {
    fs.rmSync(dir, { recursive: true, force: true });
    return new Map();
  }
  const kept = moveToKept(repo.stateDir, dir);
  return new Map(keep.map((f) => [f, path.join(kept, f.previous!.copy)]));
}

function moveToKept(stateDir: string, dir: string): string {
  const root = path.join(stateDir, KEPT);
  fs.mkdirSync(root, { recursive: true, mode: 0o700 });
  let kept = path.join(root, path.basename(dir));
  // A name taken already (a hand-made journal's, or one kept on another boot by a pid used again) is not merged into.
  if (fs.existsSync(kept)) kept = `${kept}-${randomBytes(4).toString('hex')}`;
  fs.renameSync(dir, kept);
  return kept;
}

/**
 * Whether the ledger took this very run's verdict on a file as the worker wrote it after the run began: the run died
 * between its record and the journal's removal, and its files stand as recorded. Any other line on those bytes (a
 * review, approving or rejecting; another unit's verdict synced from another clone) says nothing of this run. One
 * file is enough: the run's record names them all.
 */
async function recordedSince(
  repo: Repository,
  journal: Journal,
  written: ReadonlyMap<JournaledFile, string>,
): Promise<boolean> {
  const [first] = written;
  if (first === undefined) return false;
  const [file, blob] = first;
  const now = await repo.ledger.linesOn(blob);
  if (now.length === 0) return false;
  let before: string[] = [];
  try {
    if (journal.ledgerTip !== null) before = await repo.ledger.linesOn(blob, journal.ledgerTip);
  } catch {
    // The tip is no notes commit here (a ledger rewritten since): no line is taken for older than the run for it.
  }
  const older = new Set(before);
  return now.some((line) => {
    if (older.has(line)) return false;
    const decoded = decodeRecord(line);
    return decoded.ok && isOwnVerdict(decoded.record, journal, { path: file.path, gitBlob: blob });
  });
}

/**
 * The blob id of each file (in the repository, holding the worker's bytes) as git stores it at its path, filters and
 * all: one git process for them all.
 */
async function blobsOf(
  repo: Repository,
  files: readonly JournaledFile[],
): Promise<Map<JournaledFile, string>> {
  if (files.length === 0) return new Map();
  const out = await git(['hash-object', '--', ...files.map((f) => f.path)], {
    cwd: repo.layout.topLevel!,
    env: repo.env,
  });
  const ids = out.toString('utf8').split('\n');
  return new Map(files.map((f, i) => [f, ids[i]!]));
}

/** The journal in `dir`, checked (journal-rules.ts), or what is wrong with it. */
function readJournal(dir: string, bounds: JournalBounds): JournalCheck {
  let text: string;
  let mtime: number;
  try {
    if (!fs.lstatSync(dir).isDirectory()) return refusal('it is not a directory');
    const file = path.join(dir, JOURNAL_FILE);
    text = readRegularFile(file, MAX_JOURNAL_BYTES).toString('utf8');
    mtime = fs.lstatSync(file).mtimeMs;
  } catch (error) {
    return refusal(
      errorCode(error) === 'ENOENT'
        ? `it holds no ${JOURNAL_FILE}`
        : `its ${JOURNAL_FILE} cannot be read (${(error as Error).message})`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return refusal(`its ${JOURNAL_FILE} is not JSON (${(error as Error).message})`);
  }
  const checked = checkJournal(raw, bounds);
  // A journal whose time cannot be read is dated by its file, so that a live pid in it is not waited for forever.
  if (!checked.ok && checked.writer && checked.writer.made === null) checked.writer.made = mtime;
  return checked;
}

function refusal(problem: string): JournalCheck {
  return { ok: false, problems: [problem] };
}

/** The copy of what `file` held, from the journal in `dir`: a regular file there, never one a link points to. */
function readCopy(dir: string, file: JournaledFile): Buffer {
  return readRegularFile(path.join(dir, file.previous!.copy), Number.MAX_SAFE_INTEGER);
}

/** Whether the copy of what `file` held before the run holds the bytes `sha256` names. */
function copyHolds(dir: string, file: JournaledFile, sha256: string): boolean {
  try {
    return sha256Of(readCopy(dir, file)) === sha256;
  } catch {
    return false;
  }
}

/** Whether `file` holds what its copy says it held before the run. */
function holdsCopy(dir: string, file: JournaledFile): boolean {
  try {
    return holds(file.absolute, sha256Of(readCopy(dir, file)));
  } catch {
    return false;
  }
}

function readRegularFile(file: string, maxBytes: number): Buffer {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw new Error(`${file} is not a regular file`);
    if (stat.size > maxBytes) throw new Error(`${file} is ${stat.size} bytes, more than a journal holds`);
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function isCanonical(absolute: string): boolean {
  try {
    return canonicalisePath(absolute) === absolute;
  } catch {
    return false; // a link loop
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
