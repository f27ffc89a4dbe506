/**
 * What the next delegate may believe of a journal a stopped run left (unrecorded-writes.ts), decided without touching
 * the disk. A journal lies in the state directory, which whoever can write `.git` can fill: a shared repository with
 * a group-writable `.git`, or a verification command. Acted on as it says, a planted one overwrote a file outside the
 * work tree with a setuid bit, deleted another, wrote into `.git` and read its "copy" from anywhere; a hand-edited
 * one missing a field crashed every later delegate. So every field is checked, every path must be one the run could
 * have written, and a journal that fails is named to the user, never acted on.
 */
import path from 'node:path';
import { relativeWithin } from '@delegate-git/core/path-within';
import { isRepositoryPath, type LedgerRecord } from '@delegate-git/core/record';
import { describeIssue, rfc3339Utc } from '@delegate-git/core/schema';
import * as z from 'zod/mini';
import { entersGitDir } from './containment.js';
import type { HeldInGit } from './git-held.js';
import type { JournalWriter } from './journal-writer.js';

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
  /**
   * What the index and HEAD held at its path before the write (version 4); null where the journal does not say
   * (an earlier version, or a file outside the repository).
   */
  heldBefore: HeldInGit | null;
}

/** Who the run was, as its verdict statement names it: what tells its own record from any other on the same blob. */
export interface JournalRun {
  taskName: string;
  /** sha256 of the unit's instruction (the statement's `unit.instructionSha256`); null in a version 1 journal. */
  instructionSha256: string | null;
  /** The keyid of the key the run signs with; null in a version 1 journal. */
  keyid: string | null;
}

export interface Journal extends JournalRun {
  version: 1 | 2 | 3 | 4;
  pid: number;
  /** The boot the process ran in (Linux): a pid alive after a reboot is some other process. */
  boot: string | null;
  /** When the process started (/proc/<pid>/stat); null before version 4, or where it could not be read. */
  starttime: string | null;
  started: string;
  /**
   * The system's monotonic clock (ns) when the journal was made: within one boot it orders journals even when the
   * wall clock stepped or two runs wrote in the same millisecond. null in a version 1 journal.
   */
  monotonic: bigint | null;
  /** The ledger's tip before the write: a record made after it may be the run's own. */
  ledgerTip: string | null;
  files: JournaledFile[];
  /** Directories the writes create, outermost first: removed again when left empty. */
  createdDirs: string[];
  /** The work tree's top level (canonical) the run wrote in; null before version 3. */
  top: string | null;
}

const HEX64 = /^[0-9a-f]{64}$/;
const sha256Hex = z.string().check(z.regex(HEX64, 'must be a sha256 digest in lower-case hex'));
// Lexical checks only: whether the path leads through a link today is the recovery's to check, on the disk.
const absolutePath = z
  .string()
  .check(
    z.refine(
      (p) => !p.includes('\0') && path.isAbsolute(p) && path.normalize(p) === p,
      'must be an absolute, normalised path',
    ),
  );

const objectId = z.string().check(z.regex(/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/, 'must be an object id in hex'));
const STARTTIME = /^\d{1,20}$/;

const journalSchema = z.strictObject({
  version: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4)]),
  pid: z.int().check(z.positive()),
  boot: z.nullable(z.string()),
  starttime: z.optional(z.nullable(z.string().check(z.regex(STARTTIME, 'must be a count of clock ticks')))),
  started: rfc3339Utc,
  taskName: z.string(),
  instructionSha256: z.optional(sha256Hex),
  keyid: z.optional(sha256Hex),
  monotonic: z.optional(z.string().check(z.regex(/^\d{1,30}$/, 'must be a decimal count of nanoseconds'))),
  ledgerTip: z.nullable(
    z.string().check(z.regex(/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/, 'must be a commit id in hex')),
  ),
  files: z.array(
    z.strictObject({
      path: z.string(),
      absolute: absolutePath,
      inRepository: z.boolean(),
      written: sha256Hex,
      previous: z.nullable(
        z.strictObject({
          // A plain number: a name with `/` or `..` would read the "copy" from anywhere.
          copy: z.string().check(z.regex(/^\d{1,9}$/, 'must be the number of a copy in the journal')),
          mode: z.int().check(z.minimum(0), z.maximum(0o7777)),
        }),
      ),
      git: z.optional(
        z.nullable(z.strictObject({ index: z.nullable(objectId), head: z.nullable(objectId) })),
      ),
    }),
  ),
  createdDirs: z.array(absolutePath),
  top: z.optional(absolutePath),
});

/** The fields that name the process a journal is of, read alone: what a journal refused otherwise may still say. */
const writerSchema = z.object({ pid: z.int().check(z.positive()), boot: z.nullable(z.string()) });

