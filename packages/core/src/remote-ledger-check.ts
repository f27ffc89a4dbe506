/**
 * What `sync` asks of a remote's ledger before it takes any line of it: does every line the remote would add to the
 * local ledger decode, sit on the blob it names, and verify under the trust root committed at HEAD? A line that does
 * not would stay in the append-only ledger for good, and a server with the pre-receive hook refuses every later
 * push of a ledger that adds it (DESIGN 4.2), so the clone could never push its records there again.
 */
import { DelegateGitError } from './errors.js';
import { gitTry } from './git.js';
import { type Governance, loadGovernance } from './governance.js';
import { examineLineSoon, lineOutcome } from './line-check.js';
import type { Repository } from './repository.js';
import { gitSnapshot } from './snapshot.js';

export interface RemoteLineProblem {
  /** The blob whose note holds the line. */
  blob: string;
  reason: string;
}

/** Lines whose signatures are checked at once (on libuv's thread pool), so a first sync of a large ledger stays flat. */
const WINDOW = 1024;

/**
 * Every line `theirs` adds to `ours` (null: no local ledger, so all of it) that the server would refuse as no valid
 * record. Lines of a key the trust root lists but has revoked, or that may not sign them now (a role removed, a
 * validity ended since), are taken: the server accepted them when they arrived, verify counts them as no fault of
 * the ledger, and refusing them would keep every fresh clone of a repository that ever revoked a key from syncing.
 */
export async function remoteLineProblems(
  repo: Repository,
  ours: string | null,
  theirs: string,
): Promise<RemoteLineProblem[]> {
  if (ours === theirs) return [];
  const added = await repo.ledger.addedLines(ours, theirs);
  if (added.length === 0) return [];
  const { trustRoot, policy } = await governanceAtHead(repo);
  const lines = added.flatMap(({ annotated, lines }) => lines.map((line) => ({ annotated, line })));
  const problems: RemoteLineProblem[] = [];
  const now = Date.now();
  for (let start = 0; start < lines.length; start += WINDOW) {
    const window = lines.slice(start, start + WINDOW);
    const examined = await Promise.all(
      window.map(({ annotated, line }) => examineLineSoon(line, annotated, trustRoot, policy.repositoryId)),
    );
    examined.forEach(({ facts }, i) => {
      const outcome = lineOutcome(facts, trustRoot, now);
      if (outcome.status === 'invalid') problems.push({ blob: window[i]!.annotated, reason: outcome.reason });
    });
  }
  return problems;
}

/**
 * The rules in force for a clone: what HEAD committed, as `verify` judges HEAD by. The work tree or the index would let
 * an uncommitted key vouch for the lines it signed.
 */
async function governanceAtHead(repo: Repository): Promise<Governance> {
  const head = await gitTry(['rev-parse', '--verify', '-q', 'HEAD^{commit}'], {
    cwd: repo.cwd,
    env: repo.env,
  });
  if (head.code !== 0)
    throw new DelegateGitError(
      'POLICY',
      'sync checks the records a remote adds against the policy and keys committed at HEAD, and HEAD has no commit ' +
        'yet, so nothing was taken. Commit the policy and keys `delegate-git init` wrote (or check out a branch that ' +
        'holds them), then run sync again.',
    );
  const commit = head.stdout.toString('utf8').trim();
  return loadGovernance(gitSnapshot(repo.cwd, repo.objects, commit, repo.env));
}
