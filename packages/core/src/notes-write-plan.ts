/**
 * One append to the ledger as one notes commit: which tree entries change (planAppend, from the notes tree as it is)
 * and the `git fast-import` stream that writes them (fastImportStream).
 */
import type { TreeEntry } from './git.js';
import { FANOUT_THRESHOLD, isFannedOut, noteEntriesAt, serializeNote } from './notes-format.js';
import { type NoteLocation, type NotesTree, readNoteLines } from './notes-tree.js';
import { shownLine } from './shown-path.js';

/**
 * Notes commits are made by a fixed identity: they must work where user.name/user.email are unset (CI runners,
 * fresh machines, hooks), and who vouches for a record is said by its signature, not by the notes commit.
 */
const NOTES_COMMITTER = 'delegate-git <delegate-git@localhost>';

export interface WritePlan {
  /** path → new content (inline) or an existing blob id (a note moved by fanout). */
  writes: Map<string, { content: string } | { oid: string }>;
  deletes: Set<string>;
  added: number;
  notes: number;
}

function fannedPath(dir: string, name: string): string {
  return `${dir}${name.slice(0, 2)}/${name.slice(2)}`;
}

/**
 * Decides every tree change for one append from the current notes tree. An existing note is rewritten at the
 * path it already has (the deepest, if a foreign tool left a flat duplicate, which is then removed so git does
 * not concatenate the two). A new note goes to the depth the tree already uses on that id's path; a flat
 * directory that would exceed FANOUT_THRESHOLD notes is fanned out, as git itself does when it writes notes.
 */
export async function planAppend(
  reader: NotesTree | null,
  grouped: Map<string, Set<string>>,
): Promise<WritePlan> {
  const plan: WritePlan = { writes: new Map(), deletes: new Set(), added: 0, notes: 0 };
  const newNotesByDir = new Map<
    string,
    { consumed: number; entries: TreeEntry[]; names: Map<string, string> }
  >();
  const ids = [...grouped.keys()].sort();
  const locations = reader
    ? await Promise.all(ids.map((id) => reader.locate(id)))
    : ids.map((): NoteLocation => ({ notes: [], levels: [{ dir: '', consumed: 0, entries: [] }] }));
  const existingLines = reader
    ? await Promise.all(
        locations.map((location) =>
          readNoteLines(
            reader.batch,
            location.notes.map((note) => note.oid),
          ),
        ),
      )
    : [];
  for (const [index, id] of ids.entries()) {
    const location = locations[index]!;
    const existing = existingLines[index] ?? [];
    const present = new Set(existing);
    const missing = [...grouped.get(id)!].filter((line) => !present.has(line));
    if (missing.length === 0) continue;
    plan.added += missing.length;
    plan.notes += 1;
    const content = serializeNote([...existing, ...missing]);
    if (location.notes.length > 0) {
      const [keep, ...duplicates] = [...location.notes].sort((a, b) => b.path.length - a.path.length);
      plan.writes.set(keep!.path, { content });
      for (const duplicate of duplicates) plan.deletes.add(duplicate.path);
      continue;
    }
    const level = location.levels[location.levels.length - 1]!;
    const rest = id.slice(level.consumed);
    if (isFannedOut(level.entries)) {
      // The subdirectory for this id does not exist yet: it is created holding just this note.
      plan.writes.set(fannedPath(level.dir, rest), { content });
      continue;
    }
    const pending = newNotesByDir.get(level.dir) ?? {
      consumed: level.consumed,
      entries: level.entries,
      names: new Map(),
    };
    pending.names.set(rest, content);
    newNotesByDir.set(level.dir, pending);
  }
  const idLength = reader?.idLength ?? ids[0]?.length ?? 40;
  for (const [dir, { consumed, entries, names }] of newNotesByDir) {
    const present = noteEntriesAt(entries, consumed, idLength);
    const fanOut = present.length + names.size > FANOUT_THRESHOLD && idLength - consumed > 2;
    for (const [name, content] of names)
      plan.writes.set(fanOut ? fannedPath(dir, name) : dir + name, { content });
    if (!fanOut) continue;
    for (const entry of present) {
      const oldPath = dir + entry.name;
      const rewritten = plan.writes.get(oldPath);
      plan.writes.delete(oldPath);
      plan.writes.set(fannedPath(dir, entry.name), rewritten ?? { oid: entry.oid });
      plan.deletes.add(oldPath);
    }
  }
  return plan;
}

/**
 * fastimport.unpackLimit=0: keep the few objects as the small pack fast-import wrote instead of running
 * `unpack-objects` to make them loose (another process, 8 ms of a delegation); `gc --auto` folds small packs
 * together as it does fetched ones.
 */
export const FAST_IMPORT = ['-c', 'fastimport.unpackLimit=0', 'fast-import', '--quiet'];

/**
 * The longest notes commit message, in characters: it names a unit or a few paths, which their authors chose (a unit
 * of megabytes has a name that long), and `git log` of the ledger prints each whole.
 */
export const MAX_MESSAGE_LENGTH = 300;

/**
 * The fast-import stream that makes one notes commit on `ref` with `plan` on top of `parent` and prints its id.
 * Without a parent the commit is a root, and fast-import creates the ref only if it still does not exist. `message`
 * goes in as shownLine shows it: one line, nothing hidden, bounded.
 */
export function fastImportStream(
  ref: string,
  parent: string | null,
  plan: WritePlan,
  message: string,
  merged?: string,
): Buffer {
  const parts: Buffer[] = [];
  const push = (text: string) => parts.push(Buffer.from(text, 'utf8'));
  const data = (text: string) => {
    const bytes = Buffer.from(text, 'utf8');
    push(`data ${bytes.length}\n`);
    parts.push(bytes, Buffer.from('\n'));
  };
  // "feature done" (what --done asks): a truncated stream fails instead of committing part of it. Said in the
  // stream rather than on the command line, so a writer started early and dismissed unused ends without an error.
  push('feature done\n');
  push(`commit ${ref}\nmark :1\ncommitter ${NOTES_COMMITTER} ${Math.floor(Date.now() / 1000)} +0000\n`);
  data(shownLine(message, MAX_MESSAGE_LENGTH));
  if (parent) push(`from ${parent}\n`);
  if (merged) push(`merge ${merged}\n`);
  for (const path of plan.deletes) push(`D ${path}\n`);
  for (const [path, write] of plan.writes) {
    if ('oid' in write) push(`M 100644 ${write.oid} ${path}\n`);
    else {
      push(`M 100644 inline ${path}\n`);
      data(write.content);
    }
  }
  push('\nget-mark :1\ndone\n');
  return Buffer.concat(parts);
}
