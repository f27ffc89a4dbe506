/**
 * One note a push adds, checked once with note-batch.ts's checkNoteBatch (the function `verify` and the gate's
 * threads run): each line decoded and verified (its LineFacts, for the ledger check), and the note's records weighed
 * for the pushed files of that content (their promotions, for judging those files), so no signature is checked
 * twice. It runs in this thread: on 2 cores, worker threads measured no faster for a 1,000-note push (each takes
 * 60–110 ms to start, competing with the reads), and cost a third more CPU.
 */
import type { Governance } from './governance.js';
import type { LineFacts } from './line-check.js';
import { type BatchCandidate, checkNoteBatch, NoteBatchBuilder } from './note-batch.js';
import type { Promotion } from './promotion.js';

/** One note as checked: the facts of each of its lines, and its candidates' promotions. */
export interface CheckedPushedNote {
  /** Facts per line of the note, by line. */
  facts: Map<string, LineFacts>;
  /** The note's candidates that were promoted, by path (refusals are left to the caller to word). */
  promoted: Map<string, Promotion>;
}

/** Checks a note's lines (sorted and unique, as read at the notes commit), weighed for `candidates`. */
export function checkPushedNote(
  governance: Governance,
  annotated: string,
  lines: readonly string[],
  candidates: BatchCandidate[] | null,
): CheckedPushedNote {
  const builder = new NoteBatchBuilder();
  builder.add(annotated, Buffer.from(lines.join('\n')), candidates, false);
  const [note] = checkNoteBatch(builder.take(0), governance.trustRoot, governance.policy.repositoryId).notes;
  // checkNoteBatch reads the note as parseNote does; lines in that form already come back one for one.
  if (note?.facts.length !== lines.length)
    throw new Error(`checked ${note?.facts.length ?? 0} lines of a note of ${lines.length}`);
  const facts = new Map(lines.map((line, i) => [line, note.facts[i]!]));
  const promoted = new Map<string, Promotion>();
  note.promotions?.forEach((p, i) => {
    if (p) promoted.set(candidates![i]!.candidate.path, p);
  });
  return { facts, promoted };
}
