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
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DelegateGitError } from './errors.js';
import { CatFileBatch, gitFailure, gitRecords, gitTry, refObject, WaitingGit } from './git.js';
import {
  annotatedIdOfPath,
  assertObjectId,
  assertRevision,
  ForeignEntries,
  type ForeignEntry,
  groupAdditions,
  isObjectId,
  LISTED_TREE_MODE,
  type NoteAddition,
  parseNote,
} from './notes-format.js';
import { damagedLedger, listNotes, missingNotesTree, NotesTree, readNoteContent } from './notes-tree.js';
import { FAST_IMPORT, fastImportStream, planAppend } from './notes-write-plan.js';
import { PartialClone } from './partial-clone.js';

export const LEDGER_REF = 'refs/notes/delegations';

/** A line a notes commit drops against one of its parents. */
export interface DroppedAlong {
  commit: string;
  annotated: string;
  line: string;
}

/** What NotesLedger.walkUpdate found along the notes commits a ledger update brings. */
export interface UpdateWalk {
  /** The entries that are no notes, in the order first found ([] when not asked). */
  foreign: ForeignEntry[];
  /**
   * The lines each brought commit drops against each of its parents, or null when they were not asked or left
   * unanswered; throws what reading the notes compared failed with.
   */
  dropped(): DroppedAlong[] | null;
}

/** Foreign entries a walk looks for before it stops collecting them: one more than a refusal names. */
const FOREIGN_ENOUGH = 11;

/** linesOnMany up to this many blobs walks the tree per blob; more lists the whole tree once. */
const WALK_LIMIT = 256;
/** Up to this many notes are read through the owner's object reader, not a git of their own (withReader). */
const SHARED_READS = 16;
const EMPTY = Buffer.alloc(0);
/** Notes read per cat-file window while streaming entries(). */
const ENTRY_WINDOW = 512;
const MAX_APPEND_ATTEMPTS = 40;
/**
 * A writer holds the ref's lock for milliseconds: one older than this was left by a git that stopped (a crash, a
 * kill), and waiting for it only spun for 15 s before saying "other writers are busy" (rt46 f02).
 */
const STALE_LOCK_MS = 10_000;

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
  const named = await batch.readRef(ref);
  if (named && named.type !== 'commit') throw damagedLedger(ref, named.type, named.oid);
  return named?.oid ?? null;
}

export class NotesLedger {
  readonly cwd: string;
  readonly ref: string;
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly objects: (() => CatFileBatch) | undefined;
  /** The repository's common git dir, where the ref's file and its lock are (files backend). */
  private readonly commonDir: string | undefined;
  private partialClone: Promise<PartialClone | null> | undefined;
  private readonly say: ((line: string) => void) | undefined;

  /**
   * `objects`: an object reader its owner keeps open (the repository's), which an append reads the ledger through
   * instead of starting a reader of its own; a tip it reads late only costs a lost race, never a line.
   * `say`: where a line for the person waiting goes (a fetch in a partial clone); none, nothing is said.
   */
  constructor(opts: {
    cwd: string;
    ref?: string;
    env?: NodeJS.ProcessEnv;
    objects?: () => CatFileBatch;
    commonDir?: string;
    say?: (line: string) => void;
  }) {
    this.cwd = opts.cwd;
    const ref = opts.ref ?? LEDGER_REF;
    this.ref = ref.startsWith('refs/') ? ref : `refs/notes/${ref}`;
    assertRevision(this.ref, 'notes ref');
    this.env = opts.env;
    this.objects = opts.objects;
    this.commonDir = opts.commonDir;
    this.say = opts.say;
  }

  /**
   * Throws when the ledger cannot be written for a reason no retry mends: a lock file a stopped git left, or a ref
   * file git cannot read. `delegate` asks before it writes anything, so its verdict is never signed for a ledger it
   * cannot reach. Costs no git process when the ref's file is sound.
   */
  async assertWritable(): Promise<void> {
    this.refuseStaleLock();
    if (this.commonDir === undefined) return;
    let text: string;
    try {
      text = readFileSync(path.join(this.commonDir, this.ref), 'utf8').trim();
    } catch {
      return; // no loose file: packed, or no ledger yet
    }
    if (!isObjectId(text)) await this.tip(); // says what git cannot read
  }

