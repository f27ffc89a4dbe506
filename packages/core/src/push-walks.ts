/**
 * The commits, and the changes in them, that each ref of a push brings: walked together for the refs of a large push
 * where git allows (a mirror push of hundreds of branches), else one walk per ref.
 */

import { git } from './git.js';
import { adopts } from './push-governance.js';
import type { RefUpdate } from './push-judgement.js';
import { adoptedTip, type PushReads, previousTip } from './push-reads.js';
import {
  changesBetweenMany,
  changesFrom,
  type NewChanges,
  type NewCommits,
  newChanges,
  newChangesOfMany,
  treeRefChanges,
  walkNewCommits,
} from './pushed-changes.js';
import { judgedRefsArgs } from './review-refs.js';

/**
 * The commits no ref holds (notes and review refs aside) among and behind the tips of the new refs a push makes,
 * found in one walk: a new ref whose tip is not among them (a tag on a commit held already) brings nothing, and is not
 * walked on its own. A release pushing a thousand tags cost a git process each (rt41 f05).
 */
export async function unheldCommits(
  reads: PushReads,
  updates: readonly RefUpdate[],
): Promise<ReadonlySet<string>> {
  const tips = await Promise.all(
    updates.map(async (u) => ((await previousTip(reads, u)) === null ? reads.commit(u.newId) : null)),
  );
  const commits = tips.filter((tip): tip is string => tip !== null);
  if (commits.length === 0) return new Set();
  const [adopted, review] = await Promise.all([adoptedTip(reads), reads.reviewRefs()]);
  const out = await git(['rev-list', '--stdin', '--not', ...judgedRefsArgs(review), ...adopted], {
    cwd: reads.repo.cwd,
    env: reads.repo.env,
    input: `${commits.join('\n')}\n`,
  });
  return new Set(out.toString('utf8').split('\n').filter(Boolean));
}

/**
 * The commits an update brings. For a ref that existed: every commit it did not hold and the default branch does
 * not hold, judged by its own policy; not only those no ref holds: a pusher could otherwise make a ref at an old
 * commit, move it on under that commit's older policy, and bring its commits to the default branch as commits
 * already here. (Commits the default branch holds were judged there, so a branch brought up to date with it is not
 * judged again by its older trust root.) For a new ref: the commits no ref holds (notes refs aside: the ledger's
 * commits are never judged as content, so a commit it holds counts as new), so a tag on a maintenance branch that
 * predates the policy does not judge that history again. In a push that adopts delegate-git on the default branch,
 * what that branch will hold counts as held, as if it had been pushed first; the adopting ref itself, and every
 * ref of a push that adopts without it, is judged at its tip (judgeAdoption), so its commits are not walked.
 */
export async function changesOf(
  reads: PushReads,
  u: RefUpdate,
  unheld: () => Promise<ReadonlySet<string>>,
  newRefCommits: () => Promise<NewCommits>,
  heldRefCommits: () => Promise<HeldRefAnswers<NewChanges>>,
): Promise<NewChanges> {
  if (await adopts(reads, u)) return NOTHING_NEW; // judged at its tip
  const tip = await reads.commit(u.newId);
  if (tip === null) return treeRefChanges(reads.repo, u.newId);
  const own = await previousTip(reads, u);
  if (own === null)
    return (await unheld()).has(tip) ? changesFrom(reads.repo, tip, await newRefCommits()) : NOTHING_NEW;
  const walked = (await heldRefCommits()).get(u);
  if (walked) return walked;
  const [adopted] = await adoptedTip(reads);
  const head = adopted ?? (await reads.headCommit());
  return newChanges(reads.repo, tip, [own, ...(head !== null && head !== own ? [head] : [])]);
}

/**
 * The commits every ref that held no commit before the push brings, walked once for all of them (a mirror push of
 * hundreds of branches spawned a walk each, seconds of the hook's budget in spawning alone).
 */
export async function walkNewRefs(
  reads: PushReads,
  updates: readonly RefUpdate[],
  unheld: () => Promise<ReadonlySet<string>>,
): Promise<NewCommits> {
  const tips = new Set<string>();
  for (const u of updates) {
    const tip = await reads.commit(u.newId);
    if (
      tip !== null &&
      (await previousTip(reads, u)) === null &&
      !(await adopts(reads, u)) &&
      (await unheld()).has(tip)
    )
      tips.add(tip);
  }
  return walkNewCommits(
    reads.repo,
    [...tips],
    [...judgedRefsArgs(await reads.reviewRefs()), ...(await adoptedTip(reads))],
  );
}

const NOTHING_NEW: NewChanges = { introduced: [], deleted: [], commits: 0 };

/** Answers made together for the refs of a push that held a commit before it; a ref not there is asked alone. */
export type HeldRefAnswers<T> = ReadonlyMap<RefUpdate, T>;
export type TipsDiff = Pick<NewChanges, 'introduced' | 'deleted'>;

/**
 * The refs judged by their walk (not adopted, held a commit before, now name one) with their tips, when there are
 * several: each asked alone costs a git process or two, and a push moving hundreds of branches started hundreds.
 */
async function heldRefs(
  reads: PushReads,
  updates: readonly RefUpdate[],
): Promise<Array<{ u: RefUpdate; tip: string; own: string }>> {
  const found = await Promise.all(
    updates.map(async (u) => {
      if (await adopts(reads, u)) return [];
      const [tip, own] = await Promise.all([reads.commit(u.newId), previousTip(reads, u)]);
      return tip !== null && own !== null ? [{ u, tip, own }] : [];
    }),
  );
  const refs = found.flat();
  return refs.length >= 2 ? refs : [];
}

/** changesOf for every ref `heldRefs` finds, in one walk (newChangesOfMany). */
export async function walkHeldRefs(
  reads: PushReads,
  updates: readonly RefUpdate[],
): Promise<HeldRefAnswers<NewChanges>> {
  const refs = await heldRefs(reads, updates);
  if (refs.length === 0) return new Map();
  const [adopted] = await adoptedTip(reads);
  const head = adopted ?? (await reads.headCommit());
  const walked = await newChangesOfMany(reads.repo, refs, head === null ? [] : [head]);
  return new Map(refs.map((r, i) => [r.u, walked[i]!]));
}

/** The change between the old and the new tip of every ref `heldRefs` finds, in one diff (changesBetweenMany). */
export async function diffHeldTips(
  reads: PushReads,
  updates: readonly RefUpdate[],
): Promise<HeldRefAnswers<TipsDiff>> {
  const refs = await heldRefs(reads, updates);
  const diffs = await changesBetweenMany(
    reads.repo,
    refs.map((r) => ({ from: r.own, to: r.tip })),
  );
  return new Map(refs.map((r, i) => [r.u, diffs[i]!]));
}
