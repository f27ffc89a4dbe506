/**
 * The unit of work `verify` hands a thread: many notes' raw bytes in one buffer (transferred, not copied), and
 * back, per note, the facts of each of its lines. A note on a blob of the revision being verified comes with that
 * revision's files of that content (candidates), and its records, decoded and verified here anyway, are weighed for
 * them at once (promotion.ts); only a refusal, whose wording needs the whole ledger's history of the path, is left
 * to the main thread, with the note's lines. The same function runs in a worker thread or, without one, in-process.
 */

import type { Ed25519Backend } from './ed25519.js';
import { type ExaminedLine, examineLine, type IndexFact, indexFactOf, type LineFacts } from './line-check.js';
import { compareBytewise, parseNote } from './notes-format.js';
import {
  type Candidate,
  type JudgedRecord,
  type Promotion,
  type PromotionRules,
  promotionOf,
} from './promotion.js';
import type { TrustRoot } from './trust-root.js';

/** A file of the revision whose content is the note's blob, with the rules that judge it. */
export interface BatchCandidate {
  candidate: Candidate;
  rules: PromotionRules;
}

export interface NoteBatch {
  id: number;
  /** Only what the path index records for each line (indexNoteBatch): no decoding, no signature checks. */
  indexOnly?: boolean;
  /** The notes' contents, back to back. */
  bytes: Uint8Array<ArrayBuffer>;
  /**
   * Per note: the annotated object id, where its content starts and ends in `bytes`, its candidates, and whether
   * the caller wants its lines back whatever the promotions.
   */
  notes: Array<
    [annotated: string, start: number, end: number, candidates: BatchCandidate[] | null, wantLines: boolean]
  >;
}

export interface CheckedNote {
  facts: LineFacts[];
  /** Per candidate: its promotion, or null when refused (the main thread words the refusal). */
  promotions: Array<Promotion | null> | null;
  /** The note's lines (as NotesLedger reads them), when asked for or some candidate was refused. */
  lines: string[] | null;
}

export interface CheckedBatch {
  id: number;
  notes: CheckedNote[];
}

/** Per note of the batch, in order: what the path index records for each of its lines. */
export interface IndexedBatch {
  id: number;
  facts: Array<Array<IndexFact | null>>;
}

/** Packs note contents into one buffer that can be transferred to a thread. */
export class NoteBatchBuilder {
  private parts: NoteBatch['notes'] = [];
  private contents: Uint8Array[] = [];
  private size = 0;

  get bytes(): number {
    return this.size;
  }

  get count(): number {
    return this.parts.length;
  }

  add(annotated: string, content: Uint8Array, candidates: BatchCandidate[] | null, wantLines: boolean): void {
    this.parts.push([annotated, this.size, this.size + content.length, candidates, wantLines]);
    this.contents.push(content);
    this.size += content.length;
  }

  take(id: number): NoteBatch {
    // Its own ArrayBuffer (not Node's shared pool), so transferring it moves exactly these bytes.
    const bytes = new Uint8Array(new ArrayBuffer(this.size));
    this.contents.forEach((content, i) => {
      bytes.set(content, this.parts[i]![1]);
    });
    const batch = { id, bytes, notes: this.parts };
    this.parts = [];
    this.contents = [];
    this.size = 0;
    return batch;
  }
}

export function checkNoteBatch(
  batch: NoteBatch,
  trustRoot: TrustRoot,
  repositoryId: string,
  backend: Ed25519Backend = 'node',
): CheckedBatch {
  const buffer = Buffer.from(batch.bytes.buffer, batch.bytes.byteOffset, batch.bytes.byteLength);
  const notes = batch.notes.map(([annotated, start, end, candidates, wantLines]): CheckedNote => {
    const lines = noteLines(buffer.toString('utf8', start, end));
    return examineNote(annotated, lines, candidates, wantLines, trustRoot, repositoryId, backend).note;
  });
  return { id: batch.id, notes };
}

/** The path index's reading of every line of every note in the batch (a first build of the index, on threads). */
export function indexNoteBatch(batch: NoteBatch): IndexedBatch {
  const buffer = Buffer.from(batch.bytes.buffer, batch.bytes.byteOffset, batch.bytes.byteLength);
  const facts = batch.notes.map(([annotated, start, end]) =>
    noteLines(buffer.toString('utf8', start, end)).map((line) => indexFactOf(line, annotated)),
  );
  return { id: batch.id, facts };
}

/** One note's lines (as parseNote gives them) decoded and verified, and weighed for its candidates. */
function examineNote(
  annotated: string,
  lines: string[],
  candidates: BatchCandidate[] | null,
  wantLines: boolean,
  trustRoot: TrustRoot,
  repositoryId: string,
  backend: Ed25519Backend,
): { note: CheckedNote; examined: ExaminedLine[] } {
  const examined = lines.map((line) => examineLine(line, annotated, trustRoot, repositoryId, backend));
  return { note: weighNote(lines, examined, candidates, wantLines), examined };
}

/** A note's examined lines weighed for its candidates (the lines are sent back when asked or when one is refused). */
export function weighNote(
  lines: string[],
  examined: ExaminedLine[],
  candidates: BatchCandidate[] | null,
  wantLines: boolean,
): CheckedNote {
  const facts = examined.map((e) => e.facts);
  if (candidates === null) return { facts, promotions: null, lines: wantLines ? lines : null };
  // As judge.ts's judgeLines gives them: every record that decodes, with its trust; why the others do not.
  const records: JudgedRecord[] = [];
  const unreadable: string[] = [];
  for (const e of examined) {
    if (e.record !== null) records.push({ record: e.record, trust: e.trust! });
    else unreadable.push(e.facts.undecodable!);
  }
  // Without the path's earlier records: a promotion never reads them (only a refusal's wording does).
  const promotions = candidates.map(({ candidate, rules }) => {
    const p = promotionOf(candidate, records, rules, [], unreadable);
    return p.promoted ? p : null;
  });
  return { facts, promotions, lines: wantLines || promotions.includes(null) ? lines : null };
}

/**
 * parseNote's answer (lines sorted in byte order, unique, blank lines dropped), without sorting a note that is already
 * in that order, as every note NotesLedger or `git notes merge -s cat_sort_uniq` writes is.
 */
function noteLines(text: string): string[] {
  const lines = text.split('\n').filter((line) => line !== '');
  for (let i = 1; i < lines.length; i++)
    if (compareBytewise(lines[i - 1]!, lines[i]!) >= 0) return parseNote(text);
  return lines;
}
