/**
 * The CI gate (`verify`, DESIGN 4.2): every ledger line verifies, every governed file at a revision is promoted, and
 * the ledger only ever grew. Lines are streamed, so memory follows the number of problems, not the ledger's size.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type CheckResult, checkRevision } from './checks.js';
import { DelegateGitError } from './errors.js';
import { gitTry } from './git.js';
import { type Governance, loadGovernance } from './governance.js';
import { type GovernanceChangeProblem, unapprovedGovernanceChanges } from './governance-history.js';
import { checkLedgerLine, type LineOutcome } from './line-check.js';
import { addLines, PathIndex, writeCache } from './path-index.js';
import type { Repository } from './repository.js';
import { gitSnapshot } from './snapshot.js';
import type { VerifyBatch, VerifyWorkerData } from './verify-worker.js';

export interface LineProblem {
  blob: string;
  /** 1-based position among the note's record lines (sorted, blank lines not counted). */
  line: number;
  /** SHA-256 of the line, to find it whatever the numbering (`git notes show <blob> | …`). */
  sha256: string;
  reason: string;
}

export interface LedgerVerification {
  rev: string;
  commit: string;
  ledgerTip: string | null;
  /** Distinct records: a record about several files sits on each file's blob but counts once. */
  records: number;
  /** Record lines over all notes (a record on N blobs is N lines). */
  lines: number;
  notes: number;
  byVerdict: Record<string, number>;
  bySigner: Record<string, number>;
  /** Lines that do not parse or verify: forged, untrusted, malformed, another repository's. */
  invalid: LineProblem[];
  /** Records of revoked keys: valid once, they no longer count; content they promoted needs promoting again. */
  revoked: LineProblem[];
  files: CheckResult[];
  /**
   * Changes to the policy file or the keys directory, anywhere in the revision's history, that were not approved under
   * the rules in force before them. Each is also reported in `files` against the path, so every summary shows it.
   */
  governanceChanges: GovernanceChangeProblem[];
  appendOnly: {
    checked: string;
    removed: Array<{ commit: string; blob: string; line: string }>;
    problem?: string;
  };
}

export interface VerifyOptions {
  rev?: string;
  baseline?: string;
}

export function verificationExitCode(v: LedgerVerification): 0 | 1 {
  const bad =
    v.invalid.length > 0 ||
    v.files.some((f) => !f.promoted) ||
    v.appendOnly.removed.length > 0 ||
    v.appendOnly.problem;
  return bad ? 1 : 0;
}

export async function verifyLedger(repo: Repository, opts: VerifyOptions = {}): Promise<LedgerVerification> {
  const rev = opts.rev ?? 'HEAD';
  const resolved = await gitTry(['rev-parse', '--verify', '-q', `${rev}^{commit}`], {
    cwd: repo.cwd,
    env: repo.env,
  });
  if (resolved.code !== 0)
    throw new DelegateGitError(
      'GIT',
      `"${rev}" is not a commit in this repository. Name a branch, tag or commit id.`,
    );
  const commit = resolved.stdout.toString().trim();
  const governance = await loadGovernance(gitSnapshot(repo.cwd, repo.objects, commit, repo.env));
  const ledgerTip = await repo.ledger.tip();
  const result: LedgerVerification = {
    rev,
    commit,
    ledgerTip,
    records: 0,
    lines: 0,
    notes: 0,
    byVerdict: {},
    bySigner: {},
    invalid: [],
    revoked: [],
    files: [],
    governanceChanges: [],
    appendOnly: { checked: 'no ledger', removed: [] },
  };
  if (ledgerTip) await verifyLines(repo, governance, ledgerTip, result);
  const files = await checkRevision(repo, commit);
  result.governanceChanges = await unapprovedGovernanceChanges(repo, commit, ledgerTip);
  result.files = withGovernanceHistory(files.results, result.governanceChanges);
  if (ledgerTip) result.appendOnly = await checkAppendOnly(repo, ledgerTip, opts.baseline);
  return result;
}

type Note = { annotated: string; lines: string[] };

/** Lines per batch handed to a worker thread; below one batch in all, checking in-process is faster. */
const BATCH_LINES = 1000;

/**
 * The revision's own policy and trust root judge its files, so a governance file whose history holds an unapproved
 * change is refused at the revision too (the revision's trust root may well count the very key that approved itself).
 */
function withGovernanceHistory(files: CheckResult[], problems: GovernanceChangeProblem[]): CheckResult[] {
  if (problems.length === 0) return files;
  const out = files.map((f) => ({ ...f }));
  for (const p of problems) {
    const reason = `changed in commit ${p.commit.slice(0, 12)} without the approval the rules in force before it required (${p.reason})`;
    const file = out.find((f) => f.path === p.path);
    if (!file)
      out.push({
        path: p.path,
        blob: p.blob,
        sha256: p.sha256,
        promoted: false,
        governed: true,
        reason,
        by: [],
      });
    else if (file.promoted) Object.assign(file, { promoted: false, reason, by: [] });
  }
  return out;
}

