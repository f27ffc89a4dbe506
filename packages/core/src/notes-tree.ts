/**
 * The ledger's notes at one notes commit, read through one object reader (`cat-file --batch`): each id's fanout path
 * is walked through the tree objects, each read and parsed once, instead of listing the whole tree with `ls-tree -r`,
 * whose cost grows with the ledger. Every reader and writer of the ledger finds a note this way, whatever the fanout
 * or a flat duplicate beside a fanned-out note. `listNotes` is the listing, for callers that want most notes.
 */
import { DelegateGitError } from './errors.js';
import { type CatFileBatch, gitRecords, parseTreeObject, type TreeEntry } from './git.js';
import {
  assertObjectId,
  type ForeignEntries,
  NOTE_MODE,
  noteOfTreeRecord,
  parseNote,
  sortedUnique,
  TREE_MODE,
} from './notes-format.js';

const NEWLINE = Buffer.from('\n');

/** A tree's entries in order, and by name (a malformed tree may repeat a name: all are kept, in order). */
interface ParsedTree {
  entries: TreeEntry[];
  byName: Map<string, TreeEntry[]>;
}

/** Where an id's note is, and the directories on its fanout path: what an append needs to place a new note. */
export interface NoteLocation {
  /** Every entry holding a note for this id (normally 0 or 1; 2 when a tool wrote a flat one beside a fanned one). */
  notes: Array<{ path: string; oid: string }>;
  /** The directories on this id's fanout path that exist, from the root down. */
  levels: Array<{ dir: string; consumed: number; entries: TreeEntry[] }>;
}

export class NotesTree {
  private readonly trees = new Map<string, Promise<ParsedTree>>();
  private readonly lines = new Map<string, Promise<string[]>>();
  private readonly located = new Map<string, Promise<NoteLocation>>();

  private constructor(
    readonly batch: CatFileBatch,
    /** The notes commit (or ref) this tree was opened at. */
    readonly at: string,
    readonly rootTree: string,
    root: TreeEntry[],
  ) {
    this.trees.set(rootTree, Promise.resolve(parsed(root)));
  }

  /** Object ids here have as many hex digits as the root tree's. */
  get idLength(): number {
    return this.rootTree.length;
  }

  /** The notes tree of the notes commit `at`; a LEDGER error when `at` names no commit here. */
  static async open(batch: CatFileBatch, at: string): Promise<NotesTree> {
    const tree = await NotesTree.find(batch, at);
    if (!tree) throw new DelegateGitError('LEDGER', `${at} is not a notes commit in this repository.`);
    return tree;
  }

  /**
   * The notes tree of a notes commit or ref, or null when it does not exist. A ref must name the commit itself, as
   * the gates read it; a revision typed by hand may name one through a tag.
   */
  static async find(batch: CatFileBatch, at: string): Promise<NotesTree | null> {
    const named = await (at.startsWith('refs/') ? batch.readRef(at) : batch.read(`${at}^{commit}`));
    if (!named) return null;
    if (named.type !== 'commit') throw damagedLedger(at, named.type, named.oid);
    const root = await batch.read(`${named.oid}^{tree}`);
    if (!root) throw missingNotesTree(named.oid);
    return new NotesTree(batch, at, root.oid, parseTreeObject(root.content, root.oid.length / 2));
  }

  /** The lines of the note on each id (sorted, unique; [] when it has none), each read once per NotesTree. */
  async linesOnMany(ids: readonly string[]): Promise<Map<string, string[]>> {
    const unique = [...new Set(ids)];
    const read = await Promise.all(unique.map((id) => this.linesOn(id)));
    return new Map(unique.map((id, i) => [id, read[i]!]));
  }

  /** The lines of the note on one id (sorted, unique; [] when it has none). */
  linesOn(id: string): Promise<string[]> {
    let lines = this.lines.get(id);
    if (!lines) {
      lines = this.notesOf(id).then((notes) =>
        readNoteLines(
          this.batch,
          notes.map((n) => n.oid),
        ),
      );
      this.lines.set(id, lines);
    }
    return lines;
  }

  /** Every note entry for `id` (path and blob). */
  async notesOf(id: string): Promise<Array<{ path: string; oid: string }>> {
    return (await this.locate(id)).notes;
  }

  /**
   * Follows an id's fanout path the way git does: a note may sit at any depth (`abcd…`, `ab/cd…`, `ab/cd/ef…`) and
   * duplicates are concatenated, so each level of the path is looked at; a (malformed) tree that names a fanout
   * directory twice has git read the notes of both, and `levels` follows the last of such twins. Only a regular file
   * is a note, as for every reader of the ledger (noteOfTreeRecord): an executable file, a link or a submodule is a
   * foreign entry.
   */
  locate(id: string): Promise<NoteLocation> {
    assertObjectId(id);
    let location = this.located.get(id);
    if (!location) {
      location = this.walk(id);
      this.located.set(id, location);
    }
    return location;
  }