/** Where the run could have written: the work tree, the operator's emitAllowlist roots, never a git directory. */
export interface JournalBounds {
  /** The work tree's top level, canonical. */
  top: string;
  /** The emitAllowlist roots, canonical. */
  writableRoots: readonly string[];
  /** The repository's git directories (gitDir and commonDir), canonical. */
  gitDirs: readonly string[];
}

export type JournalCheck = { ok: true; journal: Journal } | JournalRefusal;

export interface JournalRefusal {
  ok: false;
  problems: string[];
  /** The process that wrote it, when its pid and boot can still be read: while it runs, the run is not over. */
  writer?: JournalWriter;
  /**
   * A journal that is as a run leaves one where it was made, in a repository moved (renamed) since: where that was,
   * and what it names (each file as the notice shows it, and its copy's number; null for a file the run created).
   */
  moved?: { from: string; files: MovedFile[] };
}

export interface MovedFile {
  path: string;
  /** Where the run wrote it: under `from` for a file in the repository. */
  absolute: string;
  inRepository: boolean;
  copy: string | null;
}

/** Problems listed at most: one is enough to refuse, a few help to see what happened. */
const PROBLEMS_SHOWN = 5;

/**
 * The journal `raw` (parsed JSON) describes, if every field is as a run writes it and every path is one the run
 * could have written; else what is wrong, with the process that wrote it where that can still be read, and, for one
 * sound where it was made, that the repository moved since. Permission bits are cut to 0o777: a put-back file never
 * gets a setuid, setgid or sticky bit from a journal.
 */
export function checkJournal(raw: unknown, bounds: JournalBounds): JournalCheck {
  const writer = writerOf(raw);
  const refused = (problems: string[]): JournalRefusal => ({
    ok: false,
    problems: limited(problems),
    ...(writer && { writer }),
  });
  const parsed = journalSchema.safeParse(raw, { reportInput: true });
  if (!parsed.success)
    return refused(
      parsed.error.issues.map((issue) => {
        const where = issue.path.length > 0 ? `field ${issue.path.map(String).join('.')}` : 'the journal';
        return `${where} ${describeIssue(issue)}`;
      }),
    );
  const j = parsed.data;
  const problems: string[] = [];
  const required = {
    1: [],
    2: ['instructionSha256', 'keyid', 'monotonic'],
    3: ['instructionSha256', 'keyid', 'monotonic', 'top'],
    4: ['instructionSha256', 'keyid', 'monotonic', 'top', 'starttime'],
  } as const;
  for (const field of required[j.version])
    if (j[field] === undefined)
      problems.push(`field ${field} is missing (a version ${j.version} journal has it)`);
  if (j.version >= 4)
    j.files.forEach((f, i) => {
      if (f.git === undefined)
        problems.push(`field files.${i}.git is missing (a version ${j.version} journal has it)`);
    });
  if (j.top !== undefined && j.top !== bounds.top) {
    // Moved since (a renamed directory): every path names the old place. Never re-rooted: what lies at the new place
    // is not for a journal made elsewhere to say. One sound where it was made is named as moved, for the user to
    // finish by hand; any other is refused as it is.
    const there = placeProblems(j, { ...bounds, top: j.top });
    if (problems.length > 0 || there.length > 0)
      return refused([...problems, `field top ${j.top} is not the work tree ${bounds.top}`, ...there]);
    return movedFrom(j.top);
  }
  const here = placeProblems(j, bounds);
  if (problems.length === 0 && here.length > 0 && j.top === undefined) {
    // Before version 3 a journal did not name its top level, so one of a moved repository was refused as naming
    // files outside the work tree, with no word of the move. Its files in the repository name the old place all the
    // same: where they agree on one, and the journal is sound there, it is named as moved.
    const top = topNamedBy(j);
    if (top !== null && top !== bounds.top && placeProblems(j, { ...bounds, top }).length === 0)
      return movedFrom(top);
  }
  problems.push(...here);
  if (problems.length > 0) return refused(problems);
  return {
    ok: true,
    journal: {
      version: j.version,
      pid: j.pid,
      boot: j.boot,
      starttime: j.starttime ?? null,
      started: j.started,
      taskName: j.taskName,
      instructionSha256: j.instructionSha256 ?? null,
      keyid: j.keyid ?? null,
      monotonic: j.monotonic === undefined ? null : BigInt(j.monotonic),
      ledgerTip: j.ledgerTip,
      files: j.files.map(({ git, ...f }) => ({
        ...f,
        previous: f.previous && { copy: f.previous.copy, mode: f.previous.mode & 0o777 },
        heldBefore: f.inRepository ? (git ?? null) : null,
      })),
      createdDirs: j.createdDirs,
      top: j.top ?? null,
    },
  };

  function movedFrom(from: string): JournalRefusal {
    return {
      ...refused([`it was made when the repository was at ${from}, and it is at ${bounds.top} now`]),
      moved: {
        from,
        files: j.files.map((f) => ({
          path: f.path,
          absolute: f.absolute,
          inRepository: f.inRepository,
          copy: f.previous?.copy ?? null,
        })),
      },
    };
  }
}

