/**
 * `verify`'s one pass over the ledger: every note listed once, read through one `git cat-file --batch` stream,
 * and its lines checked on worker threads in large batches of raw bytes, while the main thread goes on reading.
 * Notes whose facts the previous run remembered (verified-cache.ts) are neither read nor checked again. Each note's
 * facts are handed on in the order of annotated ids, so what is built from them does not depend on which thread
 * finished first. Memory follows the batches in flight, not the ledger.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { DelegateGitError } from './errors.js';
import { CatFileBatch, type GitObject, gitRecords } from './git.js';
import type { Governance } from './governance.js';
import type { LineFacts } from './line-check.js';
import {
  type BatchCandidate,
  type CheckedBatch,
  checkNoteBatch,
  type IndexedBatch,
  type NoteBatch,
  NoteBatchBuilder,
} from './note-batch.js';
import { type ForeignEntries, noteOfTreeRecord, parseNote } from './notes-format.js';
import { missingNote, missingNotesTree } from './notes-tree.js';
import type { Promotion } from './promotion.js';
import type { Repository } from './repository.js';
import {
  type CachedPromotion,
  noteKey,
  rememberedPromotion,
  VerifiedCacheReader,
  VerifiedCacheWriter,
} from './verified-cache.js';
import type { VerifyWorkerData } from './verify-worker.js';

export interface PassedNote {
  annotated: string;
  facts: LineFacts[];
  /**
   * For a note with candidates (PassOptions.candidates): per candidate its promotion, or null when the caller
   * must judge it (refused, or the facts were remembered and its records not decoded this run).
   */
  promotions: Array<Promotion | null> | null;
  /** Its lines, when asked for or some candidate is left to the caller. */
  lines: string[] | null;
}

export interface PassOptions {
  /** Per blob, the revision's files of that content to weigh its records for, once they are decoded anyway. */
  candidates?: Promise<ReadonlyMap<string, BatchCandidate[]>>;
  /** Notes whose lines the caller needs besides their facts. */
  wantLines?: (annotated: string) => boolean;
  /** Remember the facts for the next run, and reuse the last run's (default true). */
  cache?: boolean;
  /** Told of every entry of the ledger's tree that is no note, from the same listing. */
  foreign?: ForeignEntries;
}

export interface PassStats {
  notes: number;
  /** Notes whose facts came from the previous run. */
  reused: number;
}

/** Bytes of notes per batch handed to a thread (about 500 record lines); less than one batch is checked in-process. */
const BATCH_BYTES = 1 << 20;
/** Notes read per cat-file window; the next window is asked for while the current one is handled. */
const READ_WINDOW = 512;
/** Notes to check in the first window that are worth starting the threads for before the first batch is full. */
const EARLY_START = 64;

interface Batch {
  result: Promise<CheckedBatch>;
  /** Set once the thread has answered. */
  checked: CheckedBatch | null;
}

interface Slot {
  annotated: string;
  key: string;
  candidates: BatchCandidate[] | null;
  /** The previous run's entry, when it answered for this note (kept as is in the next file). */
  remembered: { raw: string; facts: LineFacts[]; promoted: CachedPromotion[] } | null;
  /** Set when the facts are known without a thread (remembered); else they come from `batch`. */
  note: PassedNote | null;
  batch: Batch | null;
  /** Position of the note in its batch. */
  index: number;
}

interface PlannedNote {
  annotated: string;
  key: string;
  cached: Awaited<ReturnType<VerifiedCacheReader['find']>>;
  candidates: BatchCandidate[] | null;
  promotions: Array<Promotion | null> | null;
  needsLines: boolean;
  /** The note's blob(s), and their reads when asked for. */
  oids: string[];
  content: Promise<Array<GitObject | null>> | null;
}

