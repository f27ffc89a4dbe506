/**
 * The server gate (DESIGN 4.2, pre-receive). Everything is judged by the policy and trust root already in force on
 * the target (never the ones being pushed), against the ledger as it will be after the push. Objects are read
 * through the quarantine git provides in the hook's environment; no ref is updated here.
 */
import { createHash } from 'node:crypto';
import { parseRawDiff } from './checks.js';
import { git, gitTry } from './git.js';
import { type Governance, loadGovernance } from './governance.js';
import { governedFiles, judgeFiles } from './judge.js';
import { LEDGER_REF } from './notes-ledger.js';
import { loadPathIndex } from './path-index.js';
import { deletionRefusal, governedMatcher } from './policy.js';
import { judgeLine } from './record.js';
import type { Repository } from './repository.js';
import { gitSnapshot } from './snapshot.js';

export interface RefUpdate {
  oldId: string;
  newId: string;
  ref: string;
}

export interface PushRefusal {
  ref: string;
  commit?: string;
  path?: string;
  reason: string;
}

export interface PushJudgement {
  refusals: PushRefusal[];
  /** True when no policy was in force anywhere and the pushed one was trusted on first push. */
  bootstrap: boolean;
  commits: number;
  files: number;
  noteLines: number;
}

const ZERO = /^0+$/;

export function parseRefUpdates(stdin: string): RefUpdate[] {
  return stdin
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((line) => {
      const [oldId, newId, ref] = line.split(' ');
      return { oldId: oldId!, newId: newId!, ref: ref! };
    });
}

export async function judgePush(repo: Repository, updates: RefUpdate[]): Promise<PushJudgement> {
  const result: PushJudgement = { refusals: [], bootstrap: false, commits: 0, files: 0, noteLines: 0 };
  const notesUpdate = updates.find((u) => u.ref === LEDGER_REF);
  const contentUpdates = updates.filter((u) => !u.ref.startsWith('refs/notes/') && !ZERO.test(u.newId));
  const forNotes = await governanceInForce(repo, null, contentUpdates[0], result);

  const notesAfter =
    notesUpdate && !ZERO.test(notesUpdate.newId) ? notesUpdate.newId : await repo.ledger.tip();
  if (notesUpdate) await judgeLedgerUpdate(repo, notesUpdate, forNotes, result);
  for (const update of contentUpdates) await judgeRefUpdate(repo, update, notesAfter, result);
  return result;
}

/** The governance a ref is judged by: the ref's current tip, else the default branch; else the pushed commit (first push). */
async function governanceInForce(
  repo: Repository,
  update: RefUpdate | null,
  bootstrapFrom: RefUpdate | undefined,
  result: PushJudgement,
): Promise<Governance | null> {
  const candidates: string[] = [];
  if (update && !ZERO.test(update.oldId)) candidates.push(update.oldId);
  const head = await gitTry(['symbolic-ref', '-q', 'HEAD'], { cwd: repo.cwd, env: repo.env });
  if (head.code === 0) candidates.push(head.stdout.toString().trim());
  for (const rev of candidates) {
    const exists = await gitTry(['rev-parse', '--verify', '-q', `${rev}^{commit}`], {
      cwd: repo.cwd,
      env: repo.env,
    });
    if (exists.code !== 0) continue;
    const commit = exists.stdout.toString().trim();
    return loadGovernance(gitSnapshot(repo.cwd, repo.objects, commit, repo.env));
  }
  const first = update ?? bootstrapFrom;
  if (!first) return null;
  result.bootstrap = true;
  return loadGovernance(gitSnapshot(repo.cwd, repo.objects, first.newId, repo.env));
}

