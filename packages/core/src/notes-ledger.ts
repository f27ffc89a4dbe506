// The ledger: git notes under refs/notes/delegations, keyed by blob id, one record per line (DESIGN 3.1, 3.3).
//
// A note is a set of lines, sorted in byte order and unique, each ending in "\n" — exactly what
// `git notes merge -s cat_sort_uniq` produces, so ledgers that diverged merge with nothing lost.
//
// Reading walks the notes tree with one `git cat-file --batch` (or lists it with one `ls-tree -r` when many notes
// are wanted). Writing builds one notes commit with `git fast-import` (measured fastest, DESIGN 6) as ordinary tree
// entries at each note's path — fast-import's own `N` command refuses notes on blobs — on the ledger's ref itself:
// fast-import moves a ref at its end only by compare-and-swap against the value it reads then, and only when that
// value is an ancestor of the new commit, so concurrent writers never lose each other's lines. An append is two
// git processes (cat-file, fast-import), one when the caller lends its open object reader: every delegation pays
// for each one spawned.
import { isAscii } from 'node:buffer';
import { setTimeout as sleep } from 'node:timers/promises';
import { DelegateGitError } from './errors.js';
import {
  CatFileBatch,
  gitFailure,
  gitRecords,
  gitTry,
  parseTreeObject,
  refObject,
  type TreeEntry,
  WaitingGit,
} from './git.js';

export const LEDGER_REF = 'refs/notes/delegations';

export interface NoteAddition {
  blob: string;
  lines: string[];
}

/**
 * Notes commits are made by a fixed identity: they must work where user.name/user.email are unset (CI runners,
 * fresh machines, hooks), and who vouches for a record is said by its signature, not by the notes commit.
 */
const NOTES_COMMITTER = 'delegate-git <delegate-git@localhost>';
/** A notes directory with more notes than this is fanned out into 2-hex-digit subdirectories, as git does. */
const FANOUT_THRESHOLD = 256;
/** linesOnMany up to this many blobs walks the tree per blob; more lists the whole tree once. */
const WALK_LIMIT = 256;
/** Up to this many notes are read through the owner's object reader, not a git of their own (withReader). */
const SHARED_READS = 16;
const NEWLINE = Buffer.from('\n');
const EMPTY = Buffer.alloc(0);
/** Notes read per cat-file window while streaming entries(). */
const ENTRY_WINDOW = 512;
const MAX_APPEND_ATTEMPTS = 40;

// ---------------------------------------------------------------------------------------------------------------
// Pure helpers: note text, note paths, fanout decisions.

/** UTF-8 byte order (what git's cat_sort_uniq uses); equal to JS string order for ASCII. */
export function compareBytewise(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    if (a.charCodeAt(i) !== b.charCodeAt(i)) return (a.codePointAt(i) ?? 0) - (b.codePointAt(i) ?? 0);
  }
  return a.length - b.length;
}

/**
 * Sorted (byte order) and without duplicates. `ascii`: the caller knows every line is ASCII, where UTF-16 order is
 * byte order and the built-in comparison is far cheaper (two records on one blob share hundreds of leading
 * characters, which compareBytewise walks one by one).
 */
export function sortedUnique(lines: Iterable<string>, ascii = false): string[] {
  const list = Array.isArray(lines) ? lines : [...lines];
  // A note as written (sorted, unique) is returned as it is: a Set would hash every 2 KB line first.
  if (ascii && list.every((line, i) => i === 0 || list[i - 1]! < line)) return list;
  const unique = [...new Set(list)];
  if (unique.length < 2) return unique;
  return ascii ? unique.sort() : unique.sort(compareBytewise);
}

/** The lines of a note: empty lines dropped (git separates concatenated notes with blank lines), sorted, unique. */
export function parseNote(content: Buffer | string): string[] {
  const text = typeof content === 'string' ? content : content.toString('utf8');
  // Checked on the bytes, natively: a scan of the decoded text costs as much as the sort it saves.
  const ascii = typeof content !== 'string' && isAscii(content);
  return sortedUnique(
    text.split('\n').filter((line) => line !== ''),
    ascii,
  );
}

/** A note's bytes: its lines sorted and unique, each terminated by "\n". */
export function serializeNote(lines: Iterable<string>): string {
  return sortedUnique(lines)
    .map((line) => `${line}\n`)
    .join('');
}

const OBJECT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const SHA1_ID = /^[0-9a-f]{40}$/;
const FANOUT_DIR = /^[0-9a-f]{2}$/;
const TREE_MODE = '40000';
/** The mode of every note (git notes writes nothing else), as git prints it and as a tree object stores it. */
export const NOTE_MODE = '100644';
const NOTE_RECORD = `${NOTE_MODE} blob `;
/** A directory's mode as `ls-tree` and `diff-tree` print it (a tree object stores it without the leading zero). */
const LISTED_TREE_MODE = '040000';
const FANOUT_PATH = /^[0-9a-f]{2}(?:\/[0-9a-f]{2})*$/;