/** Streams every note of the ledger at `tip` to `onNote`, with its facts, in annotated-id order. */
export async function passOverLedger(
  repo: Repository,
  governance: Governance,
  tip: string,
  onNote: (note: PassedNote) => void,
  opts: PassOptions = {},
): Promise<PassStats> {
  const { trustRoot, policy } = governance;
  const cacheDir = (opts.cache ?? true) ? repo.cacheDir : null;
  await repo.ledger.fetchMissing(tip); // read below through readers of its own
  const pass = new LedgerPass(governance, onNote, opts.wantLines ?? (() => false), {
    listing: notesOf(repo, tip, opts.foreign)[Symbol.asyncIterator](),
    candidates: (await opts.candidates) ?? new Map<string, BatchCandidate[]>(),
    remembered: VerifiedCacheReader.open(cacheDir, trustRoot, policy.repositoryId),
    writer: await VerifiedCacheWriter.create(cacheDir, trustRoot, policy.repositoryId),
    reader: new CatFileBatch({ cwd: repo.cwd, env: repo.env }),
  });
  try {
    await pass.run();
  } finally {
    await pass.close();
  }
  return pass.stats;
}

/** What one pass reads from and writes to. */
interface PassSources {
  listing: AsyncIterator<[string, string[]]>;
  candidates: ReadonlyMap<string, BatchCandidate[]>;
  remembered: VerifiedCacheReader;
  writer: VerifiedCacheWriter | null;
  reader: CatFileBatch;
}

/**
 * One pass: windows of notes are planned (their reads asked for) one ahead; each note is either remembered or added
 * to the batch being built; full batches go to the threads; the notes at the front whose facts are known are handed
 * on in order.
 */
class LedgerPass {
  readonly stats: PassStats = { notes: 0, reused: 0 };
  private readonly builder = new NoteBatchBuilder();
  /** Notes not handed on yet, in listing order. */
  private readonly slots: Slot[] = [];
  /** The slots of the batch being built. */
  private building: Slot[] = [];
  /** undefined: not started yet; null: no worker script here, so batches are checked in-process. */
  private pool: NotePool | null | undefined;
  private inFlight = 0;
  private seq = 0;

  constructor(
    private readonly governance: Governance,
    private readonly onNote: (note: PassedNote) => void,
    private readonly wantLines: (annotated: string) => boolean,
    private readonly sources: PassSources,
  ) {}