async function judgeLedgerUpdate(
  repo: Repository,
  u: RefUpdate,
  governance: Governance | null,
  result: PushJudgement,
) {
  const refuse = (reason: string) => result.refusals.push({ ref: u.ref, reason });
  if (ZERO.test(u.newId)) return refuse('the ledger cannot be deleted (it is append-only)');
  if (!ZERO.test(u.oldId)) {
    const ff = await gitTry(['merge-base', '--is-ancestor', u.oldId, u.newId], {
      cwd: repo.cwd,
      env: repo.env,
    });
    if (ff.code !== 0) {
      return refuse(
        'non-fast-forward update of the ledger (it is append-only): run `delegate-git sync` and push again',
      );
    }
    const dropped = await repo.ledger.droppedLines(u.oldId, u.newId);
    if (dropped.length > 0) {
      const blobs = [...new Set(dropped.map((d) => d.annotated.slice(0, 12)))];
      return refuse(
        `the update drops ${dropped.length} record line(s) on blob(s) ${blobs.join(', ')} (the ledger is append-only)`,
      );
    }
  }
  if (!governance)
    return refuse(
      'no policy is in force on this repository to verify the ledger against; push a branch with the policy first',
    );
  const added = await repo.ledger.addedLines(ZERO.test(u.oldId) ? null : u.oldId, u.newId);
  // All lines at once: their blob reads pipeline through the one object reader instead of a round trip each.
  const checks = added.flatMap(({ annotated, lines }) =>
    lines.map(async (line) => ({ annotated, problem: await lineProblem(repo, governance, annotated, line) })),
  );
  for (const { annotated, problem } of await Promise.all(checks)) {
    result.noteLines++;
    if (problem) refuse(`note on blob ${annotated.slice(0, 12)}: ${problem}`);
  }
}

/** Why a new note line may not enter the ledger, or null. The content is checked now when the blob is here. */
async function lineProblem(
  repo: Repository,
  governance: Governance,
  annotated: string,
  line: string,
): Promise<string | null> {
  const judged = judgeLine(line, governance.trustRoot, governance.policy.repositoryId);
  if (!judged.ok) return `not a valid record: ${judged.reason}`;
  const { record, trust } = judged;
  if (!record.subjects.some((s) => s.gitBlob === annotated))
    return 'the record does not name the blob it is attached to';
  if (!trust.ok) return trust.reason;
  const blob = await repo.objects.read(annotated);
  if (blob) {
    const sha256 = createHash('sha256').update(blob.content).digest('hex');
    if (record.subjects.some((s) => s.gitBlob === annotated && s.sha256 !== sha256)) {
      return 'the record names a sha256 that does not match the blob';
    }
  }
  return null;
}

interface Introduced {
  path: string;
  blob: string;
  commit: string;
}

async function judgeRefUpdate(
  repo: Repository,
  u: RefUpdate,
  notesAfter: string | null,
  result: PushJudgement,
) {
  const governance = await governanceInForce(repo, u, u, result);
  if (!governance) return;
  const { introduced, deleted, commits } = await newChanges(repo, u.newId);
  result.commits += commits;
  const notesIndex = await loadPathIndex(repo.ledger, notesAfter, repo.cacheDir);
  const governed = governedFiles(introduced, governance, notesIndex);
  const unique = [...new Map(governed.map((f) => [`${f.path}\0${f.blob}`, f])).values()];
  result.files += unique.length;
  const judged = await judgeFiles(unique, {
    governance,
    ledger: repo.ledger,
    notesAt: notesAfter,
    index: notesIndex,
    batch: repo.objects,
  });
  judged.forEach((j, i) => {
    if (!j.promoted)
      result.refusals.push({ ref: u.ref, commit: unique[i]!.commit, path: j.path, reason: j.reason });
  });
  const matcher = governedMatcher(governance.policy);
  for (const d of deleted) {
    const reason = deletionRefusal(governance.policy, d.path, matcher);
    if (reason) result.refusals.push({ ref: u.ref, commit: d.commit, path: d.path, reason });
  }
}

/** Every commit reachable from `tip` and from no existing ref, with what each adds or changes against its first parent. */
async function newChanges(repo: Repository, tip: string) {
  const out = await git(
    [
      'log',
      '--raw',
      '-z',
      '--no-abbrev',
      '-M',
      '-C',
      '--diff-merges=first-parent',
      '--format=%x01%H',
      tip,
      '--not',
      '--all',
    ],
    { cwd: repo.cwd, env: repo.env },
  );
  const introduced: Introduced[] = [];
  const deleted: Introduced[] = [];
  let commits = 0;
  let commit = '';
  let pending: string[] = [];
  const flush = () => {
    for (const c of parseRawDiff(pending))
      (c.status === 'D' ? deleted : introduced).push({ path: c.path, blob: c.blob, commit });
    pending = [];
  };
  for (const token of out.toString('utf8').split('\0')) {
    if (token.startsWith('\x01')) {
      flush();
      commit = token.slice(1).trim();
      commits++;
    } else if (token.length > 0) pending.push(token.replace(/^\n/, ''));
  }
  flush();
  return { introduced, deleted, commits };
}
