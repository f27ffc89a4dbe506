/**
 * The reads and checks of a pushed ledger update (the server gate's ledger check), started together as soon as the
 * update is known: whether it fast-forwards, what it drops and adds (ledger-change.ts), the blobs the new lines sit
 * on, and each new note checked as soon as it is read, while the rest is still being read.
 *
 * A note is checked once (pushed-note-check.ts): its lines' facts give the ledger check's problems, and its records
 * are weighed there for the pushed files of that content, so judging those files checks no signature again. Lines
 * not checked that way (a first push of the ledger) are judged with judgeLine. Both give the same problem.
 */
import { createHash } from 'node:crypto';
import { datedAhead } from './dated-ahead.js';
import type { Decision } from './decision-cache.js';
import { type CatFileBatch, gitTry } from './git.js';
import type { Governance } from './governance.js';
import { rulesFor } from './judge.js';
import type { KeptObjects } from './kept-objects.js';
import { changedIds, type LedgerChange, readLedgerChange, readNotesDiff } from './ledger-change.js';
import type { ExaminedLine } from './line-check.js';
import type { BatchCandidate } from './note-batch.js';
import { early } from './promises.js';
import type { Promotion } from './promotion.js';
import { isZeroId, type RefUpdate } from './push-judgement.js';
import { checkPushedNote } from './pushed-note-check.js';
import { judgeLine, type LedgerRecord, MISPLACED, type RecordTrust } from './record.js';
import { expiredAt, type TrustedKey } from './trust-root.js';

export interface LedgerCheckSources {
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** The repository's object reader (notes and trees). */
  objects: CatFileBatch;
  /** The same reader, keeping the blobs hashed here for judging the pushed files. */
  blobs: KeptObjects;
  /** The governance the ledger is checked by (null: none in force, the update is refused). */
  governance: Promise<Governance | null>;
  /** Per blob, the paths the push gives that content that are judged by that same governance. */
  pushedFiles: Promise<ReadonlyMap<string, readonly string[]>>;
}

/** The pushed files promoted while their notes were checked, by "<blob>\0<path>", and the governance that judged. */
export interface CheckedPromotions {
  governance: Governance;
  promoted: Map<string, Decision>;
}

export interface LedgerCheck {
  /** Whether the old tip is an ancestor of the new one (null: nothing to compare, the ledger is new or deleted). */
  fastForward: Promise<boolean> | null;
  change: Promise<LedgerChange> | null;
  /** The problem of each of a note's added lines (null: none), judged as soon as the note was read when possible. */
  problems(
    governance: Governance,
    annotated: string,
    lines: readonly string[],
  ): Promise<Array<string | null>>;
  /** Once every added note was checked: the pushed files promoted on the way (null: none). */
  promotions(): Promise<CheckedPromotions | null>;
}

interface JudgedNote {
  governance: Governance;
  problems: Array<string | null>;
  promoted: Map<string, Promotion> | null;
  /** The SHA-256 of the note's blob, which the promotions were weighed for. */
  sha256: string | null;
}

/**
 * Lines refused before the rest of a push's new lines go unchecked: the push is refused whatever they hold, and a
 * pusher with no key could otherwise make the server check every line of thousands of notes (rt44 f02: 12,000 took
 * 4-11 s). Notes are checked at most NOTES_AT_ONCE at a time, so that the count is known before most are started.
 */
const REFUSED_ENOUGH = 100;
const NOTES_AT_ONCE = 64;

/** The problem of a line left unchecked once REFUSED_ENOUGH others were refused (never a reason to accept it). */
export const NOT_CHECKED = 'not checked: the push is refused for other lines already';

/** At most `size` holders at once; the others wait in order. */
class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(size: number) {
    this.free = size;
  }
  async take(): Promise<void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

