/**
 * The server gate (DESIGN 4.2, pre-receive). Everything is judged by the policy and trust root already in force on
 * the target (never the ones being pushed), against the ledger as it will be after the push. Objects are read
 * through the quarantine git provides in the hook's environment; no ref is updated here.
 */
import { firstOfEach } from './collections.js';
import { DecisionCache } from './decision-cache.js';
import { collisionsWithAdded, namesCanCollide } from './fold-collisions.js';
import { type Governance, revokedWhere } from './governance.js';
import { recordedAsCheckedOut } from './governed-paths.js';
import { governedFiles, judgeFiles, revisionAnchor } from './judge.js';
import { LEDGER_REF } from './notes-ledger.js';
import { PathHistories } from './path-history.js';
import { type KnownAddition, loadPathIndex, loadRecordedPaths } from './path-index.js';
import { deletionRefusal, isGovernanceFile, type Policy } from './policy.js';
import { early, once } from './promises.js';
import { adopts, governanceInForce, noGovernanceReason } from './push-governance.js';
import { emptyJudgement, isZeroId, type PushJudgement, type RefUpdate } from './push-judgement.js';
import { type LedgerAfter, ledgerReadAt, recordedPathsFor } from './push-ledger-after.js';
import { type CheckedPromotions, startLedgerCheck } from './push-ledger-check.js';
import { alongUpdate, judgeLedgerUpdate } from './push-ledger-update.js';
import { PushReads, previousTip } from './push-reads.js';
import {
  isReplaceRef,
  ledgerDetours,
  POSES_AS_LEDGER,
  posesAsLedger,
  REPLACE_REFUSED,
} from './push-ref-names.js';
import { movedKeysRefused, refusedByPushedRules, tipChangesRules } from './push-rules-change.js';
import { SHALLOW_PUSH_REFUSED, shallowCuts } from './push-shallow.js';
import {
  changesOf,
  diffHeldTips,
  type HeldRefAnswers,
  type TipsDiff,
  unheldCommits,
  walkHeldRefs,
  walkNewRefs,
} from './push-walks.js';
import { changesBetween, filesAt, type Introduced, type NewChanges } from './pushed-changes.js';
import type { Repository } from './repository.js';
import { isReviewRef, notPlain, notPlainReason } from './review-refs.js';
import { treeFiles } from './snapshot.js';

export { LEDGER_REF };

export interface JudgePushOptions {
  /**
   * The commit of the protected branch, when not the one HEAD names: `verify --since` judges a revision as a push
   * onto the commit verified last, in a clone whose HEAD is whatever CI checked out.
   */
  defaultBranchAt?: string;
  /** The commit whose revocations bind every ref judged, when not the default branch's (PushReads.refGovernanceAt). */
  revocationsAt?: string;
}

export async function judgePush(
  repo: Repository,
  updates: RefUpdate[],
  opts: JudgePushOptions = {},
): Promise<PushJudgement> {
  const result = emptyJudgement();
  const reads = new PushReads(repo, updates, opts.defaultBranchAt, opts.revocationsAt);
  try {
    return await judgeWith(reads, updates, result);
  } finally {
    await reads.close();
  }
}

