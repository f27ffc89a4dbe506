/**
 * Read-only access to the ledger's notes at one notes commit, through an object reader the caller already has, for
 * a few thousand notes at most (a push, a delegation): each id's fanout path is walked through the tree objects
 * (each read once) instead of listing the whole tree with `ls-tree -r`, whose cost grows with the ledger. The
 * answers are NotesLedger.linesOnMany's, whatever the fanout or a flat duplicate beside a fanned-out note.
 */
import { DelegateGitError } from './errors.js';
import { type CatFileBatch, parseTreeObject, type TreeEntry } from './git.js';
import { isObjectId, missingNotesTree, NOTE_MODE, parseNote, sortedUnique } from './notes-ledger.js';

const TREE_MODE = '40000';

/** A tree's entries by name (a malformed tree may repeat a name: all are kept, in order). */
type TreeIndex = Map<string, TreeEntry[]>;

export class NotesTree {
  private readonly trees = new Map<string, Promise<TreeIndex>>();
  private readonly lines = new Map<string, Promise<string[]>>();
  private readonly located = new Map<string, Promise<Array<{ path: string; oid: string }>>>();

  private constructor(
    private readonly batch: CatFileBatch,
    /** The notes commit (or ref) this tree was opened at. */
    readonly at: string,
    private readonly rootTree: string,
    root: TreeEntry[],
  ) {
    this.trees.set(rootTree, Promise.resolve(indexTree(root)));
  }

  /** The notes tree of `at`; a LEDGER error when `at` names no commit or tree here. */
  static async open(batch: CatFileBatch, at: string): Promise<NotesTree> {
    const root = await batch.read(`${at}^{tree}`);
    if (!root) {
      const named = await batch.read(at);
      if (named?.type === 'commit') throw missingNotesTree(named.oid);
      throw new DelegateGitError('LEDGER', `${at} is not a notes commit in this repository.`);
    }
    return new NotesTree(batch, at, root.oid, parseTreeObject(root.content, root.oid.length / 2));
  }

  /** The lines of the note on each id (sorted, unique; [] when it has none), each read once per NotesTree. */
  async linesOnMany(ids: readonly string[]): Promise<Map<string, string[]>> {
    const unique = [...new Set(ids)];
    unique.forEach(assertObjectId);
    const read = await Promise.all(unique.map((id) => this.linesOn(id)));
    return new Map(unique.map((id, i) => [id, read[i]!]));
  }

  /** The lines of the note on one id (sorted, unique; [] when it has none). */
  linesOn(id: string): Promise<string[]> {
    assertObjectId(id);
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

  /**
   * Every note entry for `id` (path and blob): git reads a note at any depth of its fanout path (`abcd…`,
   * `ab/cd…`, `ab/cd/ef…`) and concatenates duplicates, so each level of the path is looked at. Only a regular file
   * there is a note, as for every reader of the ledger (noteOfTreeRecord): an executable file, a link or a submodule
   * is a foreign entry.
   */
  notesOf(id: string): Promise<Array<{ path: string; oid: string }>> {
    assertObjectId(id);
    let notes = this.located.get(id);
    if (!notes) {
      notes = this.locate(id);
      this.located.set(id, notes);
    }
    return notes;
  }

  /** A (malformed) tree may name a fanout directory twice: git reads the notes of both, and so does this. */
  private async locate(id: string): Promise<Array<{ path: string; oid: string }>> {
    const found: Array<{ path: string; oid: string }> = [];
    const walk = async (tree: string, dir: string, consumed: number): Promise<void> => {
      const entries = await this.tree(tree);
      const rest = id.slice(consumed);
      for (const entry of entries.get(rest) ?? [])
        if (entry.mode === NOTE_MODE) found.push({ path: dir + rest, oid: entry.oid });
      if (rest.length <= 2) return;
      for (const next of entries.get(rest.slice(0, 2)) ?? [])
        if (next.mode === TREE_MODE) await walk(next.oid, `${dir}${next.name}/`, consumed + 2);
    };
    await walk(this.rootTree, '', 0);
    return found;
  }

  private tree(oid: string): Promise<TreeIndex> {
    let entries = this.trees.get(oid);
    if (!entries) {
      entries = this.batch.read(oid).then((object) => {
        if (object?.type !== 'tree')
          throw new DelegateGitError('LEDGER', `the notes tree is damaged: tree ${oid} is missing.`);
        return indexTree(parseTreeObject(object.content, oid.length / 2));
      });
      this.trees.set(oid, entries);
    }
    return entries;
  }
}

/** The lines of the notes stored in these blobs, together (sorted, unique); a missing blob is a damaged ledger. */
export async function readNoteLines(batch: CatFileBatch, oids: readonly string[]): Promise<string[]> {
  if (oids.length === 0) return [];
  const objects = await batch.readMany([...oids]);
  const lines: string[] = [];
  for (const [i, object] of objects.entries()) {
    if (!object)
      throw new DelegateGitError('LEDGER', `the notes tree is damaged: note ${oids[i]} is missing.`);
    lines.push(...parseNote(object.content));
  }
  return oids.length === 1 ? lines : sortedUnique(lines);
}

function indexTree(entries: readonly TreeEntry[]): TreeIndex {
  const index: TreeIndex = new Map();
  for (const entry of entries) {
    const same = index.get(entry.name);
    if (same) same.push(entry);
    else index.set(entry.name, [entry]);
  }
  return index;
}

function assertObjectId(id: string): void {
  if (!isObjectId(id)) {
    throw new DelegateGitError(
      'LEDGER',
      `${JSON.stringify(id)} is not a full git object id (40 or 64 lowercase hex digits); notes are keyed by the full blob id.`,
    );
  }
}
