/**
 * What `sync` asks of a remote's ledger before it takes any line of it: does every line the remote would add to the
 * local ledger decode, sit on the blob it names, and verify under the trust root committed at the commit that judges
 * it (HEAD by default; sync asks again for each remote's default branch as last fetched)? A line that does
 * not would stay in the append-only ledger for good, and a server with the pre-receive hook refuses every later
 * push of a ledger that adds it (DESIGN 4.2), so the clone could never push its records there again.
 */
import { governanceDigest } from './decision-cache.js';
import { DelegateGitError } from './errors.js';
import { gitTry } from './git.js';
import { type Governance, loadGovernance } from './governance.js';
import { NotePool } from './ledger-pass.js';
import { lineOutcome } from './line-check.js';
import { type CheckedBatch, checkNoteBatch, NoteBatchBuilder } from './note-batch.js';
import type { Repository } from './repository.js';
import { gitSnapshot } from './snapshot.js';

export interface RemoteLineProblem {
  /** The blob whose note holds the line. */
  blob: string;
  reason: string;
}

/** Bytes of added lines per batch handed to a checking thread (about 500 record lines). */
const BATCH_BYTES = 1 << 20;

/**
 * Every line `theirs` adds to `ours` (null: no local ledger, so all of it) that the server would refuse as no valid
 * record. Lines of a key the trust root lists but has revoked, or that may not sign them now (a role removed, a
 * validity ended since), are taken: the server accepted them when they arrived, verify counts them as no fault of
 * the ledger, and refusing them would keep every fresh clone of a repository that ever revoked a key from syncing.
 * The added lines are read a window at a time and checked on verify's threads, so a first sync of a large ledger
 * keeps its memory flat.
 */
export async function remoteLineProblems(
  repo: Repository,
  ours: string | null,
  theirs: string,
  /** The commit whose policy and keys judge the lines (default HEAD). */
  judgedAt = 'HEAD',
  /**
   * The rules (governanceDigest) that judged these lines already, in an earlier call: rules met again find nothing
   * new, so the lines are not read again (a branch and its default branch mostly hold the same). Judged rules are
   * added.
   */
  judgedBy = new Set<string>(),
): Promise<RemoteLineProblem[]> {
  if (ours === theirs) return [];
  const problems: RemoteLineProblem[] = [];
  const now = Date.now();
  let governance: Governance | undefined;
  let pool: NotePool | null | undefined;
  const builder = new NoteBatchBuilder();
  /** Batches sent and not yet awaited, oldest first. */
  const inFlight: Array<Promise<void>> = [];
  let sent = 0;
  const dispatch = () => {
    if (builder.count === 0) return;
    const { trustRoot, policy } = governance!;
    const batch = builder.take(sent++);
    const checked: Promise<CheckedBatch> = pool
      ? pool.check(batch)
      : Promise.resolve(checkNoteBatch(batch, trustRoot, policy.repositoryId));
    const weighed = checked.then(({ notes }) => {
      notes.forEach(({ facts }, i) => {
        for (const fact of facts) {
          const outcome = lineOutcome(fact, trustRoot, now);
          if (outcome.status === 'invalid')
            problems.push({ blob: batch.notes[i]![0], reason: outcome.reason });
        }
      });
    });
    weighed.catch(() => {}); // awaited in turn; a thread failing meanwhile must not be reported as unhandled
    inFlight.push(weighed);
  };
  try {
    for await (const window of repo.ledger.addedLineWindows(ours, theirs)) {
      if (window.length === 0) continue;
      if (governance === undefined) {
        governance = await governanceAt(repo, judgedAt);
        const rules = governanceDigest(governance, undefined);
        if (judgedBy.has(rules)) return [];
        judgedBy.add(rules);
      }
      for (const { annotated, lines } of window) {
        builder.add(annotated, Buffer.from(`${lines.join('\n')}\n`), null, false);
        if (builder.bytes < BATCH_BYTES) continue;
        pool ??= NotePool.start(governance); // less than one batch in all is checked here: threads would cost more
        dispatch();
        // Bounded read-ahead: once every thread has two batches, wait for the oldest.
        while (inFlight.length >= (pool?.size ?? 1) * 2) await inFlight.shift();
      }
    }
    dispatch();
    await Promise.all(inFlight);
  } finally {
    await pool?.close();
  }
  return problems.sort((a, b) => (a.blob < b.blob ? -1 : a.blob > b.blob ? 1 : 0));
}

/**
 * The rules a commit holds (a judge's commit: HEAD, or a remote's default branch). The work tree or the index would
 * let an uncommitted key vouch for the lines it signed.
 */
async function governanceAt(repo: Repository, rev: string): Promise<Governance> {
  const named = await gitTry(['rev-parse', '--verify', '-q', `${rev}^{commit}`], {
    cwd: repo.cwd,
    env: repo.env,
  });
  if (named.code !== 0)
    throw new DelegateGitError(
      'POLICY',
      `the records a remote adds are checked against the policy and keys committed at ${rev}, and ${rev} names no ` +
        'commit, so nothing was taken. Commit the policy and keys `delegate-git init` wrote (or check out a branch ' +
        'that holds them), then try again.',
    );
  const commit = named.stdout.toString('utf8').trim();
  return loadGovernance(gitSnapshot(repo.cwd, repo.objects, commit, repo.env));
}