async function judgeWith(
  reads: PushReads,
  updates: RefUpdate[],
  result: PushJudgement,
): Promise<PushJudgement> {
  const { repo } = reads;
  // Judged first and alone: with the history cut off, the rest would be judged against what is not there.
  if ((await shallowCuts(repo)).length > 0) {
    for (const u of updates.filter((x) => !isZeroId(x.newId)))
      result.refusals.push({ ref: u.ref, reason: SHALLOW_PUSH_REFUSED });
    return result;
  }
  const review = await reads.reviewRefs();
  if ('invalid' in review) {
    for (const u of updates) result.refusals.push({ ref: u.ref, reason: review.invalid });
    return result;
  }
  const notesUpdate = updates.find((u) => u.ref === LEDGER_REF);
  for (const u of updates.filter((x) => isReplaceRef(x.ref) && !isZeroId(x.newId)))
    result.refusals.push({ ref: u.ref, reason: REPLACE_REFUSED });
  for (const u of updates.filter((x) => posesAsLedger(x.ref)))
    result.refusals.push({ ref: u.ref, reason: POSES_AS_LEDGER });
  const detours = ledgerDetours(repo, updates);
  // On a repository that is not plain, a name alone cannot say what a ref holds: every push is refused until it is.
  const unplain = 'prefixes' in review && review.prefixes.length > 0 ? notPlain(repo.layout.commonDir) : null;
  if (unplain !== null) {
    for (const u of updates) result.refusals.push({ ref: u.ref, reason: notPlainReason(unplain) });
    return result;
  }
  // Every other ref is content anyone can check out, a notes ref too (`git checkout refs/notes/x` gives its files),
  // but for the namespaces the server's administrator leaves to review (review-refs.ts).
  const contentUpdates = updates.filter(
    (u) =>
      u.ref !== LEDGER_REF &&
      !posesAsLedger(u.ref) &&
      !isReplaceRef(u.ref) &&
      !isZeroId(u.newId) &&
      !isReviewRef(u.ref, review),
  );
  // Every git read that depends on nothing else starts now (spawning is cheapest while the heap is small); each is
  // awaited where it is needed.
  const unheld = once(() => unheldCommits(reads, contentUpdates));
  const newRefCommits = once(() => walkNewRefs(reads, contentUpdates, unheld));
  const heldRefCommits = once(() => walkHeldRefs(reads, contentUpdates));
  const changes = contentUpdates.map((u) =>
    early(changesOf(reads, u, unheld, newRefCommits, heldRefCommits)),
  );
  const tipDiffs = once(() => diffHeldTips(reads, contentUpdates));
  const forNotesRead = early(governanceInForce(reads, null, result, contentUpdates));
  const ledger = notesUpdate
    ? startLedgerCheck(
        {
          cwd: repo.cwd,
          env: repo.env,
          objects: repo.objects,
          blobs: reads.blobs,
          governance: forNotesRead,
          pushedFiles: early(pushedFilesJudgedBy(reads, contentUpdates, changes, forNotesRead, result)),
        },
        notesUpdate,
      )
    : null;
  const alongRead =
    notesUpdate && !isZeroId(notesUpdate.newId) ? early(alongUpdate(repo, notesUpdate)) : null;
  const notesAfterRead = early(
    notesUpdate && !isZeroId(notesUpdate.newId) ? Promise.resolve(notesUpdate.newId) : repo.ledger.tip(),
  );
  for (const u of contentUpdates) reads.prefetch(u);

  const forNotes = await forNotesRead;
  const notesAfter = await notesAfterRead;
  if (notesUpdate && ledger) await judgeLedgerUpdate(reads, notesUpdate, forNotes, ledger, alongRead, result);
  result.refusals.push(...detours);
  if (contentUpdates.length === 0) return result;

  // The ledger after the push, read once for every pushed ref and only as far as needed: the paths it ever
  // recorded when a path's governance depends on them, the full path index only to word a refusal (both grown
  // from the cache at the ledger's current tip with the lines this push adds), and the notes tree, which already
  // holds the notes the ledger check read (the pushed blobs' notes are usually those).
  const change = notesUpdate !== undefined && notesAfter === notesUpdate.newId ? ledger?.change : null;
  const known: KnownAddition | undefined =
    notesUpdate && change
      ? { since: notesUpdate.oldId, added: early(change.then((c) => c.added)) }
      : undefined;
  const after: LedgerAfter = {
    at: notesAfter,
    recordedPaths: once(() => loadRecordedPaths(repo.ledger, notesAfter, repo.cacheDir, known)),
    index: once(() => loadPathIndex(repo.ledger, notesAfter, repo.cacheDir, known)),
    ledger: early(ledgerReadAt(repo, notesAfter, change ?? null)),
    promotions: change && ledger ? early(ledger.promotions()) : Promise.resolve(null),
  };
  for (const [i, update] of contentUpdates.entries())
    await judgeRefUpdate(reads, update, changes[i]!, tipDiffs, after, result);
  return result;
}

/**
 * A push that adopts delegate-git (no policy was in force, so its own is taken on trust) is asked what `verify` asks of
 * its tip: every governed file promoted (the policy and keys by an approval of a key trusted there), and every change
 * in the history of the policy and keys approved by the rules before it. Its commits are not judged one by one: the
 * history of a repository that adopts late (or moves to this server) was governed by nothing, or by rules of its time
 * that the tip's would misjudge.
 */