  async run(): Promise<void> {
    const { writer, remembered } = this.sources;
    try {
      let next: Promise<PlannedNote[]> | null = this.planWindow();
      while (next) {
        const window: PlannedNote[] = await next;
        next = window.length === READ_WINDOW ? this.planWindow() : null;
        // Threads start while the first notes are read, once there are enough to check (not on a warm run).
        if (this.pool === undefined && window.filter((n) => n.cached === null).length >= EARLY_START)
          this.pool = NotePool.start(this.governance);
        for (const planned of window) await this.take(planned);
        this.checkStragglers();
        await this.drain(false);
      }
      // Less than one batch in all is checked in-process: starting threads would cost more.
      this.dispatch(false);
      while (this.slots.length > 0) await this.drain(true);
      await writer?.finish(this.stats.reused < this.stats.notes || remembered.skipped > 0);
    } catch (error) {
      await writer?.finish(false);
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.sources.listing.return?.(undefined);
    await this.sources.remembered.close();
    await this.sources.reader.close();
    await this.pool?.close();
  }

  /** The next READ_WINDOW notes of the listing (fewer at its end), their reads asked for. */
  private async planWindow(): Promise<PlannedNote[]> {
    const { listing, remembered, candidates: candidatesOf, reader } = this.sources;
    const window: PlannedNote[] = [];
    while (window.length < READ_WINDOW) {
      const listed = await listing.next();
      if (listed.done) break;
      const [annotated, oids] = listed.value;
      this.stats.notes++;
      const key = noteKey(oids);
      const cached = await remembered.find(annotated, key);
      const candidates = candidatesOf.get(annotated) ?? null;
      const want = this.wantLines(annotated);
      // Remembered promotions spare reading the note; a candidate without one is judged by the caller.
      const promotions =
        cached && candidates
          ? candidates.map((c) => rememberedPromotion(cached, c.candidate, c.rules))
          : null;
      const needsLines = want || (promotions?.includes(null) ?? false);
      const content = cached === null || needsLines ? reader.readMany(oids) : null;
      content?.catch(() => {}); // awaited in take; a failed run must not leave it unhandled
      window.push({ annotated, key, cached, candidates, promotions, needsLines, oids, content });
    }
    return window;
  }

  /** One planned note: its facts remembered, or its bytes added to the batch being built (sent once full). */
  private async take(planned: PlannedNote): Promise<void> {
    const { annotated, key, cached, candidates, promotions, needsLines, oids, content } = planned;
    const objects = content ? await content : [];
    const slot: Slot = { annotated, key, candidates, remembered: cached, note: null, batch: null, index: 0 };
    if (cached !== null) {
      this.stats.reused++;
      const lines = needsLines ? parseNote(joined(oids, objects)) : null;
      slot.note = { annotated, facts: cached.facts, promotions, lines };
    } else {
      this.builder.add(annotated, joined(oids, objects), candidates, this.wantLines(annotated));
      this.building.push(slot);
    }
    this.slots.push(slot);
    if (this.builder.bytes >= BATCH_BYTES) {
      this.dispatch(true);
      // Bounded read-ahead: once every thread has two batches, wait for the oldest.
      await this.drain(this.inFlight >= (this.pool?.size ?? 1) * 2);
    }
  }

  /** A few notes to check among many remembered ones: check them now rather than hold the rest back. */
  private checkStragglers(): void {
    const front = this.slots[0];
    if (front && front.note === null && front.batch === null && this.slots.length >= 2 * READ_WINDOW)
      this.dispatch(false);
  }

  /** Sends the batch being built to a thread (or checks it here, when there are none and `startThreads` is false). */
  private dispatch(startThreads: boolean): void {
    if (this.builder.count === 0) return;
    if (this.pool === undefined && startThreads) this.pool = NotePool.start(this.governance);
    const { trustRoot, policy } = this.governance;
    const batchOf = this.builder.take(this.seq++);
    const batch: Batch = {
      result: this.pool
        ? this.pool.check(batchOf)
        : Promise.resolve(checkNoteBatch(batchOf, trustRoot, policy.repositoryId)),
      checked: null,
    };
    this.inFlight++;
    batch.result.then(
      (checked) => {
        batch.checked = checked;
        this.inFlight--;
      },
      () => this.inFlight--,
    );
    this.building.forEach((slot, index) => {
      slot.batch = batch;
      slot.index = index;
    });
    this.building = [];
  }

  /** Hands on the slots at the front whose facts are known; with `wait`, first waits for the oldest batch. */
  private async drain(wait: boolean): Promise<void> {
    while (this.slots.length > 0) {
      const slot = this.slots[0]!;
      if (slot.note === null) {
        if (slot.batch === null) return; // still being built
        if (slot.batch.checked === null) {
          if (!wait) return;
          await slot.batch.result;
          wait = false;
        }
        const n = slot.batch.checked!.notes[slot.index]!;
        slot.note = { annotated: slot.annotated, facts: n.facts, promotions: n.promotions, lines: n.lines };
      }
      this.slots.shift();
      this.deliver(slot, slot.note);
    }
  }

  /** Hands a note on, and keeps its facts (and the promotions weighed from them) for the next run. */
  private deliver(slot: Slot, note: PassedNote): void {
    this.onNote(note);
    const { writer } = this.sources;
    if (!writer) return;
    if (slot.remembered) {
      writer.keep(slot.remembered);
      return;
    }
    const promoted: CachedPromotion[] = [];
    note.promotions?.forEach((promotion, i) => {
      const { candidate, rules } = slot.candidates![i]!;
      if (promotion) promoted.push({ path: candidate.path, sha256: candidate.sha256, rules, promotion });
    });
    writer.add(slot.annotated, slot.key, { facts: note.facts, promoted });
  }
}

/**
 * A note's bytes: those of its note blob(s), joined as git shows them. A blob the tree names and the store lacks stops
 * the pass, as NotesLedger.entries does: read as no records, it would ungovern a path governed only by its records.
 */
function joined(oids: readonly string[], objects: ReadonlyArray<{ content: Buffer } | null>): Buffer {
  const present = objects.map((o, i) => {
    if (o === null) throw missingNote(oids[i]!);
    return o.content;
  });
  if (present.length === 1) return present[0]!;
  return Buffer.concat(present.flatMap((c) => [c, Buffer.from('\n')]));
}

/**
 * Every note of the notes commit: annotated id and the note blob(s) holding its lines (more than one when a tool
 * left a flat entry beside a fanned-out one; git shows them concatenated), in annotated-id order, streamed from
 * `ls-tree -r`. Only one group of notes is held at a time: git lists a tree in name order, so the entries whose
 * paths start with the same character (a fanout directory and any flat names beside it) come together, and an
 * annotated id starts with its path's first character. With `foreign`, the listing names directories too, and every
 * entry that is no note is handed to it.
 */
export async function* notesOf(
  repo: Repository,
  tip: string,
  foreign?: ForeignEntries,
): AsyncGenerator<[string, string[]]> {
  let group = new Map<string, string[]>();
  let first = '';
  const sorted = () => [...group].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  // The tree is read first: ls-tree of a commit whose tree is gone fails with git's bare "not a tree object".
  if (!(await repo.objects.read(`${tip}^{tree}`))) throw missingNotesTree(tip);
  const args = ['ls-tree', '-r', ...(foreign ? ['-t'] : []), '-z', '--full-tree', tip];
  for await (const record of gitRecords(args, { cwd: repo.cwd, env: repo.env }, '\0')) {
    const note = noteOfTreeRecord(record);
    if (!note) {
      foreign?.seeRecord(record);
      continue;
    }
    const { annotated, oid } = note;
    if (annotated[0] !== first) {
      yield* sorted();
      group = new Map();
      first = annotated[0]!;
    }
    const oids = group.get(annotated);
    if (oids) oids.push(oid);
    else group.set(annotated, [oid]);
  }
  yield* sorted();
}

/**
 * Worker threads running `checkNoteBatch` (or `indexNoteBatch`), when the worker script was built next to this module
 * (the CLI bundle).
 */
export class NotePool {
  private readonly load: number[];
  private sent = 0;
  private readonly waiting = new Map<
    number,
    { resolve: (answer: { id: number }) => void; reject: (e: Error) => void }
  >();

