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
import { isObjectId } from './notes-ledger.js';
import { POLICY_PATH } from './policy.js';
import { judgePush, type PushRefusal } from './pre-receive.js';
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
 * The commit `rev` names; null when `rev` is a full id this repository does not hold, which says the protected
 * branch's history was replaced (or not fetched): any other name that does not resolve is a typo, an error.
 */
export async function resolveVerified(repo: Repository, rev: string): Promise<string | null> {
  return resolveCommit(repo, rev).catch((error: unknown) => {
    if (isObjectId(rev)) return null;
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

/** The revision judged from `since`, when it contains it and there were rules in force there to judge by. */
export async function judgeSinceVerified(
  repo: Repository,
  since: string,
  revision: string,
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
      problem: `the revision does not contain ${since.slice(0, 12)}, the commit verified last: the protected branch was rewritten since, or this revision is on another line of history (verify it with --since the commit it shares with the protected branch, \`git merge-base\`)`,
    };
  }
  if ((await repo.objects.read(`${since}:${POLICY_PATH}`)) === null)
    return { commit: since, commits: 0, refusals: [], wholeHistory: true };
  const judged = await judgePush(repo, [{ oldId: since, newId: revision, ref: revision }], {
    defaultBranchAt: since,
  });
  return {
    commit: since,
    commits: judged.commits,
    refusals: judged.refusals.map(({ ref: _, ...refusal }) => refusal),
    wholeHistory: false,
  };
}