async function judgeAdoption(
  reads: PushReads,
  u: RefUpdate,
  governance: Governance,
  after: LedgerAfter,
  result: PushJudgement,
): Promise<void> {
  const files = await filesAt(reads.repo, u.newId);
  const matcher = reads.matcher(governance.policy);
  const governed = governedFiles(files, governance, await recordedPathsFor(matcher, files, after));
  result.files += governed.length;
  const judged = await judgeFiles(governed, {
    governance,
    anchor: revisionAnchor(governance),
    ledger: await after.ledger,
    notesAt: after.at,
    index: after.index,
    batch: reads.blobs,
  });
  judged.forEach((j) => {
    if (!j.promoted)
      result.refusals.push({ ref: u.ref, commit: u.newId, path: j.path, reason: j.reason, kind: j.kind });
  });
  // Loaded when asked: only an adopting push needs the history walk.
  const { unapprovedGovernanceChanges } = await import('./governance-history.js');
  for (const p of await unapprovedGovernanceChanges(reads.repo, u.newId, after.at, await after.index()))
    result.refusals.push({ ref: u.ref, commit: p.commit, path: p.path, reason: p.reason, kind: p.kind });
  for (const c of await collisionsAtTip(reads, u, governance.policy, files, after))
    result.refusals.push({ ref: u.ref, commit: u.newId, path: c.path, reason: c.reason });
}

async function judgeRefUpdate(
  reads: PushReads,
  u: RefUpdate,
  changes: Promise<NewChanges>,
  tipDiffs: () => Promise<HeldRefAnswers<TipsDiff>>,
  after: LedgerAfter,
  result: PushJudgement,
) {
  const governance = await governanceInForce(reads, u, result);
  if (!governance) {
    result.refusals.push({ ref: u.ref, reason: await noGovernanceReason(reads, u) });
    return;
  }
  const own = await previousTip(reads, u);
  const betweenTips =
    own === null ? null : tipDiffs().then((d) => d.get(u) ?? changesBetween(reads.repo, own, u.newId));
  betweenTips?.catch(() => {}); // awaited below
  const brought = await changes;
  const between = await betweenTips;
  result.commits += brought.commits;
  if (await adopts(reads, u)) return judgeAdoption(reads, u, governance, after, result);
  const brings = [...brought.introduced, ...(between?.introduced ?? [])];
  const deleted = [...brought.deleted, ...(between?.deleted ?? [])];
  if ([...brings, ...deleted].some((f) => isGovernanceFile(governance.policy, f.path)))
    result.changingRules.push(u.ref);
  const introduced = await notOnDefaultBranch(reads, own, brings);
  const matcher = reads.matcher(governance.policy);
  const governed = governedFiles(introduced, governance, await recordedPathsFor(matcher, introduced, after));
  // The first commit that brings a content names it (the change between the tips comes last). Only a governance
  // file is judged with the version it replaces (judgeFiles), so only there does that version make it another question.
  // A submodule or a link is another question than a file of the same id: which came first must not decide (rt55 f01).
  const unique = firstOfEach(governed, (f) => {
    const replaces = isGovernanceFile(governance.policy, f.path) ? `${f.replaces}\0${f.replacedAt}` : '';
    const kind = f.submodule ? 'submodule' : f.symlink ? 'link' : 'file';
    return `${f.path}\0${f.blob}\0${kind}\0${replaces}`;
  });
  result.files += unique.length;
  const histories = new PathHistories(reads.repo, u.newId);
  const judged = await judgeFiles(unique, {
    governance,
    ledger: await after.ledger,
    notesAt: after.at,
    index: after.index,
    batch: reads.blobs,
    decisions: await promotedAlready(unique, governance, await after.promotions),
    historyOf: (commit, path) => histories.historyOf(commit, path),
  });
  judged.forEach((j, i) => {
    if (!j.promoted)
      result.refusals.push({
        ref: u.ref,
        commit: unique[i]!.commit,
        path: j.path,
        reason: revokedWhere(j.reason, governance.trustRoot, 'on the default branch'),
        kind: j.kind,
        ...(isGovernanceFile(governance.policy, j.path) && { rulesFile: true as const }),
      });
  });
  if (await tipChangesRules(reads, u)) {
    const refused = new Set(result.refusals.filter((r) => r.ref === u.ref).map((r) => r.path));
    for (const refusal of await refusedByPushedRules(reads, u, governance, brings, after, refused))
      result.refusals.push(refusal);
  }
  for (const refusal of await movedKeysRefused(reads, u, governance, after, brought.introduced))
    result.refusals.push(refusal);
  for (const d of deletionsByPath(deleted)) {
    const refusal = deletionRefusal(governance.policy, d.path, matcher, d.removesLink === true);
    if (refusal) result.refusals.push({ ref: u.ref, commit: d.commit, path: d.path, ...refusal });
  }
  // Every name the push brings, those the default branch holds too: a pair is made by this tip, whichever side
  // each name came from (merging main into a branch brings main's governed name beside the branch's excluded one).
  for (const c of await collisionsAtTip(reads, u, governance.policy, brings, after))
    result.refusals.push({ ref: u.ref, commit: u.newId, path: c.path, reason: c.reason });
}