/** The process a journal names, with what dates it, read field by field: a journal refused otherwise may have it. */
function writerOf(raw: unknown): JournalWriter | undefined {
  const named = writerSchema.safeParse(raw);
  if (!named.success) return undefined;
  const { starttime, monotonic, started } = raw as Record<string, unknown>;
  const made =
    typeof started === 'string' && rfc3339Utc.safeParse(started).success ? Date.parse(started) : null;
  return {
    pid: named.data.pid,
    boot: named.data.boot,
    starttime: typeof starttime === 'string' && STARTTIME.test(starttime) ? starttime : null,
    monotonic: typeof monotonic === 'string' && /^\d{1,30}$/.test(monotonic) ? BigInt(monotonic) : null,
    made,
  };
}

/** The top level the files in the repository of `j` were written under, if they all name one (else null). */
function topNamedBy(j: z.infer<typeof journalSchema>): string | null {
  const tops = new Set<string>();
  for (const f of j.files) {
    if (!f.inRepository) continue;
    const tail = path.sep + f.path.split('/').join(path.sep);
    if (!f.absolute.endsWith(tail)) return null;
    tops.add(f.absolute.slice(0, -tail.length));
  }
  const [top] = tops;
  return tops.size === 1 && path.isAbsolute(top!) && path.normalize(top!) === top ? top! : null;
}

/** Every path of `j` the run could not have written, within `bounds`, and every file named or copied twice. */
function placeProblems(j: z.infer<typeof journalSchema>, bounds: JournalBounds): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  const copies = new Set<string>();
  j.files.forEach((file, i) => {
    const where = `files.${i}`;
    const outside =
      file.absolute === bounds.top || bounds.writableRoots.includes(file.absolute)
        ? 'is a directory the run writes in, not a file'
        : placeProblem(file.absolute, bounds);
    if (outside) problems.push(`${where}.absolute ${file.absolute} ${outside}`);
    if (seen.has(file.absolute)) problems.push(`${where}.absolute ${file.absolute} is named twice`);
    seen.add(file.absolute);
    const rel = relativeWithin(bounds.top, file.absolute);
    const inRepository = rel !== null && rel !== '' && isRepositoryPath(rel.split(path.sep).join('/'));
    // What the notice shows and what the record is looked up by must be the file acted on.
    const shown = inRepository ? rel!.split(path.sep).join('/') : file.absolute;
    if (file.inRepository !== inRepository || file.path !== shown)
      problems.push(`${where}.path does not name ${file.absolute} as a run names it`);
    if (file.previous) {
      if (copies.has(file.previous.copy)) problems.push(`${where}.previous.copy is another file's copy`);
      copies.add(file.previous.copy);
    }
  });
  j.createdDirs.forEach((dir, i) => {
    const outside = dir === bounds.top ? 'is the top level itself' : placeProblem(dir, bounds);
    if (outside) problems.push(`field createdDirs.${i} ${dir} ${outside}`);
  });
  return problems;
}

/** Why a run could not have written `absolute`, or null if it could. */
function placeProblem(absolute: string, bounds: JournalBounds): string | null {
  if (entersGitDir(absolute, bounds.gitDirs)) return 'is inside a git directory';
  const roots = [bounds.top, ...bounds.writableRoots];
  if (!roots.some((root) => relativeWithin(root, absolute) !== null))
    return `is outside the work tree ${bounds.top} and every emitAllowlist root`;
  return null;
}

function limited(problems: string[]): string[] {
  return problems.length <= PROBLEMS_SHOWN
    ? problems
    : [...problems.slice(0, PROBLEMS_SHOWN), `${problems.length - PROBLEMS_SHOWN} more problem(s)`];
}

/** What recovery finds of a journaled file, on the disk and in git. */
export interface FileNow {
  /** Its path leads through no symbolic link, as the run's did. */
  canonical: boolean;
  /** It holds the bytes the worker wrote. */
  asWritten: boolean;
  /** The worker wrote the very bytes the file held before the run: putting it back changes nothing. */
  asBefore: boolean;
  /**
   * For a file in the repository that holds the worker's bytes: those bytes' blob id as git stores them at its path,
   * the blobs the index and HEAD hold there now (null: none), and what they held before the write (`before`, from a
   * version 4 journal; null where the journal does not say). null for any other file.
   */
  blobs: { written: string; index: string | null; head: string | null; before: HeldInGit | null } | null;
}

