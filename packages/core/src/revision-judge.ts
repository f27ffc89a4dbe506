/**
 * `verify`'s judgement of every governed file at its revision, from what its pass over the ledger already knows:
 * the records on the revision's blobs are decoded and verified once, on the worker threads, which weigh them for
 * the files of that content right away (note-batch.ts); the path index comes from the same pass. Each file is
 * decided by judge.ts's judgementOf, as in checkRevision (with the revision's own governance as the anchor); only
 * the work already done is not done again.
 */
import { createHash } from 'node:crypto';
import type { CheckResult } from './checks.js';
import { collisionRefusals } from './fold-collisions.js';
import type { CatFileBatch } from './git.js';
import type { Governance } from './governance.js';
import { type FileToJudge, governedFiles, isLink, judgementOf, revisionAnchor, rulesFor } from './judge.js';
import { type LineFacts, recordTrust } from './line-check.js';
import type { BatchCandidate } from './note-batch.js';
import type { PathIndex } from './path-index.js';
import { governedMatcher } from './policy.js';
import type { JudgedRecord, Promotion } from './promotion.js';
import { decodeRecord, verifyRecord } from './record.js';

export interface RevisionPlan {
  /** Per blob, the files of that content the policy governs whatever the ledger says, with their rules. */
  candidates: Map<string, BatchCandidate[]>;
  /** Blobs of files governed only if the ledger ever recorded their path: their notes' lines are kept. */
  ifRecorded: Set<string>;
  /** SHA-256 of the content of every blob read so far. */
  sha256: Map<string, string>;
}

/** What the pass found on one blob of the revision. */
export interface NoteAtRevision {
  facts: readonly LineFacts[];
  /** Null when every file on it was promoted by the thread that checked it. */
  lines: readonly string[] | null;
  /** The files on it the thread promoted, by path. */
  promoted: ReadonlyMap<string, Promotion>;
}

/** Reads and hashes the files the policy alone governs, so their records can be weighed as they are checked. */
export async function planRevision(
  files: readonly FileToJudge[],
  governance: Governance,
  objects: CatFileBatch,
): Promise<RevisionPlan> {
  const classify = governedMatcher(governance.policy).classify;
  const plan: RevisionPlan = { candidates: new Map(), ifRecorded: new Set(), sha256: new Map() };
  const governed: FileToJudge[] = [];
  for (const f of files) {
    if (f.submodule) continue; // no content to read or records to weigh: judgementOf refuses it
    const c = classify(f.path, isLink(f));
    if (c === 'governed') governed.push(f);
    else if (c === 'if-recorded') plan.ifRecorded.add(f.blob);
  }
  await hashContents(
    governed.map((f) => f.blob),
    plan.sha256,
    objects,
  );
  for (const f of governed) {
    const sha256 = plan.sha256.get(f.blob);
    if (sha256 === undefined) continue; // unreadable: refused without looking at records
    const list = plan.candidates.get(f.blob) ?? [];
    list.push({
      candidate: { path: f.path, sha256, gitBlob: f.blob },
      rules: rulesFor(f.path, governance).rules,
    });
    plan.candidates.set(f.blob, list);
  }
  return plan;
}

async function hashContents(
  blobs: string[],
  into: Map<string, string>,
  objects: CatFileBatch,
): Promise<void> {
  const unique = [...new Set(blobs)].filter((b) => !into.has(b));
  const contents = await objects.readMany(unique);
  unique.forEach((blob, i) => {
    const object = contents[i];
    if (object) into.set(blob, createHash('sha256').update(object.content).digest('hex'));
  });
}

export async function judgeRevision(
  files: readonly FileToJudge[],
  governance: Governance,
  index: PathIndex,
  plan: RevisionPlan,
  notes: ReadonlyMap<string, NoteAtRevision>,
  objects: CatFileBatch,
): Promise<CheckResult[]> {
  const governed = governedFiles(files, governance, index);
  await hashContents(
    governed.filter((f) => !f.submodule).map((f) => f.blob),
    plan.sha256,
    objects,
  );
  const judged = new Map<string, { records: JudgedRecord[]; unreadable: string[] }>();
  const recordsOn = (blob: string) => {
    let j = judged.get(blob);
    if (!j) {
      j = judgeNote(notes.get(blob), governance);
      judged.set(blob, j);
    }
    return j;
  };
  const anchor = revisionAnchor(governance);
  const results: CheckResult[] = [];
  for (const f of governed) {
    const judgement = await judgementOf(f, {
      sha256: plan.sha256.get(f.blob),
      threaded: notes.get(f.blob)?.promoted.get(f.path),
      governance,
      anchor,
      recordsOn: () => recordsOn(f.blob),
      earlier: (trustRoot) => index.earlier(f.path, f.blob, trustRoot),
    });
    results.push({ ...judgement, governed: true });
  }
  for (const refusal of collisionRefusals(governance.policy, files, governed)) results.push(refusal);
  return results;
}

/**
 * The records on one blob with their trust, as judge.ts's judgeLines gives them: the trust decision comes from the
 * pass; the record itself is decoded again here (only for files the threads left to this one).
 */
function judgeNote(
  note: NoteAtRevision | undefined,
  governance: Governance,
): { records: JudgedRecord[]; unreadable: string[] } {
  const records: JudgedRecord[] = [];
  const unreadable: string[] = [];
  if (!note) return { records, unreadable };
  const { trustRoot, policy } = governance;
  if (note.lines === null) throw new Error('verify: the lines of a note to judge were not kept');
  note.lines.forEach((line, i) => {
    const decoded = decodeRecord(line);
    if (!decoded.ok) {
      unreadable.push(decoded.reason);
      return;
    }
    const trust =
      recordTrust(note.facts[i]!, trustRoot) ?? verifyRecord(decoded.record, trustRoot, policy.repositoryId);
    records.push({ record: decoded.record, trust });
  });
  return { records, unreadable };
}