/**
 * Names of the pushed tip that a checkout ignoring case makes one file, one governed and one not, where the push
 * brings one of them (fold-collisions.ts). Judged at the tip, what a clone checks out: listing every pushed
 * commit's tree would cost a listing of the whole tree per commit.
 */
async function collisionsAtTip(
  reads: PushReads,
  u: RefUpdate,
  policy: Policy,
  introduced: readonly Introduced[],
  after: LedgerAfter,
): Promise<Array<{ path: string; reason: string }>> {
  if (!namesCanCollide(policy) || introduced.length === 0) return [];
  const peeled = await reads.repo.objects.read(`${u.newId}^{tree}`);
  if (peeled === null) return []; // a blob: no names
  const files = await treeFiles(reads.repo.cwd, peeled.oid, [], reads.repo.env, { submodules: true });
  return collisionsWithAdded(
    policy,
    files,
    introduced.map((f) => f.path),
    async () => recordedAsCheckedOut(await after.recordedPaths()),
  );
}

/**
 * For a branch other than the default one: the files whose content at that path the default branch does not hold.
 * The default branch accepted its own content under its policy; a branch that merges it in (the merge's first-parent
 * diff brings all of it) is not judged again on that by its own, older trust root.
 */
async function notOnDefaultBranch(
  reads: PushReads,
  own: string | null,
  files: readonly Introduced[],
): Promise<Introduced[]> {
  const head = own === null ? null : await reads.headCommit();
  if (head === null || head === own || files.length === 0) return [...files];
  // cat-file reads one name per line: a path holding a line break is simply judged.
  const paths = [...new Set(files.map((f) => f.path))].filter((p) => !/[\n\r]/.test(p));
  const ids = await Promise.all(paths.map((p) => reads.objectIds.read(`${head}:${p}`)));
  const held = new Map(paths.map((p, i) => [p, ids[i]?.oid]));
  return files.filter((f) => held.get(f.path) !== f.blob);
}

/**
 * One deletion per path: the first, unless a later one removed a link there (judged as what may appear beneath it),
 * whichever order the commits came in (rt55 f02).
 */
function deletionsByPath(deleted: readonly Introduced[]): Introduced[] {
  const byPath = new Map<string, Introduced>();
  for (const d of deleted) {
    const first = byPath.get(d.path);
    if (first === undefined || (d.removesLink && !first.removesLink)) byPath.set(d.path, d);
  }
  return [...byPath.values()];
}

/**
 * Per blob, the paths the pushed refs judged by `governance` give that content: the ledger check weighs their
 * records while checking the notes anyway. A ref whose governance cannot be read is left out here (judging
 * it reports that, as before).
 */
async function pushedFilesJudgedBy(
  reads: PushReads,
  updates: readonly RefUpdate[],
  changes: ReadonlyArray<Promise<NewChanges>>,
  governance: Promise<Governance | null>,
  result: PushJudgement,
): Promise<Map<string, string[]>> {
  const byBlob = new Map<string, string[]>();
  const g = await governance;
  for (const [i, u] of updates.entries()) {
    const own = await governanceInForce(reads, u, result).catch(() => null);
    if (own === null || own !== g) continue;
    for (const f of (await changes[i]!).introduced)
      if (!f.submodule) byBlob.set(f.blob, [...(byBlob.get(f.blob) ?? []), f.path]);
  }
  return byBlob;
}

/**
 * The files the ledger check promoted, as decisions judgeFiles takes without judging again (the same
 * promotionOf over the same note and content, under the same governance); everything else it judges itself.
 */
async function promotedAlready(
  files: readonly Introduced[],
  governance: Governance,
  checked: CheckedPromotions | null,
): Promise<DecisionCache | undefined> {
  if (!checked || checked.governance !== governance) return undefined;
  const decisions = DecisionCache.none();
  for (const f of files) {
    const decision = checked.promoted.get(`${f.blob}\0${f.path}`);
    if (decision) decisions.set(decision);
  }
  return decisions;
}