export const STAGED_SINCE = 'staged or committed since the worker wrote it';
export const STAGED_UNKNOWN_SINCE =
  'staged or committed as the worker wrote it, whether since the run or before it: a journal of an earlier version does not say which';

/** Why a journaled file is left as it is rather than put back; null to put it back. */
export function whyLeft(file: FileNow): string | null {
  if (!file.canonical) return 'its path leads through a symbolic link now';
  if (!file.asWritten) return 'changed since the worker wrote it';
  // Nothing of the run's to undo, whoever staged or committed those bytes.
  if (file.asBefore) return null;
  const { blobs } = file;
  if (blobs === null) return null;
  const staged = blobs.written === blobs.index;
  const committed = blobs.written === blobs.head;
  if (!staged && !committed) return null;
  // Where git held the worker's bytes before the run already (the worker undid an uncommitted edit, or wrote back
  // what was staged), that is no choice of the user's: putting back what the file held loses nothing git does not
  // keep. Only a stage or a commit made since is the user looking at the worker's file and keeping it (`git add`,
  // `git commit` after the kill), which putting back would undo, or delete the file they committed.
  const { before } = blobs;
  if (before === null) return STAGED_UNKNOWN_SINCE;
  if ((staged && before.index !== blobs.written) || (committed && before.head !== blobs.written))
    return STAGED_SINCE;
  return null;
}

/** What orders journals: `started` (milliseconds, wall clock), and within one boot the monotonic clock. */
export interface ReplayKey {
  boot: string | null;
  started: string;
  monotonic: bigint | null;
}

/**
 * The order to replay journals in, newest first: a run that wrote over another's file kept the other's worker bytes
 * as what the file held, so undoing the newer first brings the file back to the older run's bytes, which that run's
 * journal then undoes. In the other order the older run finds the file changed, leaves it and blames the user, and
 * the newer one puts back the older worker's bytes.
 *
 * Journals of one boot are ordered by the monotonic clock when all of them have it (version 2); else, and between
 * boots (a boot's journals against another's by the newest of each), by the wall clock. Ties go by `name`, so the
 * order never depends on how a directory lists its entries.
 */
export function replayOrder<T extends { name: string; key: ReplayKey }>(journals: readonly T[]): T[] {
  const wall = (t: T) => Date.parse(t.key.started);
  const newestFirst = (a: number | bigint, b: number | bigint) => (a < b ? 1 : a > b ? -1 : 0);
  const byName = (a: T, b: T) => (a.name < b.name ? 1 : a.name > b.name ? -1 : 0);
  const boots = new Map<string, T[]>();
  for (const j of journals) {
    // Without a boot id the monotonic clock says nothing across processes: each such journal stands alone.
    const boot = j.key.boot === null ? `\0${j.name}` : j.key.boot;
    boots.set(boot, [...(boots.get(boot) ?? []), j]);
  }
  const groups = [...boots.values()].map((group) => {
    const monotonic = group.every((j) => j.key.monotonic !== null);
    const sorted = [...group].sort(
      (a, b) =>
        (monotonic ? newestFirst(a.key.monotonic!, b.key.monotonic!) : newestFirst(wall(a), wall(b))) ||
        byName(a, b),
    );
    return { newest: Math.max(...group.map(wall)), sorted };
  });
  groups.sort((a, b) => newestFirst(a.newest, b.newest) || byName(a.sorted[0]!, b.sorted[0]!));
  return groups.flatMap((g) => g.sorted);
}

/**
 * Whether `record`, a line on the blob the run wrote at `subject`, is that run's own verdict: a verdict (a review,
 * approving or rejecting, is someone's judgement of the files, not the run's), on that path and blob, of the unit
 * the run delegated, signed with the run's key. The statement carries no id of the run; what it does carry is
 * matched, so another unit's verdict on the same bytes (synced from another clone) does not count either.
 */
export function isOwnVerdict(
  record: LedgerRecord,
  run: JournalRun,
  subject: { path: string; gitBlob: string },
): boolean {
  // decodeRecord reads a line as a verdict only when its predicateType is urn:delegate-git:verdict:v1.
  if (record.kind !== 'verdict') return false;
  if (!record.subjects.some((s) => s.path === subject.path && s.gitBlob === subject.gitBlob)) return false;
  const unit = record.predicate.unit as { name?: unknown; instructionSha256?: unknown } | undefined;
  if (typeof unit !== 'object' || unit === null || unit.name !== run.taskName) return false;
  if (run.instructionSha256 !== null && unit.instructionSha256 !== run.instructionSha256) return false;
  if (run.keyid !== null && record.envelope.signatures[0]?.keyid !== run.keyid) return false;
  return true;
}
