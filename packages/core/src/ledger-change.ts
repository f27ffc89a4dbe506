/**
 * What an update of the ledger from one notes commit to another changes, read once: the lines it drops (the
 * append-only check), the lines it adds (what must be verified, and what extends the path index), and the entries it
 * adds that are no notes (which the ledger must not hold). One `git diff-tree` names the notes that changed; only
 * those are read, at both commits, through the caller's object reader. The lines are exactly
 * NotesLedger.droppedLines and NotesLedger.addedLines for the same two commits.
 */

import { DelegateGitError } from './errors.js';
import { type CatFileBatch, gitRecords } from './git.js';
import {
  annotatedIdOfPath,
  ForeignEntries,
  type ForeignEntry,
  isObjectId,
  NOTE_MODE,
} from './notes-format.js';
import { NotesTree, readNoteLines } from './notes-tree.js';

export interface NotesDiffEntry {
  annotated: string;
  path: string;
  /** git's status letter for the note's path: A, M, D or T (renames are not detected). */
  status: string;
  /** The note blob before and after (git's all-zero id where there is none). */
  oldOid: string;
  newOid: string;
  /** The entry's mode before and after (`000000` where there is none): only NOTE_MODE holds a note. */
  oldMode: string;
  newMode: string;
}

/** What `git diff-tree -r -t` says changed between two notes commits. */
export interface NotesDiff {
  /** The note paths that changed (held a note before or after). */
  notes: NotesDiffEntry[];
  /** What the newer commit adds or changes that is no note, in git's order (the ledger holds only notes). */
  foreign: ForeignEntry[];
}

export interface LedgerChange {
  dropped: Array<{ annotated: string; line: string }>;
  added: Array<{ annotated: string; lines: string[] }>;
  /** The entries the newer commit adds or changes that are no notes. */
  foreign: ForeignEntry[];
  /** The newer notes commit's tree, with the notes read so far remembered (reuse it for further reads there). */
  newer: NotesTree;
}

/**
 * Parses `git diff-tree -r -t -z` output fields (":<modes> <ids> <status>", then the path) into note changes and the
 * entries added or changed that are no notes (a deletion adds nothing).
 */
export function parseNotesDiff(fields: Iterable<string>): NotesDiff {
  const notes: NotesDiffEntry[] = [];
  const foreign = new ForeignEntries();
  let meta: string[] | null = null;
  for (const field of fields) {
    if (meta === null) {
      meta = field.startsWith(':') ? field.split(' ') : null;
      continue;
    }
    const [listedOldMode = '', newMode = '', oldOid = '', newOid = '', status = ''] = meta;
    const oldMode = listedOldMode.slice(1); // after the record's leading ":"
    const annotated = annotatedIdOfPath(field);
    if (annotated && (oldMode === NOTE_MODE || newMode === NOTE_MODE))
      notes.push({ annotated, path: field, status, oldOid, newOid, oldMode, newMode });
    if (status !== 'D') foreign.see(newMode, field);
    meta = null;
  }
  return { notes, foreign: foreign.found };
}

/**
 * Which ids are compared for which question. A path only added cannot lose a line; an id whose note was modified,
 * deleted or moved (deleted at one path, added at another) is compared in full. A path only deleted adds nothing.
 */
export function changedIds(diff: readonly NotesDiffEntry[]): { forDropped: string[]; forAdded: string[] } {
  const forDropped = new Set<string>();
  const forAdded = new Set<string>();
  for (const { annotated, status } of diff) {
    if (status !== 'A') forDropped.add(annotated);
    if (status !== 'D') forAdded.add(annotated);
  }
  return { forDropped: [...forDropped].sort(), forAdded: [...forAdded].sort() };
}

/**
 * The note blobs an id had at the older commit, from its notes at the newer one and the diff between the two: a
 * path the diff does not name is the same in both; a path it names as added was not there; a modified, retyped
 * or deleted path had the diff's old blob, if that was a note. So the older tree is never walked.
 */