export function isObjectId(value: string): boolean {
  return OBJECT_ID.test(value);
}

/** The annotated object of a notes-tree path (`abcd…` or `ab/cd…`, any depth), or null if the path is no note. */
export function annotatedIdOfPath(notePath: string): string | null {
  // git's own layouts, flat or fanned out one level, answered without splitting (a listing has one per note).
  if (notePath.length === 41 && notePath.charCodeAt(2) === 47) {
    const id = notePath.slice(0, 2) + notePath.slice(3);
    return SHA1_ID.test(id) ? id : null;
  }
  if (notePath.length === 40) return SHA1_ID.test(notePath) ? notePath : null;
  const parts = notePath.split('/');
  const last = parts.pop() ?? '';
  if (!parts.every((part) => FANOUT_DIR.test(part))) return null;
  const id = parts.join('') + last;
  return isObjectId(id) && /^[0-9a-f]+$/.test(last) ? id : null;
}

/**
 * A record of `ls-tree -r -z` ("<6-digit mode> <type> <id>\t<path>") that is a note: its annotated id and blob. Only
 * what git notes writes is a note, a regular file (NOTE_MODE) at a note path; anything else is a foreign entry.
 */
export function noteOfTreeRecord(
  record: string,
): { annotated: string; oid: string; notePath: string } | null {
  if (!record.startsWith(NOTE_RECORD)) return null;
  const tab = record.indexOf('\t');
  const oid = record.slice(12, tab);
  const notePath = record.slice(tab + 1);
  const annotated = annotatedIdOfPath(notePath);
  return annotated && isObjectId(oid) ? { annotated, oid, notePath } : null;
}

/** An entry of a notes tree that is neither a note nor a fanout directory: git notes never writes one. */
export interface ForeignEntry {
  /** From the notes tree's root. */
  path: string;
  /** As git prints it (`100755`, `120000`, `160000`, `040000`, ...). */
  mode: string;
}

/** Whether an entry of a notes tree listing (mode as git prints it) is foreign: neither a note nor a fanout directory. */
export function isForeignEntry(mode: string, path: string): boolean {
  if (mode === LISTED_TREE_MODE) return !FANOUT_PATH.test(path);
  return mode !== NOTE_MODE || annotatedIdOfPath(path) === null;
}

const MODE_NAMES: Record<string, string> = {
  '040000': 'a directory',
  '100755': 'an executable file',
  '120000': 'a symbolic link',
  '160000': 'a submodule',
};

/** Why a foreign entry is no note, in words that follow "which is". */
export function whyNotANote(entry: ForeignEntry): string {
  if (annotatedIdOfPath(entry.path) === null) return 'not a note on a full object id';
  const what = MODE_NAMES[entry.mode] ?? 'an entry';
  return `${what} (mode ${entry.mode}), not a note file (mode ${NOTE_MODE})`;
}

/**
 * The foreign entries of a listing of a notes tree that names directories as well as what they hold (`ls-tree -r -t`,
 * `diff-tree -r -t`: an empty directory shows only so), in git's order, where a directory comes just before its
 * contents: what lies in a foreign directory is part of it, so only the directory is named.
 */
export class ForeignEntries {
  readonly found: ForeignEntry[] = [];
  private within: string | null = null;

  /** Takes one entry of the listing. */
  see(mode: string, path: string): void {
    if (this.within !== null && path.startsWith(this.within)) return;
    this.within = null;
    if (!isForeignEntry(mode, path)) return;
    this.found.push({ path, mode });
    if (mode === LISTED_TREE_MODE) this.within = `${path}/`;
  }

  /** Takes a record of `ls-tree -r -t -z` ("<mode> <type> <id>\t<path>"). */
  seeRecord(record: string): void {
    this.see(record.slice(0, record.indexOf(' ')), record.slice(record.indexOf('\t') + 1));
  }
}

/** True when a notes directory is fanned out: it holds at least one 2-hex-digit subdirectory. */
function isFannedOut(entries: readonly TreeEntry[]): boolean {
  return entries.some((entry) => entry.mode === TREE_MODE && FANOUT_DIR.test(entry.name));
}

/** Entries of a directory at `consumed` hex digits deep that are notes (blob named by the rest of an id). */
function noteEntriesAt(entries: readonly TreeEntry[], consumed: number, idLength: number): TreeEntry[] {
  return entries.filter(
    (entry) =>
      entry.mode === NOTE_MODE && entry.name.length === idLength - consumed && /^[0-9a-f]+$/.test(entry.name),
  );
}

function assertRevision(value: string, what: string): void {
  if (value === '' || value.startsWith('-') || /[\s\0]/.test(value)) {
    throw new DelegateGitError('LEDGER', `${JSON.stringify(value)} is not a valid ${what}.`);
  }
}

