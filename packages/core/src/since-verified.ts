/**
 * `verify --since <commit>`: the revision judged as a push onto the commit verified last on the protected branch.
 * Without it, verify knows the revision's history but not which line of it was the protected branch, so it judges
 * each policy or key change by the rules of its own parent: a branch started before a key was revoked could approve a
 * new key with it, and a merge of that branch (first parent: the branch) brought the key in; the other way round,
 * the default branch merged into a feature branch was judged by the feature branch's older trust root. Judged from
 * the commit verified last, as pre-receive judges a push, every commit the revision adds is weighed by the rules in
 * force there, and the history up to it is the history already verified.
 */
import { resolveCommit } from './checks.js';
import { gitFailure, gitTry } from './git.js';
import { isObjectId } from './notes-format.js';
import { POLICY_PATH } from './policy.js';
import { judgePush } from './pre-receive.js';
import type { PushRefusal } from './push-judgement.js';
import type { Repository } from './repository.js';

export interface SinceVerified {
  /** The commit verified last on the protected branch. */
  commit: string;
  /** The commits the revision adds beyond it. */
  commits: number;
  /** What a push of those commits onto it would have been refused for, each with its commit and path. */
  refusals: Array<Omit<PushRefusal, 'ref'>>;
  /** Why the revision could not be judged from it (it does not hold that commit): a problem in itself. */
  problem?: string;
  /**
   * True when the whole history was judged instead (each policy or key change by its parent's rules): the revision
   * does not contain `commit`, or `commit` holds no policy yet (it is from before the adoption).
   */
  wholeHistory: boolean;
}

/**
 * The commit `rev` names; null when `rev` is a full id of no object here, which says the protected branch's
 * history was replaced (or not fetched): any other name that does not name a commit is a mistake, an error.
 */
export async function resolveVerified(repo: Repository, rev: string): Promise<string | null> {
  return resolveCommit(repo, rev).catch(async (error: unknown) => {
    if (isObjectId(rev) && (await repo.objects.read(rev)) === null) return null;
    throw error;
  });
}

/** The answer when the commit verified last (a full id) is not in this repository. */
export function verifiedMissing(id: string): SinceVerified {
  return {
    commit: id,
    commits: 0,
    refusals: [],
    wholeHistory: true,
    problem: `the commit verified last, ${id.slice(0, 12)}, is not in this repository: the protected branch's history was replaced since, or not fetched`,
  };
}

/**
 * Why the revision does not contain `since`. A pull request's merge made before the protected branch moved on (its
 * first parent is older than `since`: a re-run keeps the merge it was started with) is not a rewrite.
 */
async function notContained(repo: Repository, since: string, revision: string): Promise<string> {
  const opts = { cwd: repo.cwd, env: repo.env };
  const first = await gitTry(['rev-parse', '--verify', '-q', `${revision}^1`], opts);
  const parent = first.stdout.toString('utf8').trim();
  const older =
    first.code === 0 && (await gitTry(['merge-base', '--is-ancestor', parent, since], opts)).code === 0;
  const at = `the revision does not contain ${since.slice(0, 12)}, the commit verified last`;
  if (older)
    return `${at}: it is older (its first parent ${parent.slice(0, 12)} comes before it), as a pull request's merge made before the protected branch moved on is; update the branch, or run again on the current merge`;
  return `${at}: the protected branch was rewritten since, or this revision is on another line of history (verify it with --since the commit it shares with the protected branch, \`git merge-base\`)`;
}

/** The revision judged from `since`, when it contains it and there were rules in force there to judge by. */
export async function judgeSinceVerified(
  repo: Repository,
  since: string,
  revision: string,
  revocationsAt?: string,
): Promise<SinceVerified> {
  const opts = { cwd: repo.cwd, env: repo.env };
  const ancestry = ['merge-base', '--is-ancestor', since, revision];
  const holds = await gitTry(ancestry, opts);
  if (holds.code !== 0 && holds.code !== 1) throw gitFailure(ancestry, holds);
  if (holds.code === 1) {
    return {
      commit: since,
      commits: 0,
      refusals: [],
      wholeHistory: true,
      problem: await notContained(repo, since, revision),
    };
  }
  if ((await repo.objects.read(`${since}:${POLICY_PATH}`)) === null)
    return { commit: since, commits: 0, refusals: [], wholeHistory: true };
  const judged = await judgePush(repo, [{ oldId: since, newId: revision, ref: revision }], {
    defaultBranchAt: since,
    revocationsAt,
  });
  return {
    commit: since,
    commits: judged.commits,
    refusals: judged.refusals.map(({ ref: _, ...refusal }) => refusal),
    wholeHistory: false,
  };
}
