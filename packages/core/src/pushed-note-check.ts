/**
 * One note a push adds, checked once as note-batch.ts checks the notes of `verify` and of the gate's threads: each
 * line decoded and verified (its facts and record, for the ledger check), and the note's records weighed for the
 * pushed files of that content (their promotions, for judging those files), so no signature is checked twice. It
 * runs in this thread, with the signature checks on libuv's thread pool, which needs no start-up: on 2 cores, worker
 * threads measured no faster for a 1,000-note push (each takes 60–110 ms to start, competing with the reads), and
 * cost a third more CPU.
 */
import type { Governance } from './governance.js';
import { type ExaminedLine, examineLineSoon } from './line-check.js';
import { type BatchCandidate, weighNote } from './note-batch.js';
import type { Promotion } from './promotion.js';

/** One note as checked: each of its lines examined, and its candidates' promotions. */
export interface CheckedPushedNote {
  /** Each line of the note, examined (its facts, and its record when it decodes), by line. */
  examined: Map<string, ExaminedLine>;
  /** The note's candidates that were promoted, by path (refusals are left to the caller to word). */
  promoted: Map<string, Promotion>;
}

/** Checks a note's lines (sorted and unique, as read at the notes commit), weighed for `candidates`. */
export async function checkPushedNote(
  governance: Governance,
  annotated: string,
  lines: readonly string[],
  candidates: BatchCandidate[] | null,
): Promise<CheckedPushedNote> {
  const { trustRoot, policy } = governance;
  const examined = await Promise.all(
    lines.map((line) => examineLineSoon(line, annotated, trustRoot, policy.repositoryId)),
  );
  const note = weighNote([...lines], examined, candidates, false);
  const promoted = new Map<string, Promotion>();
  note.promotions?.forEach((p, i) => {
    if (p) promoted.set(candidates![i]!.candidate.path, p);
  });
  return { examined: new Map(lines.map((line, i) => [line, examined[i]!])), promoted };
}