  private async walk(id: string): Promise<NoteLocation> {
    const location: NoteLocation = { notes: [], levels: [] };
    const visit = async (tree: string, dir: string, consumed: number, onLevels: boolean): Promise<void> => {
      const { entries, byName } = await this.tree(tree);
      if (onLevels) location.levels.push({ dir, consumed, entries });
      const rest = id.slice(consumed);
      for (const entry of byName.get(rest) ?? [])
        if (entry.mode === NOTE_MODE) location.notes.push({ path: dir + rest, oid: entry.oid });
      if (rest.length <= 2) return;
      const deeper = (byName.get(rest.slice(0, 2)) ?? []).filter((entry) => entry.mode === TREE_MODE);
      for (const [i, next] of deeper.entries())
        await visit(next.oid, `${dir}${next.name}/`, consumed + 2, onLevels && i === deeper.length - 1);
    };
    await visit(this.rootTree, '', 0, true);
    return location;
  }

  readContent(oids: readonly string[]): Promise<Buffer> {
    return readNoteContent(this.batch, oids);
  }

  private tree(oid: string): Promise<ParsedTree> {
    let tree = this.trees.get(oid);
    if (!tree) {
      tree = this.batch.read(oid).then((object) => {
        if (object?.type !== 'tree')
          throw new DelegateGitError('LEDGER', `the notes tree is damaged: tree ${oid} is missing.`);
        return parsed(parseTreeObject(object.content, oid.length / 2));
      });
      this.trees.set(oid, tree);
    }
    return tree;
  }
}

/**
 * The raw content of a note (several objects for one id, as a fanout change can leave, joined by a newline); a blob
 * the tree names but the store lacks is a damaged ledger, not "no records".
 */
export async function readNoteContent(batch: CatFileBatch, oids: readonly string[]): Promise<Buffer> {
  const objects = await batch.readMany([...oids]);
  const contents = objects.map((object, index) => {
    if (!object) throw missingNote(oids[index]!);
    return object.content;
  });
  return contents.length === 1 ? contents[0]! : Buffer.concat(contents.flatMap((c) => [c, NEWLINE]));
}

/** The lines of the notes stored in these blobs, together (sorted, unique); a missing blob is a damaged ledger. */
export async function readNoteLines(batch: CatFileBatch, oids: readonly string[]): Promise<string[]> {
  if (oids.length === 0) return [];
  const objects = await batch.readMany([...oids]);
  const lines: string[] = [];
  for (const [i, object] of objects.entries()) {
    if (!object) throw missingNote(oids[i]!);
    for (const line of parseNote(object.content)) lines.push(line); // a note may hold more lines than a call takes arguments
  }
  return oids.length === 1 ? lines : sortedUnique(lines);
}

/**
 * `ls-tree -r -z` of a notes tree as annotated id → note blob ids (deepest first), streamed from git; with `foreign`,
 * the same listing (directories included) also tells it every entry that is no note.
 */
export async function listNotes(
  cwd: string,
  env: NodeJS.ProcessEnv | undefined,
  treeish: string,
  foreign?: ForeignEntries,
): Promise<Map<string, string[]>> {
  const notes = new Map<string, string[]>();
  const depth = new Map<string, number>();
  const args = ['ls-tree', '-r', ...(foreign ? ['-t'] : []), '-z', '--full-tree', treeish];
  for await (const record of gitRecords(args, { cwd, env }, '\0')) {
    const note = noteOfTreeRecord(record);
    if (!note) {
      foreign?.seeRecord(record);
      continue;
    }
    const { annotated, oid, notePath } = note;
    const existing = notes.get(annotated);
    const level = notePath.length;
    if (!existing) {
      notes.set(annotated, [oid]);
      depth.set(annotated, level);
    } else if (level > (depth.get(annotated) ?? 0)) {
      existing.unshift(oid);
      depth.set(annotated, level);
    } else existing.push(oid);
  }
  return notes;
}

/**
 * The refusal for a ledger ref that names no commit (set by hand, or damaged): reading it as "no ledger yet" would
 * make every record vanish without a word.
 */
export function damagedLedger(ref: string, type: string, oid: string): DelegateGitError {
  return new DelegateGitError(
    'LEDGER',
    `${ref} points to a ${type} (${oid.slice(0, 12)}), not a notes commit: the ledger ref is damaged. ` +
      `Point it back at its last notes commit (\`git reflog show ${ref}\`, then \`git update-ref ${ref} <commit>\`), ` +
      `or fetch the ledger again from a remote that has it.`,
  );
}

/** A notes commit whose tree the object store lacks: every record would read as gone. */
export function missingNotesTree(commit: string): DelegateGitError {
  return new DelegateGitError(
    'LEDGER',
    `the notes commit ${commit}'s tree is missing: the ledger is damaged. ` +
      'Fetch the ledger again from a remote that has it (`delegate-git sync`), or run `git fsck` to find what is lost.',
  );
}

/** A note the tree names but the object store lacks is damage, not "no records". */
export function missingNote(oid: string): DelegateGitError {
  return new DelegateGitError(
    'LEDGER',
    `the notes tree is damaged: note ${oid} is missing from the object store, so what it records cannot be read and nothing is judged without it. \`git fsck\` names what else is lost; copy the object back from another clone of this repository (or fetch the ledger into a fresh clone), and run the command again.`,
  );
}

function parsed(entries: TreeEntry[]): ParsedTree {
  const byName = new Map<string, TreeEntry[]>();
  for (const entry of entries) {
    const same = byName.get(entry.name);
    if (same) same.push(entry);
    else byName.set(entry.name, [entry]);
  }
  return { entries, byName };
}