export function olderNoteBlobs(
  newer: ReadonlyArray<{ path: string; oid: string }>,
  changes: readonly NotesDiffEntry[],
): string[] {
  const changed = new Map(changes.map((c) => [c.path, c]));
  const blobs: string[] = [];
  for (const note of newer) if (!changed.has(note.path)) blobs.push(note.oid);
  for (const c of changes) if (c.oldMode === NOTE_MODE) blobs.push(c.oldOid);
  return blobs;
}

/** Lines at `before` missing at `after`, and lines at `after` missing at `before`, for the given ids. */
function compareNotes(
  ids: { forDropped: readonly string[]; forAdded: readonly string[] },
  before: ReadonlyMap<string, readonly string[]>,
  after: ReadonlyMap<string, readonly string[]>,
): Pick<LedgerChange, 'dropped' | 'added'> {
  const dropped = ids.forDropped.flatMap((annotated) => {
    const kept = new Set(after.get(annotated));
    return (before.get(annotated) ?? [])
      .filter((line) => !kept.has(line))
      .map((line) => ({ annotated, line }));
  });
  const added = ids.forAdded
    .map((annotated) => {
      const had = new Set(before.get(annotated));
      return { annotated, lines: (after.get(annotated) ?? []).filter((line) => !had.has(line)) };
    })
    .filter((n) => n.lines.length > 0);
  return { dropped, added };
}

const EMPTY_TREE_SHA1 = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
const EMPTY_TREE_SHA256 = '6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321';

/**
 * What `git diff-tree -r` reports between two notes commits (full ids, both present in the object store). `-t` names
 * the directories too: an empty one shows only so, and a foreign one is named once rather than by each file in it.
 */
export async function readNotesDiff(
  git: { cwd: string; env?: NodeJS.ProcessEnv },
  older: string | null,
  newer: string,
): Promise<NotesDiff> {
  // No older commit: everything is added, as against git's empty tree (which every repository has).
  older ??= newer.length === 64 ? EMPTY_TREE_SHA256 : EMPTY_TREE_SHA1;
  for (const id of [older, newer])
    if (!isObjectId(id))
      throw new DelegateGitError('LEDGER', `${JSON.stringify(id)} is not a notes commit id.`);
  return parseNotesDiff(
    await collect(gitRecords(['diff-tree', '-r', '-t', '-z', '--no-renames', older, newer], git, '\0')),
  );
}

/**
 * Reads the change from notes commit `older` to `newer`: the diff (`diff`, when the caller started it already),
 * the changed ids' fanout paths walked in the newer tree, and their note blobs on both sides. `onAdded` hears of
 * each note's added lines (and all its lines at `newer`) as soon as they are read, in no particular order, so the
 * caller can start on them while the rest is read; the result lists them again, in id order.
 */
export async function readLedgerChange(
  git: { cwd: string; env?: NodeJS.ProcessEnv; batch: CatFileBatch },
  older: string,
  newer: string,
  diff: Promise<NotesDiff> = readNotesDiff(git, older, newer),
  onAdded?: (annotated: string, lines: string[], note: string[]) => void,
): Promise<LedgerChange> {
  const [{ notes: changes, foreign }, newerTree] = await Promise.all([
    diff,
    NotesTree.open(git.batch, newer),
  ]);
  const byId = new Map<string, NotesDiffEntry[]>();
  for (const c of changes) byId.set(c.annotated, [...(byId.get(c.annotated) ?? []), c]);
  const ids = changedIds(changes);
  const forAdded = new Set(ids.forAdded);
  const all = [...byId.keys()];
  const sides = await Promise.all(
    all.map(async (id) => {
      const [before, after] = await Promise.all([
        newerTree.notesOf(id).then((notes) => readNoteLines(git.batch, olderNoteBlobs(notes, byId.get(id)!))),
        newerTree.linesOn(id),
      ]);
      if (onAdded && forAdded.has(id)) {
        const had = new Set(before);
        const lines = after.filter((line) => !had.has(line));
        if (lines.length > 0) onAdded(id, lines, after);
      }
      return { before, after };
    }),
  );
  const before = new Map(all.map((id, i) => [id, sides[i]!.before]));
  const after = new Map(all.map((id, i) => [id, sides[i]!.after]));
  return { ...compareNotes(ids, before, after), foreign, newer: newerTree };
}

async function collect(records: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const r of records) out.push(r);
  return out;
}
