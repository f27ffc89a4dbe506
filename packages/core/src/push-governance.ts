/**
 * Which policy and trust root judge a pushed ref (DESIGN 4.2): those in force on it before the push (with the default
 * branch's revocations), else the default branch's; on the first push, or the commit that adopts delegate-git, the
 * pushed policy taken on trust.
 */

import type { Governance } from './governance.js';
import { LEDGER_REF } from './notes-ledger.js';
import type { PushJudgement, RefUpdate } from './push-judgement.js';
import { type PushReads, previousTip } from './push-reads.js';

/**
 * The governance a ref is judged by: the policy on the ref before the push; where it has none (a new ref, or a branch
 * from before delegate-git was adopted), the default branch's. Where neither has one, the repository has not adopted
 * delegate-git yet, and a pushed policy is taken on trust (the first push, or the adopting commit of a repository
 * with history): the default branch's when this push brings it one (PushReads.adoptingUpdate), else the ref's own;
 * the ledger's lines (`update` null) are weighed by the first pushed ref holding one. Null when none may be chosen:
 * the ref holds none, or the repository holds content but its HEAD names a branch that does not exist (a server made
 * with one default branch name and pushed another), which may well have adopted it on a branch this hook cannot tell.
 */
export async function governanceInForce(
  reads: PushReads,
  update: RefUpdate | null,
  result: PushJudgement,
  candidates: readonly RefUpdate[] = [],
): Promise<Governance | null> {
  const inForce = await policyCommitInForce(reads, update);
  if (inForce !== null) return reads.refGovernanceAt(inForce, update?.ref);
  const first = (await reads.adoptingUpdate()) ?? update ?? (await firstHoldingPolicy(reads, candidates));
  if (!first || ((await reads.headCommit()) === null && (await reads.holdsContent()))) return null;
  const tip = await reads.commit(first.newId);
  if (tip === null || !(await reads.hasPolicy(tip))) return null;
  result.bootstrap = true;
  return reads.governanceAt(tip);
}

async function firstHoldingPolicy(
  reads: PushReads,
  updates: readonly RefUpdate[],
): Promise<RefUpdate | null> {
  for (const u of updates) {
    const tip = await reads.commit(u.newId);
    if (tip !== null && (await reads.hasPolicy(tip))) return u;
  }
  return null;
}

/**
 * Whether a ref is judged as the adoption of delegate-git (judgeAdoption: at its tip, not commit by commit): no policy
 * is in force on it, and no other ref of the push adopts for it.
 */
export async function adopts(reads: PushReads, u: RefUpdate): Promise<boolean> {
  if ((await policyCommitInForce(reads, u)) !== null) return false;
  return ((await reads.adoptingUpdate()) ?? u) === u;
}

/** The commit whose policy is in force on a ref: its tip before the push, else the default branch's; null if neither holds one. */
export async function policyCommitInForce(
  reads: PushReads,
  update: RefUpdate | null,
): Promise<string | null> {
  const own = await previousTip(reads, update);
  if (own !== null && (await reads.hasPolicy(own))) return own;
  const head = await reads.headCommit();
  return head !== null && (await reads.hasPolicy(head)) ? head : null;
}

/** Why a ref has no governance in force (governanceInForce gave none), and what the pusher or the server's admin can do. */
export async function noGovernanceReason(reads: PushReads, u?: RefUpdate): Promise<string> {
  const branch = await reads.defaultBranch();
  const headMissing = (await reads.headCommit()) === null && (await reads.holdsContent());
  if (u !== undefined && branch !== null && !headMissing)
    return `no policy is in force here yet, and this ref holds none: push ${branch} with the commit that adopts delegate-git, and the ledger, first or in the same push (git push --atomic <remote> ${branch.replace(/^refs\/heads\//, '')} ${LEDGER_REF} ...)`;
  const head = branch === null ? 'HEAD is detached' : `HEAD names ${branch}, which does not exist here`;
  return `no policy in force to judge by: ${head}. Point HEAD at the branch that holds the policy (on the server: git symbolic-ref HEAD refs/heads/<branch>) and push again`;
}