export function startLedgerCheck(sources: LedgerCheckSources, u: RefUpdate): LedgerCheck {
  const digests = new Map<string, Promise<string | null>>();
  const sha256 = (blob: string) => {
    let digest = digests.get(blob);
    if (!digest) {
      digest = early(
        sources.blobs
          .keep(blob)
          .then((o) => (o ? createHash('sha256').update(o.content).digest('hex') : null)),
      );
      digests.set(blob, digest);
    }
    return digest;
  };
  let refused = 0;
  const tally = (problems: Array<string | null>) => {
    refused += problems.filter((p) => p !== null).length;
    return problems;
  };
  const unchecked = (lines: readonly string[]) => lines.map(() => NOT_CHECKED);
  const judgeHere = async (g: Governance, annotated: string, lines: readonly string[]) => {
    if (refused >= REFUSED_ENOUGH) return unchecked(lines);
    const digest = await sha256(annotated);
    return tally(lines.map((line) => lineProblem(g, annotated, digest, line)));
  };
  // Only the answers for exactly the lines finally added, under the governance finally used, are taken.
  const judged = new Map<string, { lines: string[]; judged: Promise<JudgedNote | null> }>();
  const problems = async (g: Governance, annotated: string, lines: readonly string[]) => {
    const known = judged.get(annotated);
    const same = known && known.lines.length === lines.length && known.lines.every((l, i) => l === lines[i]);
    const done = same ? await known.judged : null;
    return done?.governance === g ? done.problems : judgeHere(g, annotated, lines);
  };
  if (isZeroId(u.oldId) || isZeroId(u.newId)) {
    return {
      fastForward: null,
      change: null,
      problems,
      promotions: async () => null,
    };
  }

  const git = { cwd: sources.cwd, env: sources.env, batch: sources.objects };
  const fastForward = early(
    gitTry(['merge-base', '--is-ancestor', u.oldId, u.newId], { cwd: sources.cwd, env: sources.env }).then(
      (r) => r.code === 0,
    ),
  );
  const diff = early(readNotesDiff(git, u.oldId, u.newId));
  // The blobs the new lines sit on are asked for as soon as the diff names them, beside the notes themselves.
  const governed = early(
    Promise.all([diff, sources.governance]).then(([d, g]) => {
      for (const id of changedIds(d.notes).forAdded) sha256(id);
      return g;
    }),
  );
  const slots = new Slots(NOTES_AT_ONCE);
  const onAdded = (annotated: string, lines: string[], note: string[]) => {
    const checked = (async (): Promise<JudgedNote | null> => {
      const g = await governed;
      if (!g) return null;
      await slots.take();
      try {
        if (refused >= REFUSED_ENOUGH)
          return { governance: g, problems: unchecked(lines), promoted: null, sha256: null };
        const digest = await sha256(annotated);
        const candidates = await candidatesFor(g, annotated, digest, sources.pushedFiles);
        // The whole note is weighed only for files this push brings with its content: a line added to a note of
        // 100,000 others otherwise checked all of them again, for 20-40 s (rt41 f03).
        const { examined, promoted } = await checkPushedNote(
          g,
          annotated,
          candidates ? note : lines,
          candidates,
        );
        const problems = tally(lines.map((line) => problemOf(examined.get(line), annotated, digest)));
        return { governance: g, problems, promoted, sha256: digest };
      } finally {
        slots.give();
      }
    })();
    judged.set(annotated, { lines, judged: early(checked) });
  };
  const change = early(readLedgerChange(git, u.oldId, u.newId, diff, onAdded));

  return {
    fastForward,
    change,
    problems,
    async promotions() {
      await change.catch(() => null); // every note added was handed to onAdded by then
      const promoted = new Map<string, Decision>();
      let governance: Governance | null = null;
      for (const [blob, { judged: note }] of judged) {
        const done = await note.catch(() => null);
        if (!done?.promoted || done.sha256 === null) continue;
        governance = done.governance;
        for (const [path, { reason, by }] of done.promoted)
          promoted.set(`${blob}\0${path}`, { path, blob, sha256: done.sha256, promoted: true, reason, by });
      }
      return governance ? { governance, promoted } : null;
    },
  };
}

/** The pushed files of this content to weigh its records for, as judgeFiles weighs them (governance files aside). */
async function candidatesFor(
  governance: Governance,
  blob: string,
  digest: string | null,
  pushedFiles: Promise<ReadonlyMap<string, readonly string[]>>,
): Promise<BatchCandidate[] | null> {
  if (digest === null) return null;
  const paths = (await pushedFiles.catch(() => null))?.get(blob) ?? [];
  const candidates: BatchCandidate[] = [];
  for (const path of new Set(paths)) {
    const { governanceFile, rules } = rulesFor(path, governance);
    if (!governanceFile) candidates.push({ candidate: { path, sha256: digest, gitBlob: blob }, rules });
  }
  return candidates.length > 0 ? candidates : null;
}

/** Why a new note line may not enter the ledger, or null. The content is checked when the blob is here. */
export function lineProblem(
  governance: Governance,
  annotated: string,
  sha256: string | null,
  line: string,
): string | null {
  const judged = judgeLine(line, governance.trustRoot, governance.policy.repositoryId);
  if (!judged.ok) return `not a valid record: ${judged.reason}`;
  return recordProblem(judged.record, judged.trust, annotated, sha256);
}

/** lineProblem's answer for a line checkPushedNote examined. */
export function problemOf(
  line: ExaminedLine | undefined,
  annotated: string,
  sha256: string | null,
): string | null {
  if (!line) throw new Error('a line of the note checked was not examined');
  if (line.record === null || line.trust === null) return `not a valid record: ${line.facts.undecodable}`;
  return recordProblem(line.record, line.trust, annotated, sha256);
}

/** The rule both forms apply to a line that decodes: on its blob, trusted, not late, and naming the blob's digest. */
function recordProblem(
  record: LedgerRecord,
  trust: RecordTrust,
  annotated: string,
  sha256: string | null,
): string | null {
  if (!record.subjects.some((s) => s.gitBlob === annotated)) return MISPLACED;
  if (!trust.ok) return trust.reason;
  const late = arrivalProblem(record.createdAt, trust.signer);
  if (late) return late;
  if (sha256 !== null && record.subjects.some((s) => s.gitBlob === annotated && s.sha256 !== sha256))
    return 'the record names a sha256 that does not match the blob';
  return null;
}

/** What the server's clock says of a new line that verifies: dated ahead of it, or signed by a key expired by now. */
function arrivalProblem(createdAt: number, signer: TrustedKey): string | null {
  const now = Date.now();
  return datedAhead(createdAt, now) ?? expiredAt(signer, now);
}