async function verifyLines(repo: Repository, governance: Governance, tip: string, out: LedgerVerification) {
  const { trustRoot, policy } = governance;
  // 16 bytes of each line's SHA-256 are enough to count distinct records in a few MB for 100,000 of them.
  const seen = new Set<string>();
  // The governed-paths index comes from the same pass, so judging the revision's files reads the ledger no more.
  const byPath: Parameters<typeof addLines>[0] = new Map();
  const tally = (note: Note, outcomes: LineOutcome[]) => {
    out.notes++;
    addLines(byPath, note.annotated, note.lines);
    outcomes.forEach((o, i) => {
      out.lines++;
      const digest = createHash('sha256').update(note.lines[i]!).digest();
      if (o.status !== 'valid') {
        const problem = {
          blob: note.annotated,
          line: i + 1,
          sha256: digest.toString('hex'),
          reason: o.reason,
        };
        (o.status === 'revoked' ? out.revoked : out.invalid).push(problem);
        return;
      }
      const key = digest.subarray(0, 16).toString('base64');
      if (seen.has(key)) return;
      seen.add(key);
      out.records++;
      out.byVerdict[o.outcome] = (out.byVerdict[o.outcome] ?? 0) + 1;
      out.bySigner[o.signer] = (out.bySigner[o.signer] ?? 0) + 1;
    });
  };
  const inProcess = (notes: Note[]) => {
    for (const note of notes)
      tally(
        note,
        note.lines.map((l) => checkLedgerLine(l, note.annotated, trustRoot, policy.repositoryId)),
      );
  };

  const batch: Note[] = [];
  let batchLines = 0;
  let pool: LinePool | null = null;
  const inFlight = new Set<Promise<void>>();
  const flush = async () => {
    pool ??= LinePool.start(governance);
    if (!pool) return inProcess(batch.splice(0));
    const notes = batch.splice(0);
    const done = pool.check(notes).then((outcomes) => {
      notes.forEach((n, i) => {
        tally(n, outcomes[i]!);
      });
    });
    inFlight.add(done);
    void done.finally(() => inFlight.delete(done));
    // Bounded read-ahead keeps memory flat however large the ledger is.
    if (inFlight.size >= pool.size * 2) await Promise.race(inFlight);
  };
  try {
    for await (const note of repo.ledger.entries(tip)) {
      batch.push(note);
      batchLines += note.lines.length;
      if (batchLines >= BATCH_LINES) {
        batchLines = 0;
        await flush();
      }
    }
    if (pool === null) inProcess(batch);
    else if (batch.length > 0) await flush();
    await Promise.all(inFlight);
  } finally {
    await (pool as LinePool | null)?.close();
  }
  await writeCache(repo.cacheDir, tip, new PathIndex(byPath));
  const order = (a: LineProblem, b: LineProblem) =>
    a.blob === b.blob ? a.line - b.line : a.blob < b.blob ? -1 : 1;
  out.invalid.sort(order);
  out.revoked.sort(order);
}

/** Worker threads running `checkLedgerLine`, when the worker script was built next to this module (the CLI bundle). */
class LinePool {
  private next = 0;
  private seq = 0;
  private readonly waiting = new Map<
    number,
    { resolve: (o: LineOutcome[][]) => void; reject: (e: Error) => void }
  >();

  private constructor(private readonly workers: Worker[]) {
    for (const worker of workers) {
      worker.on('message', (m: { id: number; outcomes: LineOutcome[][] }) => {
        this.waiting.get(m.id)?.resolve(m.outcomes);
        this.waiting.delete(m.id);
      });
      // A crashed worker fails the whole run (exit 2): a ledger only partly checked must never pass.
      worker.on('error', (error) => {
        for (const { reject } of this.waiting.values()) reject(error);
        this.waiting.clear();
      });
    }
  }

  static start(governance: Governance): LinePool | null {
    const script = new URL('./verify-worker.js', import.meta.url);
    if (script.protocol !== 'file:' || !existsSync(fileURLToPath(script))) return null;
    const threads = Math.max(1, Math.min(availableParallelism(), 4));
    const workerData: VerifyWorkerData = {
      keyFiles: [...governance.trustRoot.sources],
      repositoryId: governance.policy.repositoryId,
    };
    return new LinePool(Array.from({ length: threads }, () => new Worker(script, { workerData })));
  }

  get size(): number {
    return this.workers.length;
  }

  check(notes: Note[]): Promise<LineOutcome[][]> {
    const id = this.seq++;
    const worker = this.workers[this.next++ % this.workers.length]!;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, notes } satisfies VerifyBatch);
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/**
 * With a baseline: it must be an ancestor of the tip and every line it held must still be there. Without one, every
 * notes commit in the history must hold every line of each of its parents.
 */
async function checkAppendOnly(
  repo: Repository,
  tip: string,
  baseline: string | undefined,
): Promise<LedgerVerification['appendOnly']> {
  const removed: LedgerVerification['appendOnly']['removed'] = [];
  if (baseline) {
    const exists = await gitTry(['rev-parse', '--verify', '-q', `${baseline}^{commit}`], {
      cwd: repo.cwd,
      env: repo.env,
    });
    if (exists.code !== 0) {
      return {
        checked: `baseline ${baseline}`,
        removed,
        problem: `the baseline ${baseline} is not in this repository: the ledger history was replaced or not fetched`,
      };
    }
    const base = exists.stdout.toString().trim();
    const ff = await gitTry(['merge-base', '--is-ancestor', base, tip], { cwd: repo.cwd, env: repo.env });
    if (ff.code !== 0) {
      return {
        checked: `baseline ${base}`,
        removed,
        problem: `the baseline ${base.slice(0, 12)} is not an ancestor of the ledger tip: its history was rewritten`,
      };
    }
    for (const d of await repo.ledger.droppedLines(base, tip))
      removed.push({ commit: tip, blob: d.annotated, line: d.line });
    return { checked: `since baseline ${base}`, removed };
  }
  for await (const { commit, parents } of repo.ledger.history()) {
    for (const parent of parents) {
      for (const d of await repo.ledger.droppedLines(parent, commit))
        removed.push({ commit, blob: d.annotated, line: d.line });
    }
  }
  return { checked: 'whole history', removed };
}