  private refuseStaleLock(): void {
    if (this.commonDir === undefined) return;
    const lock = path.join(this.commonDir, `${this.ref}.lock`);
    let age: number;
    try {
      age = Date.now() - statSync(lock).mtimeMs;
    } catch {
      return;
    }
    if (age < STALE_LOCK_MS) return;
    throw new DelegateGitError(
      'LEDGER',
      `${this.ref} cannot be written: its lock file ${lock} is ${Math.round(age / 1000)} s old, left by a git process that stopped (a crash or a kill). If no git or delegate-git is running in this repository, remove that file and run the command again.`,
    );
  }

  private options() {
    return { cwd: this.cwd, env: this.env };
  }

  /**
   * Before a bulk read at `at` (a notes commit or ref; its history too): in a partial clone, the ledger's objects
   * that are not here are fetched in one batch, instead of one silent `git fetch` per note as git reads them
   * (partial-clone.ts). Elsewhere it costs one read of the config file per ledger. Reads of a few notes skip it:
   * git fetching those one by one costs little, and a command that writes one record works offline as it did.
   */
  async fetchMissing(at: string = this.ref): Promise<void> {
    if (this.commonDir === undefined) return;
    const commonDir = this.commonDir;
    this.partialClone ??= PartialClone.of({ cwd: this.cwd, env: this.env, commonDir, say: this.say });
    await (await this.partialClone)?.fetchMissing(at);
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
  protected async withReader<T>(
    at: string | undefined,
    use: (reader: NotesTree | null, batch: CatFileBatch) => Promise<T>,
    few = false,
  ): Promise<T> {
    if (at !== undefined) assertRevision(at, 'notes commit');
    const shared = few && this.objects !== undefined;
    const batch = shared ? this.objects!() : new CatFileBatch(this.options());
    try {
      const reader = await NotesTree.find(batch, at ?? this.ref);
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
    if (unique.length > SHARED_READS) await this.fetchMissing(at);
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
    reader: NotesTree | null,
    unique: readonly string[],
    listing?: Promise<Map<string, string[]>>,
  ): Promise<Map<string, string[]>> {
    const contents = await Promise.all(await this.noteReads(reader, unique, listing));
    return new Map(unique.map((blob, i) => [blob, parseNote(contents[i]!)]));
  }

  /**
   * The reads of each id's note, all requested now: each id's path walked when few, the tree listed once when many
   * (or `listing`, the tree's listing a caller reading many windows of ids made once).
   */
  private async noteReads(
    reader: NotesTree | null,
    unique: readonly string[],
    listing?: Promise<Map<string, string[]>>,
  ): Promise<Array<Promise<Buffer>>> {
    if (!reader) return unique.map(() => Promise.resolve(EMPTY));
    let noteOids: string[][];
    if (listing === undefined && unique.length <= WALK_LIMIT) {
      const locations = await Promise.all(unique.map((blob) => reader.locate(blob)));
      noteOids = locations.map((location) => location.notes.map((note) => note.oid));
    } else {
      const listed = await (listing ?? this.listing(reader));
      noteOids = unique.map((blob) => listed.get(blob) ?? []);
    }
    const reads = noteOids.map((oids) =>
      oids.length === 0 ? Promise.resolve(EMPTY) : reader.readContent(oids),
    );
    // Awaited window by window; one that fails before its turn must not be reported as unhandled meanwhile.
    for (const read of reads) read.catch(() => {});
    return reads;
  }

  private listing(reader: NotesTree): Promise<Map<string, string[]>> {
    return listNotes(this.cwd, this.env, reader.rootTree);
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
    await this.fetchMissing(at);
    const listing = await listNotes(this.cwd, this.env, treeish, foreign);
    const ids = [...listing.keys()];
    const options = this.options();
    async function* windows() {
      const batch = new CatFileBatch(options);
      const fetchWindow = (start: number) => {
        const window = ids.slice(start, start + ENTRY_WINDOW);
        const reads = Promise.all(
          window.map(async (annotated) => ({
            annotated,
            content: await readNoteContent(batch, listing.get(annotated)!),
          })),
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
        const reader = parent ? await NotesTree.find(batch, parent) : null;
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
        // A lock a stopped git left is no other writer: no attempt could move the ref (rt48 f06).
        this.refuseStaleLock();
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
    this.refuseStaleLock();
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

  /** Notes commits newest first (rev-list of `newer`, or of the ref, not reaching `older`), with parents. */
  async *history(
    newer?: string,
    older: string | null = null,
  ): AsyncIterable<{ commit: string; parents: string[] }> {
    const tip = newer ?? (await this.tip());
    if (!tip) return;
    const range = ['rev-list', '--parents', tip, ...(older ? ['--not', older] : [])];
    for await (const line of gitRecords(range, this.options())) {
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
    const tip = await this.tip();
    return tip === null ? [] : this.notHeldAt(await this.droppedLinesAlong(tip, null), [tip]);
  }

  /**
   * The lines of `dropped` that none of `tips` holds. A line some commit dropped and a later one put back lost no
   * record (sync gives back a line a remote or a clone removed); one that no tip holds was lost, or never reached a
   * tip at all: a side commit's line a merge drops was checked by nobody, yet stays in the history for good (rt44 f01).
   */
  async notHeldAt<T extends { annotated: string; line: string }>(
    dropped: T[],
    tips: readonly string[],
  ): Promise<T[]> {
    if (dropped.length === 0) return dropped;
    const ids = [...new Set(dropped.map((d) => d.annotated))].sort();
    const held = new Set<string>();
    const batch = new CatFileBatch(this.options());
    try {
      for (const tip of tips)
        for (const [annotated, lines] of await this.readNotes(await NotesTree.find(batch, tip), ids))
          for (const line of lines) held.add(`${annotated}\0${line}`);
    } finally {
      await batch.close();
    }
    return dropped.filter((d) => !held.has(`${d.annotated}\0${d.line}`));
  }

  /** droppedLines of every notes commit behind `newer` that `older` does not hold, against each of its parents. */
  async droppedLinesAlong(newer: string, older: string | null): Promise<DroppedAlong[]> {
    return (await this.walkUpdate(newer, older, { dropped: true })).dropped() ?? [];
  }

  /**
   * One walk over the notes commits behind `newer` that `older` does not hold (every commit a ledger update brings):
   * one `rev-list --parents` and one `diff-tree --stdin`, read a pair at a time as git answers, so memory stays flat
   * however long the history. It answers what it is asked:
   *  - `foreign`: the entries that are no notes, each brought commit against its first parent (a root against the
   *    empty tree), not only at the tip: a notes commit may have any commit as a parent, and anyone can check out
   *    `refs/notes/delegations~1`. The server and `sync` ask the same question, so a ledger the one takes the other
   *    takes too. Once `enough` are found (counted at the end of a commit's listing) no more are collected: a ledger
   *    update with a branch's whole history behind it is refused without reading all of that.
   *  - `dropped`: droppedLines of each brought commit against each of its parents. These are read to the end however many foreign entries were found, unless `foreignFirst` (the caller
   *    refuses any foreign entry before it looks at dropped lines): the walk then ends once `enough` are found, and
   *    the dropped lines are left unanswered.
   * A failure to read the notes compared is thrown by dropped(), and cuts no foreign entry
   * short; a failure of the walk itself is thrown here.
   */
  async walkUpdate(
    newer: string,
    older: string | null,
    opts: {
      foreign?: boolean;
      enough?: number;
      dropped?: boolean;
      foreignFirst?: boolean;
    },
  ): Promise<UpdateWalk> {
    const wantForeign = opts.foreign === true;
    const enough = opts.enough ?? FOREIGN_ENOUGH;
    const mayDrop = opts.dropped === true;
    const foreign = new Map<string, ForeignEntry>();
    const dropped: DroppedAlong[] = [];
    const failures: unknown[] = [];
    let answered = mayDrop;
    const result = (): UpdateWalk => ({
      foreign: [...foreign.values()],
      dropped: () => {
        if (failures.length > 0) throw failures[0];
        return answered ? dropped : null;
      },
    });
    if (!wantForeign && !mayDrop) return result();
    let fetched: Promise<void> | null = null;
    // The notes of every commit compared are in `newer`'s history: fetched in one batch before the first is read.
    const prepare = () => (fetched ??= this.fetchMissing(newer));
    if (!wantForeign) await prepare(); // the dropped lines alone: fetched before the walk, as they always were

    // The pairs written to git and not yet answered: a few pipe buffers' worth, however long the history. `first`: a
    // commit against its first parent, or a root (parent null) against the empty tree: what foreign entries count.
    type Pair = { commit: string; parent: string | null; first: boolean };
    const pending: Pair[] = [];
    const history = this.history(newer, older);
    const input = (async function* () {
      for await (const { commit, parents } of history) {
        if (parents.length === 0 && wantForeign) {
          pending.push({ commit, parent: null, first: true });
          yield `${commit}\n`;
        }
        for (const [i, parent] of (mayDrop ? parents : parents.slice(0, 1)).entries()) {
          pending.push({ commit, parent, first: i === 0 });
          yield `${commit} ${parent}\n`;
        }
      }
    })();
    // "<commit> <parent>" is a commit against that parent (not two trees: the other order would diff backwards); a
    // lone root, with --root, against the empty tree. --always prints every pair's header, even with nothing changed,
    // so the output lines up with the input. -t names the directories too, for the foreign entries: an empty one shows
    // only so, and a foreign one is named once rather than by each file in it.
    const records = gitRecords(
      [
        'diff-tree',
        '--stdin',
        '--always',
        ...(wantForeign ? ['--root', '-t'] : []),
        '-r',
        '-z',
        '--no-renames',
      ],
      { ...this.options(), input },
      '\0',
    );
    const batch = new CatFileBatch(this.options());
    let at: Pair | undefined;
    let entries: ForeignEntries | null = null;
    let touched = new Set<string>();
    let foreignDone = !wantForeign;
    const compare = async (commit: string, parent: string, ids: string[]) => {
      const [olderTree, newerTree] = await Promise.all([
        NotesTree.find(batch, parent),
        NotesTree.find(batch, commit),
      ]);
      const [before, after] = await Promise.all([
        this.readNotes(olderTree, ids),
        this.readNotes(newerTree, ids),
      ]);
      for (const annotated of ids) {
        const kept = new Set(after.get(annotated));
        for (const line of before.get(annotated) ?? [])
          if (!kept.has(line)) dropped.push({ commit, annotated, line });
      }
    };
    // The pair `at` is listed whole.
    const finish = async () => {
      const pair = at;
      at = undefined;
      for (const entry of entries?.found ?? []) foreign.set(entry.path, entry);
      if (!pair || pair.parent === null || touched.size === 0 || failures.length > 0) return;
      if (!mayDrop) return;
      try {
        await prepare();
        await compare(pair.commit, pair.parent, [...touched].sort());
      } catch (error) {
        failures.push(error);
      }
    };
    try {
      let meta: string[] | null = null;
      for await (const token of records) {
        if (meta !== null) {
          const [oldMode = '', newMode = '', , , status = ''] = meta;
          if (entries && status !== 'D') entries.see(newMode, token);
          // A path only added cannot lose a line; a note modified, deleted or moved by fanout is compared in full.
          // A directory (listed for the foreign entries) is no note.
          if (status !== 'A' && oldMode !== `:${LISTED_TREE_MODE}` && newMode !== LISTED_TREE_MODE) {
            const annotated = annotatedIdOfPath(token);
            if (annotated) touched.add(annotated);
          }
          meta = null;
        } else if (token.startsWith(':')) meta = token.split(' ');
        else if (token.trim() !== '') {
          await finish(); // a pair's header: the one before it is complete
          if (foreign.size >= enough) foreignDone = true;
          // Nothing more to answer: every foreign entry wanted is found, and the dropped lines are not asked, failed,
          // or need not be answered.
          const unanswered = opts.foreignFirst && wantForeign;
          if (foreignDone && (failures.length > 0 || unanswered || !mayDrop)) {
            if (unanswered) answered = false;
            break;
          }
          at = pending.shift();
          entries = !foreignDone && at?.first ? new ForeignEntries() : null;
          touched = new Set();
        }
      }
      await finish();
    } finally {
      await batch.close();
    }
    return result();
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
    const all: Array<{ annotated: string; lines: string[] }> = [];
    for await (const window of this.addedLineWindows(older, newer)) for (const note of window) all.push(note);
    return all;
  }

  /**
   * addedLines a window of notes at a time, in annotated-id order, the next window read while the caller handles
   * this one: memory follows the window, not all that was added (a first sync of a large ledger).
   */
  async *addedLineWindows(
    older: string | null,
    newer: string,
  ): AsyncIterable<Array<{ annotated: string; lines: string[] }>> {
    const withLines = (notes: Array<{ annotated: string; lines: string[] }>) =>
      notes.filter((note) => note.lines.length > 0);
    if (older === null) {
      assertRevision(newer, 'notes commit');
      const listed = await this.noteContents(newer);
      if (!listed) return;
      for await (const window of listed.windows)
        yield withLines(window.map(({ annotated, content }) => ({ annotated, lines: parseNote(content) })));
      return;
    }
    const ids = await this.touchedNotes(older, newer, (status) => status !== 'D');
    if (ids.length === 0) return;
    await this.fetchMissingAt(older, newer, ids.length);
    const batch = new CatFileBatch(this.options());
    try {
      const trees = await Promise.all([NotesTree.find(batch, older), NotesTree.find(batch, newer)]);
      // Each tree listed once for all windows, when there are more ids than walking their paths is worth.
      const listings = trees.map((tree) =>
        tree && ids.length > WALK_LIMIT ? this.listing(tree) : undefined,
      );
      for (const listing of listings) listing?.catch(() => {}); // awaited by the first window
      const readWindow = async (start: number) => {
        const window = ids.slice(start, start + ENTRY_WINDOW);
        const [before, after] = await Promise.all(
          trees.map((tree, i) => this.readNotes(tree, window, listings[i])),
        );
        return withLines(
          window.map((annotated) => {
            const had = new Set(before!.get(annotated));
            return { annotated, lines: (after!.get(annotated) ?? []).filter((line) => !had.has(line)) };
          }),
        );
      };
      let next: Promise<Array<{ annotated: string; lines: string[] }>> | null = readWindow(0);
      for (let start = 0; next; start += ENTRY_WINDOW) {
        const current: Array<{ annotated: string; lines: string[] }> = await next;
        next = start + ENTRY_WINDOW < ids.length ? readWindow(start + ENTRY_WINDOW) : null;
        next?.catch(() => {}); // awaited next round; a consumer that stops early must not leave it unhandled
        yield current;
      }
    } finally {
      await batch.close();
    }
  }

  /** The notes `git diff-tree -r` reports between two notes commits (statuses chosen by `include`), read at both. */
  private async changedNotes(older: string, newer: string, include: (status: string) => boolean) {
    const ids = await this.touchedNotes(older, newer, include);
    if (ids.length === 0)
      return { ids, before: new Map<string, string[]>(), after: new Map<string, string[]>() };
    await this.fetchMissingAt(older, newer, ids.length);
    const batch = new CatFileBatch(this.options());
    try {
      const [olderTree, newerTree] = await Promise.all([
        NotesTree.find(batch, older),
        NotesTree.find(batch, newer),
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

  /** fetchMissing at both sides of a comparison that reads more than a few notes (`older` may not be behind `newer`). */
  private async fetchMissingAt(older: string, newer: string, notes: number): Promise<void> {
    if (notes <= SHARED_READS) return;
    await this.fetchMissing(newer); // one after the other: `older` is mostly behind `newer`, then nothing is left
    await this.fetchMissing(older);
  }

  /** The annotated ids of the notes `git diff-tree -r` reports between two notes commits (statuses by `include`). */
  private async touchedNotes(
    older: string,
    newer: string,
    include: (status: string) => boolean,
  ): Promise<string[]> {
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
    return [...touched].sort();
  }
}