  private constructor(private readonly workers: Worker[]) {
    this.load = workers.map(() => 0);
    workers.forEach((worker, i) => {
      worker.on('message', (answer: { id: number }) => {
        this.load[i]!--;
        this.waiting.get(answer.id)?.resolve(answer);
        this.waiting.delete(answer.id);
      });
      // A crashed worker fails the whole run (exit 2): a ledger only partly checked must never pass.
      const fail = (cause: Error) => {
        const error = new DelegateGitError(
          'LEDGER',
          `A thread checking the ledger stopped before it answered (${cause.message}), so the ledger was not fully checked. Run the command again; if it stops again, the machine may be short of memory.`,
          { cause },
        );
        for (const { reject } of this.waiting.values()) reject(error);
        this.waiting.clear();
      };
      worker.on('error', fail);
      worker.on('exit', (code) => {
        if (this.waiting.size > 0) fail(new Error(`exit code ${code}`));
      });
    });
  }

  static start(governance: Governance): NotePool | null {
    return NotePool.spawn({
      keyFiles: [...governance.trustRoot.sources],
      soundKeys: governance.trustRoot.keys.map((key) => Buffer.from(key.publicKey.raw).toString('hex')),
      repositoryId: governance.policy.repositoryId,
    });
  }

  /** Threads for `index` only: they read lines as the path index does, and trust no key. */
  static forIndex(): NotePool | null {
    return NotePool.spawn({ keyFiles: [], soundKeys: [], repositoryId: '' });
  }

  private static spawn(workerData: VerifyWorkerData): NotePool | null {
    const script = new URL('./verify-worker.js', import.meta.url);
    if (script.protocol !== 'file:' || !existsSync(fileURLToPath(script))) return null;
    const threads = Math.max(1, Math.min(availableParallelism(), 4));
    return new NotePool(Array.from({ length: threads }, () => new Worker(script, { workerData })));
  }

  get size(): number {
    return this.workers.length;
  }

  check(batch: NoteBatch): Promise<CheckedBatch> {
    return this.send(batch);
  }

  index(batch: NoteBatch): Promise<IndexedBatch> {
    return this.send({ ...batch, indexOnly: true });
  }

  /**
   * To the thread with the least work queued. The pool numbers what it sends itself: callers number their batches
   * independently (two callers' ids may repeat, and a repeated id would leave a caller waiting forever).
   */
  private send<T extends { id: number }>(batch: NoteBatch): Promise<T> {
    const i = this.load.indexOf(Math.min(...this.load));
    this.load[i]!++;
    const id = this.sent++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve: (answer) => resolve({ ...answer, id: batch.id } as T), reject });
      this.workers[i]!.postMessage({ ...batch, id }, [batch.bytes.buffer]);
    });
  }

  async close(): Promise<void> {
    this.waiting.clear();
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}