function assertObjectId(blob: string): void {
  if (!isObjectId(blob)) {
    throw new DelegateGitError(
      'LEDGER',
      `${JSON.stringify(blob)} is not a full git object id (40 or 64 lowercase hex digits); notes are keyed by the full blob id.`,
    );
  }
}

/** Additions grouped per blob (lines deduplicated), after checking every blob id and line. */
export function groupAdditions(additions: readonly NoteAddition[]): Map<string, Set<string>> {
  const grouped = new Map<string, Set<string>>();
  for (const { blob, lines } of additions) {
    assertObjectId(blob);
    const target = grouped.get(blob) ?? new Set<string>();
    for (const line of lines) {
      if (typeof line !== 'string' || line === '' || line.includes('\n')) {
        throw new DelegateGitError(
          'LEDGER',
          `a ledger line for blob ${blob} is empty or contains a newline; each record must be one non-empty line.`,
        );
      }
      target.add(line);
    }
    grouped.set(blob, target);
  }
  return grouped;
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the notes tree.

interface NoteLocation {
  /** Every entry holding a note for this id (normally 0 or 1; 2 when a tool wrote a flat one beside a fanned one). */
  notes: Array<{ path: string; oid: string }>;
  /** The directories on this id's fanout path that exist, from the root down. */
  levels: Array<{ dir: string; consumed: number; entries: TreeEntry[] }>;
}

/** Reads notes trees through one cat-file process, remembering trees already parsed (objects never change). */
class NotesTreeReader {
  private readonly trees = new Map<string, Promise<TreeEntry[]>>();

  constructor(
    readonly batch: CatFileBatch,
    readonly rootTree: string,
  ) {}

  get idLength(): number {
    return this.rootTree.length;
  }

  /**
   * The notes tree of a notes commit (or ref), or null when it does not exist. A ref must name the commit itself, as
   * the gates read it; a revision typed by hand may name one through a tag.
   */
  static async open(batch: CatFileBatch, at: string): Promise<NotesTreeReader | null> {
    const named = await batch.read(at.startsWith('refs/') ? at : `${at}^{commit}`);
    if (!named) return null;
    if (named.type !== 'commit') throw damagedLedger(at, named.type, named.oid);
    const root = await batch.read(`${named.oid}^{tree}`);
    if (!root) throw missingNotesTree(named.oid);
    const reader = new NotesTreeReader(batch, root.oid);
    reader.trees.set(root.oid, Promise.resolve(parseTreeObject(root.content, root.oid.length / 2)));
    return reader;
  }

  tree(oid: string): Promise<TreeEntry[]> {
    let entries = this.trees.get(oid);
    if (!entries) {
      entries = this.batch.read(oid).then((object) => {
        if (object?.type !== 'tree') {
          throw new DelegateGitError('LEDGER', `the notes tree is damaged: tree ${oid} is missing.`);
        }
        return parseTreeObject(object.content, oid.length / 2);
      });
      this.trees.set(oid, entries);
    }
    return entries;
  }

  /**
   * Follows an id's fanout path the way git does: a note may sit at any depth, and a (malformed) tree that names a
   * fanout directory twice has git read the notes of both. `levels` follows the last of such twins.
   */
  async locate(id: string): Promise<NoteLocation> {
    const location: NoteLocation = { notes: [], levels: [] };
    await this.walk(id, this.rootTree, '', 0, location, true);
    return location;
  }

  private async walk(
    id: string,
    tree: string,
    dir: string,
    consumed: number,
    location: NoteLocation,
    onLevels: boolean,
  ): Promise<void> {
    const entries = await this.tree(tree);
    if (onLevels) location.levels.push({ dir, consumed, entries });
    const rest = id.slice(consumed);
    const deeper: TreeEntry[] = [];
    for (const entry of entries) {
      if (entry.name === rest && entry.mode === NOTE_MODE)
        location.notes.push({ path: dir + rest, oid: entry.oid });
      else if (entry.mode === TREE_MODE && entry.name === rest.slice(0, 2) && rest.length > 2)
        deeper.push(entry);
    }
    for (const [i, next] of deeper.entries())
      await this.walk(
        id,
        next.oid,
        `${dir}${next.name}/`,
        consumed + 2,
        location,
        onLevels && i === deeper.length - 1,
      );
  }

  async readLines(oids: readonly string[]): Promise<string[]> {
    return parseNote(await this.readContent(oids));
  }

  /** The raw content of a note (several objects for one id, as a fanout change can leave, joined by a newline). */
  async readContent(oids: readonly string[]): Promise<Buffer> {
    const objects = await this.batch.readMany([...oids]);
    const contents = objects.map((object, index) => {
      if (!object)
        throw new DelegateGitError('LEDGER', `the notes tree is damaged: note ${oids[index]} is missing.`);
      return object.content;
    });
    return contents.length === 1 ? contents[0]! : Buffer.concat(contents.flatMap((c) => [c, NEWLINE]));
  }
}

/**
 * `ls-tree -r -z` of a notes tree as annotated id → note blob ids (deepest first), streamed from git; with `foreign`,
 * the same listing (directories included) also tells it every entry that is no note.
 */
async function listNotes(
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

// ---------------------------------------------------------------------------------------------------------------
// Writing: the plan of one notes commit.

interface WritePlan {
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
async function planAppend(
  reader: NotesTreeReader | null,
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
    ? await Promise.all(locations.map((location) => reader.readLines(location.notes.map((note) => note.oid))))
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
const FAST_IMPORT = ['-c', 'fastimport.unpackLimit=0', 'fast-import', '--quiet'];

/**
 * The fast-import stream that makes one notes commit on `ref` with `plan` on top of `parent` and prints its id.
 * Without a parent the commit is a root, and fast-import creates the ref only if it still does not exist.
 */
function fastImportStream(
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
  data(message);
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

// ---------------------------------------------------------------------------------------------------------------

/** After a lost race: back off (randomly, so writers spread out) before rebuilding on the new tip. */
function backOff(attempt: number): Promise<void> {
  return sleep(Math.random() * Math.min(250, 5 * 2 ** Math.min(attempt, 6)));
}

/** Each note of noteContents' windows with its lines, in order. */
export async function* notesIn(
  windows: AsyncIterable<Array<{ annotated: string; content: Buffer }>>,
): AsyncIterable<{ annotated: string; lines: string[] }> {
  for await (const window of windows) {
    for (let i = 0; i < window.length; i++) {
      // git can only run ahead by what its output pipe holds (64 KB on Linux, about 16 notes of a few records), and
      // that pipe is read only when the event loop polls: a consumer busy with a whole window would leave git
      // blocked most of the time. Measured: the first build of a 100,000-record path index, 7.2-7.6 s before and
      // 5.7-6.1 s with this.
      if (i % 16 === 15) await new Promise((resolve) => setImmediate(resolve));
      const { annotated, content } = window[i]!;
      yield { annotated, lines: parseNote(content) };
    }
  }
}

/** The ledger's tip read through a cat-file process: what `tip()` answers, without a process of its own. */
async function tipThrough(batch: CatFileBatch, ref: string): Promise<string | null> {
  const named = await batch.read(ref);
  if (named && named.type !== 'commit') throw damagedLedger(ref, named.type, named.oid);
  return named?.oid ?? null;
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

export class NotesLedger {
  readonly cwd: string;
  readonly ref: string;
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly objects: (() => CatFileBatch) | undefined;

  /**
   * `objects`: an object reader its owner keeps open (the repository's), which an append reads the ledger through
   * instead of starting a reader of its own; a tip it reads late only costs a lost race, never a line.
   */
  constructor(opts: { cwd: string; ref?: string; env?: NodeJS.ProcessEnv; objects?: () => CatFileBatch }) {
    this.cwd = opts.cwd;
    const ref = opts.ref ?? LEDGER_REF;
    this.ref = ref.startsWith('refs/') ? ref : `refs/notes/${ref}`;
    assertRevision(this.ref, 'notes ref');
    this.env = opts.env;
    this.objects = opts.objects;
  }

  private options() {
    return { cwd: this.cwd, env: this.env };
  }

  /** Commit id the ref points at, or null when there is no ledger yet. */
  async tip(): Promise<string | null> {
    let named: Awaited<ReturnType<typeof refObject>>;
    try {
      named = await refObject(this.ref, this.options());
    } catch (error) {
      throw new DelegateGitError('LEDGER', (error as Error).message);
    }
    if (named === null) return null;
    // The gates read the ref as it is (a tag of a notes commit is damage, not a ledger); so must every reader.
    if (named.type !== 'commit') throw damagedLedger(this.ref, named.type, named.oid);
    return named.oid;
  }

  /**
   * `few`: only a few notes will be read, through the owner's open object reader when there is one (a walk judging a
   * change at each of a thousand commits started a git for each); many get a reader of their own, which reads beside
   * the owner's (the gates read contents there meanwhile).
   */
  private async withReader<T>(
    at: string | undefined,
    use: (reader: NotesTreeReader | null, batch: CatFileBatch) => Promise<T>,
    few = false,
  ): Promise<T> {
    if (at !== undefined) assertRevision(at, 'notes commit');
    const shared = few && this.objects !== undefined;
    const batch = shared ? this.objects!() : new CatFileBatch(this.options());
    try {
      const reader = await NotesTreeReader.open(batch, at ?? this.ref);
      if (!reader && at !== undefined) {
        throw new DelegateGitError('LEDGER', `${at} is not a notes commit in this repository.`);
      }
      // No ledger, or a ref naming an object that is gone: tip tells them apart (it throws for the second).
      if (!reader) await this.tip();
      return await use(reader, batch);
    } finally {
      if (!shared) await batch.close();
    }
  }

  /** Lines of the note on one blob at `at` (a notes commit; default: current tip). [] when none. */
  async linesOn(blob: string, at?: string): Promise<string[]> {
    return (await this.linesOnMany([blob], at)).get(blob) ?? [];
  }

  /**
   * Batch form. Up to WALK_LIMIT blobs: each id's fanout path is walked through one cat-file process; more: one
   * `ls-tree -r` lists the tree first. Either way one cat-file process reads the notes. Every requested blob has
   * an entry ([] when it has no note).
   */
  async linesOnMany(blobs: string[], at?: string): Promise<Map<string, string[]>> {
    const all = new Map<string, string[]>();
    await this.notesOnManyInWindows(blobs, at, Number.POSITIVE_INFINITY, (window) => {
      for (const [blob, content] of window) all.set(blob, parseNote(content));
    });
    return all;
  }

  /**
   * The raw content of the note on each blob (empty when none; several objects for one id, as a fanout change can
   * leave, joined by a newline), handed over `size` blobs at a time in request order as git answers, so that a
   * caller can work on the first while git still reads the rest (every note is requested at once; git answers in
   * order). Raw, because a caller that hands notes to threads never needs their lines, and thousands of 2 KB lines
   * held as strings cost the main thread more in garbage collection than reading them.
   */
  async notesOnManyInWindows(
    blobs: string[],
    at: string | undefined,
    size: number,
    onWindow: (window: Map<string, Buffer>) => void | Promise<void>,
  ): Promise<void> {
    blobs.forEach(assertObjectId);
    if (blobs.length === 0) return;
    const unique = [...new Set(blobs)];
    await this.withReader(
      at,
      async (reader) => {
        const reads = await this.noteReads(reader, unique);
        for (let start = 0; start < unique.length; start += size) {
          const ids = unique.slice(start, start + size);
          const contents = await Promise.all(reads.slice(start, start + size));
          await onWindow(new Map(ids.map((blob, i) => [blob, contents[i]!])));
        }
      },
      unique.length <= SHARED_READS,
    );
  }

  /** Lines per id from one notes tree. */
  private async readNotes(
    reader: NotesTreeReader | null,
    unique: readonly string[],
  ): Promise<Map<string, string[]>> {
    const contents = await Promise.all(await this.noteReads(reader, unique));
    return new Map(unique.map((blob, i) => [blob, parseNote(contents[i]!)]));
  }

  /** The reads of each id's note, all requested now: each id's path walked when few, the tree listed once when many. */
  private async noteReads(
    reader: NotesTreeReader | null,
    unique: readonly string[],
  ): Promise<Array<Promise<Buffer>>> {
    if (!reader) return unique.map(() => Promise.resolve(EMPTY));
    let noteOids: string[][];
    if (unique.length <= WALK_LIMIT) {
      const locations = await Promise.all(unique.map((blob) => reader.locate(blob)));
      noteOids = locations.map((location) => location.notes.map((note) => note.oid));
    } else {
      const listing = await listNotes(this.cwd, this.env, reader.rootTree);
      noteOids = unique.map((blob) => listing.get(blob) ?? []);
    }
    const reads = noteOids.map((oids) =>
      oids.length === 0 ? Promise.resolve(EMPTY) : reader.readContent(oids),
    );
    // Awaited window by window; one that fails before its turn must not be reported as unhandled meanwhile.
    for (const read of reads) read.catch(() => {});
    return reads;
  }

  /** Every annotated object id → note blob id, whatever the fanout (the deepest entry if a flat duplicate exists). */
  async list(at?: string): Promise<Map<string, string>> {
    const treeish = await this.resolveTree(at);
    if (!treeish) return new Map();
    const listing = await listNotes(this.cwd, this.env, treeish);
    return new Map([...listing].map(([annotated, oids]) => [annotated, oids[0]!]));
  }

  /** The tree id of `at` (default: the ledger tip), or null when there is no ledger. */
  private async resolveTree(at: string | undefined): Promise<string | null> {
    if (at !== undefined) assertRevision(at, 'notes commit');
    // The tip first: `<ref>^{tree}` would read through a tag the gates call damage.
    const commit = at === undefined ? await this.tip() : await this.commitNamed(at);
    if (commit === null) {
      if (at !== undefined)
        throw new DelegateGitError('LEDGER', `${at} is not a notes commit in this repository.`);
      return null;
    }
    const result = await gitTry(['rev-parse', '--verify', '--quiet', `${commit}^{tree}`], this.options());
    if (result.code === 0) return result.stdout.toString('utf8').trim();
    throw missingNotesTree(commit);
  }

  private async commitNamed(at: string): Promise<string | null> {
    const result = await gitTry(['rev-parse', '--verify', '--quiet', `${at}^{commit}`], this.options());
    return result.code === 0 ? result.stdout.toString('utf8').trim() : null;
  }

  /**
   * Streams every note (annotated id and its lines) without holding the whole ledger: only the listing of ids is
   * kept; note contents are read in windows, the next window requested while the current one is consumed. `foreign`
   * hears of every entry that is no note before the first note is yielded.
   */
  async *entries(
    at?: string,
    foreign?: ForeignEntries,
  ): AsyncIterable<{ annotated: string; lines: string[] }> {
    const listed = await this.noteContents(at, foreign);
    if (listed) yield* notesIn(listed.windows);
  }

  /**
   * Every note's raw content (several objects for one id, as a fanout change can leave, joined by a newline), a
   * window at a time in the listing's order, once `count` has said how many notes there are: for a caller that
   * hands notes on to threads. Null when there is no ledger at `at`. `foreign` hears of every entry that is no note
   * before the first window.
   */
  async noteContents(
    at?: string,
    foreign?: ForeignEntries,
  ): Promise<{
    count: number;
    windows: AsyncIterable<Array<{ annotated: string; content: Buffer }>>;
  } | null> {
    const treeish = await this.resolveTree(at);
    if (!treeish) return null;
    const listing = await listNotes(this.cwd, this.env, treeish, foreign);
    const ids = [...listing.keys()];
    const options = this.options();
    async function* windows() {
      const batch = new CatFileBatch(options);
      const fetchWindow = (start: number) => {
        const window = ids.slice(start, start + ENTRY_WINDOW);
        const reads = Promise.all(
          window.map(async (annotated) => {
            const oids = listing.get(annotated)!;
            const read = await batch.readMany(oids);
            // A note the tree names but the object store lacks is damage, not "no records": a path governed only
            // because the ledger recorded it there would read as ungoverned.
            const missing = read.indexOf(null);
            if (missing !== -1)
              throw new DelegateGitError(
                'LEDGER',
                `the notes tree is damaged: note ${oids[missing]} is missing.`,
              );
            const objects = read as NonNullable<(typeof read)[number]>[];
            const content =
              objects.length === 1
                ? objects[0]!.content
                : Buffer.concat(objects.flatMap((o) => [o.content, NEWLINE]));
            return { annotated, content };
          }),
        );
        reads.catch(() => {}); // awaited below; a consumer that stops early must not leave it unhandled
        return reads;
      };
      try {
        let next = ids.length > 0 ? fetchWindow(0) : null;
        for (let start = 0; next; start += ENTRY_WINDOW) {
          const current = await next;
          next = start + ENTRY_WINDOW < ids.length ? fetchWindow(start + ENTRY_WINDOW) : null;
          yield current;
        }
      } finally {
        await batch.close();
      }
    }
    return { count: ids.length, windows: windows() };
  }

  /**
   * The fast-import an `append` made later may write through (its `writer`), started now so that its start-up
   * overlaps other work. Dismissed by that append if it does not use it; otherwise the caller dismisses it.
   */
  startWriter(): WaitingGit {
    return new WaitingGit(FAST_IMPORT, this.options());
  }

  /**
   * Adds lines to the notes of many blobs in ONE notes commit. Existing lines are kept; each note stays sorted and
   * unique. A no-op (current tip, added 0) when every line is already there. The ref moves by compare-and-swap;
   * on a lost race the commit is rebuilt from the new tip, so a concurrent writer's lines are never dropped.
   */
  async append(
    additions: NoteAddition[],
    opts: { message?: string; writer?: WaitingGit } = {},
  ): Promise<{ commit: string | null; added: number }> {
    const grouped = groupAdditions(additions);
    const shared = this.objects?.();
    const batch = shared ?? new CatFileBatch(this.options());
    try {
      for (let attempt = 1; attempt <= MAX_APPEND_ATTEMPTS; attempt++) {
        // First through the cat-file process that reads the notes anyway (one git process fewer); after a lost
        // race, from a process started after the other writer's update.
        const parent = attempt === 1 ? await tipThrough(batch, this.ref) : await this.tip();
        const reader = parent ? await NotesTreeReader.open(batch, parent) : null;
        const plan = await planAppend(reader, grouped);
        if (plan.added === 0) return { commit: parent, added: 0 };
        const message =
          opts.message ?? `delegate-git: add ${plan.added} record line(s) to ${plan.notes} note(s)`;
        const input = fastImportStream(this.ref, parent, plan, message);
        const commit = await this.writeCommit(input, parent, attempt === 1 ? opts.writer : undefined);
        if (commit !== null) return { commit, added: plan.added };
        await backOff(attempt);
      }
      throw this.keptChanging('add records');
    } finally {
      opts.writer?.dismiss(); // when unused (nothing to add, or it failed to start)
      if (!shared) await batch.close();
    }
  }

  /**
   * Takes every line of the notes commit `other` (a remote's ledger) into this one, and loses none of either: the
   * ledger fast-forwards to `other` only when that drops none of its lines, stays when it holds every line of
   * `other` and `other` is in its history, and otherwise moves to a commit holding its notes with the lines it lacks
   * (a merge of `other` when that is not in its history yet, its parents the tip then `other`). `git notes merge`
   * takes a fast-forward or a three-way merge as it comes, so a remote notes commit that removed a line removed it
   * here too (and a line removed here stayed removed), and it moved the ref without a compare-and-swap. Every move
   * here is compare-and-swap, rebuilt from the new tip after a lost race, as append's.
   */
  async takeIn(
    other: string,
    message: string,
  ): Promise<{ commit: string; how: 'up to date' | 'fast-forward' | 'merge' | 'restore'; added: number }> {
    assertRevision(other, 'notes commit');
    for (let attempt = 1; attempt <= MAX_APPEND_ATTEMPTS; attempt++) {
      const tip = await this.tip();
      if (tip === other) return { commit: tip, how: 'up to date', added: 0 };
      if (
        tip === null ||
        ((await this.isAncestor(tip, other)) && (await this.droppedLines(tip, other)).length === 0)
      ) {
        const args = ['update-ref', this.ref, other, tip ?? ''];
        const moved = await gitTry(args, this.options());
        if (moved.code === 0) return { commit: other, how: 'fast-forward', added: 0 };
        if ((await this.tip()) === tip && !/cannot lock|file exists/i.test(moved.stderr))
          throw new DelegateGitError('LEDGER', gitFailure(args, moved).message);
      } else {
        const inHistory = await this.isAncestor(other, tip);
        const additions = await this.addedLines(tip, other);
        if (inHistory && additions.length === 0) return { commit: tip, how: 'up to date', added: 0 };
        const grouped = groupAdditions(additions.map(({ annotated, lines }) => ({ blob: annotated, lines })));
        const written = await this.withReader(tip, async (reader) => {
          const plan = await planAppend(reader, grouped);
          const input = fastImportStream(this.ref, tip, plan, message, inHistory ? undefined : other);
          return { commit: await this.writeCommit(input, tip), added: plan.added };
        });
        if (written.commit !== null)
          return { commit: written.commit, how: inHistory ? 'restore' : 'merge', added: written.added };
      }
      await backOff(attempt);
    }
    throw this.keptChanging(`take in ${other.slice(0, 12)}`);
  }

  private async isAncestor(older: string, newer: string): Promise<boolean> {
    const args = ['merge-base', '--is-ancestor', older, newer];
    const result = await gitTry(args, this.options());
    if (result.code > 1) throw new DelegateGitError('LEDGER', gitFailure(args, result).message);
    return result.code === 0;
  }

  /**
   * Runs one fast-import stream that commits onto `parent` and moves the ref: the new commit, or null when another
   * writer moved the ledger first (the caller rebuilds on its tip).
   */
  private async writeCommit(
    input: Buffer,
    parent: string | null,
    writer?: WaitingGit,
  ): Promise<string | null> {
    const written = await (writer?.run(input) ?? gitTry(FAST_IMPORT, { ...this.options(), input }));
    if (written.code === 0) return written.stdout.toString('utf8').trim();
    // The commit is written either way; only moving the ref can lose a race: the ledger moved since `parent`
    // ("Not updating ... does not contain"), or its lock file was held by another writer at that instant.
    const lostRace =
      (await this.tip()) !== parent || /not updating|file exists|cannot lock/i.test(written.stderr);
    if (lostRace) return null;
    throw new DelegateGitError(
      'LEDGER',
      `the notes commit could not be written to ${this.ref}: ${gitFailure(FAST_IMPORT, written).message}`,
    );
  }

  private keptChanging(what: string): DelegateGitError {
    return new DelegateGitError(
      'LEDGER',
      `${this.ref} kept changing under ${MAX_APPEND_ATTEMPTS} attempts to ${what} (other writers are busy). Run the command again.`,
    );
  }

  /** Notes commits newest first (rev-list of the ref), with parents. */
  async *history(): AsyncIterable<{ commit: string; parents: string[] }> {
    const tip = await this.tip();
    if (!tip) return;
    for await (const line of gitRecords(['rev-list', '--parents', tip], this.options())) {
      if (line === '') continue;
      const [commit, ...parents] = line.split(' ');
      yield { commit: commit!, parents };
    }
  }

  /**
   * droppedLines of every notes commit of the ledger against each of its parents (the append-only check over the
   * whole history), with one `git diff-tree` and one object reader for all of them: the ledger grows by a notes
   * commit a record, and a git process for each was most of that check's time.
   */
  async droppedLinesAlongHistory(): Promise<Array<{ commit: string; annotated: string; line: string }>> {
    if ((await this.tip()) === null) return [];
    // The pairs written to git and not yet answered: a few pipe buffers' worth, however long the history.
    const pending: Array<{ commit: string; parent: string }> = [];
    const history = this.history();
    const input = (async function* () {
      for await (const { commit, parents } of history)
        for (const parent of parents) {
          pending.push({ commit, parent });
          yield `${commit} ${parent}\n`;
        }
    })();
    // "<commit> <parent>" is a commit against that parent (not two trees: the other order would diff backwards).
    // --always prints every pair's header, even with nothing changed, so the output lines up with the input. Read as
    // it comes, a pair at a time, so memory stays flat however long the history.
    const records = gitRecords(
      ['diff-tree', '--stdin', '--always', '-r', '-z', '--no-renames'],
      { ...this.options(), input },
      '\0',
    );
    const dropped: Array<{ commit: string; annotated: string; line: string }> = [];
    const batch = new CatFileBatch(this.options());
    let at: { commit: string; parent: string } | undefined;
    let touched = new Set<string>();
    const compare = async () => {
      if (!at || touched.size === 0) return;
      const ids = [...touched].sort();
      const [olderTree, newerTree] = await Promise.all([
        NotesTreeReader.open(batch, at.parent),
        NotesTreeReader.open(batch, at.commit),
      ]);
      const [before, after] = await Promise.all([
        this.readNotes(olderTree, ids),
        this.readNotes(newerTree, ids),
      ]);
      for (const annotated of ids) {
        const kept = new Set(after.get(annotated));
        for (const line of before.get(annotated) ?? [])
          if (!kept.has(line)) dropped.push({ commit: at.commit, annotated, line });
      }
    };
    try {
      let status: string | null = null;
      for await (const token of records) {
        if (status !== null) {
          // A path only added cannot lose a line; a note modified, deleted or moved by fanout is compared in full.
          const annotated = annotatedIdOfPath(token);
          if (annotated && status !== 'A') touched.add(annotated);
          status = null;
        } else if (token.startsWith(':')) status = token.split(' ')[4] ?? '';
        else if (token.trim() !== '') {
          await compare(); // a pair's header: the one before it is complete
          at = pending.shift();
          touched = new Set();
        }
      }
      await compare();
    } finally {
      await batch.close();
    }
    return dropped;
  }

  /**
   * Lines present at `older` but missing at `newer` (the append-only check). Only the notes `git diff-tree -r`
   * reports as changed are read, so the cost follows what changed; a note moved by fanout counts as unchanged
   * when its lines are all still there.
   */
  async droppedLines(older: string, newer: string): Promise<Array<{ annotated: string; line: string }>> {
    // A path only added cannot lose a line; an id whose note was modified, deleted or moved (deleted here, added
    // elsewhere) is compared in full.
    const { ids, before, after } = await this.changedNotes(older, newer, (status) => status !== 'A');
    return ids.flatMap((annotated) => {
      const kept = new Set(after.get(annotated));
      return (before.get(annotated) ?? [])
        .filter((line) => !kept.has(line))
        .map((line) => ({ annotated, line }));
    });
  }

  /** Lines present at `newer` but not at `older`, per annotated object (what a push or a new tip adds). */
  async addedLines(
    older: string | null,
    newer: string,
  ): Promise<Array<{ annotated: string; lines: string[] }>> {
    if (older === null) {
      const all: Array<{ annotated: string; lines: string[] }> = [];
      for await (const entry of this.entries(newer)) all.push(entry);
      return all;
    }
    const { ids, before, after } = await this.changedNotes(older, newer, (status) => status !== 'D');
    return ids
      .map((annotated) => {
        const had = new Set(before.get(annotated));
        return { annotated, lines: (after.get(annotated) ?? []).filter((line) => !had.has(line)) };
      })
      .filter((n) => n.lines.length > 0);
  }

  /** The notes `git diff-tree -r` reports between two notes commits (statuses chosen by `include`), read at both. */
  private async changedNotes(older: string, newer: string, include: (status: string) => boolean) {
    assertRevision(older, 'notes commit');
    assertRevision(newer, 'notes commit');
    const touched = new Set<string>();
    let status: string | null = null;
    for await (const field of gitRecords(
      ['diff-tree', '-r', '-z', '--no-renames', older, newer],
      this.options(),
      '\0',
    )) {
      // -z output alternates ":<modes> <ids> <status>" and the path.
      if (status === null) {
        status = field.startsWith(':') ? (field.split(' ')[4] ?? '') : null;
        continue;
      }
      const annotated = annotatedIdOfPath(field);
      if (annotated && include(status)) touched.add(annotated);
      status = null;
    }
    const ids = [...touched].sort();
    if (ids.length === 0)
      return { ids, before: new Map<string, string[]>(), after: new Map<string, string[]>() };
    const batch = new CatFileBatch(this.options());
    try {
      const [olderTree, newerTree] = await Promise.all([
        NotesTreeReader.open(batch, older),
        NotesTreeReader.open(batch, newer),
      ]);
      const [before, after] = await Promise.all([
        this.readNotes(olderTree, ids),
        this.readNotes(newerTree, ids),
      ]);
      return { ids, before, after };
    } finally {
      await batch.close();
    }
  }
}
