/**
 * A push that changes the rules (the policy or the keys): what it brings judged by the rules it brings as well, and a
 * moved keys directory judged file by file.
 */

import { firstOfEach } from './collections.js';
import type { Governance } from './governance.js';
import { governedFiles, judgeFiles } from './judge.js';
import { keysMove, leftBehind } from './keys-move.js';
import { pathHistory } from './path-history.js';
import { isGovernanceFile, POLICY_PATH, type Policy } from './policy.js';
import { policyCommitInForce } from './push-governance.js';
import type { PushRefusal, RefUpdate } from './push-judgement.js';
import { type LedgerAfter, recordedPathsFor } from './push-ledger-after.js';
import { type PushReads, previousTip } from './push-reads.js';
import type { Introduced } from './pushed-changes.js';
import { treeFiles } from './snapshot.js';

/**
 * Whether the rules at the pushed tip differ from those in force on the ref: a push that changes them, or a new ref
 * made from a branch that changed them (judged by the default branch's, rt50 f01).
 */
export async function tipChangesRules(reads: PushReads, u: RefUpdate): Promise<boolean> {
  const [inForce, tip] = await Promise.all([policyCommitInForce(reads, u), reads.commit(u.newId)]);
  if (inForce === null || tip === null || inForce === tip) return false;
  const [before, after] = await Promise.all([reads.rulesAt(inForce), reads.rulesAt(tip)]);
  return before !== after;
}

/**
 * A push that changes the rules is judged by the rules in force (what it pushes must never weaken them), and
 * the content it brings by the rules at its tip as well. The commit hook judges a commit by its own rules and `verify`
 * the tip by the tip's, so content that only a key the push revokes approved, or that a protect glob the push adds
 * newly governs, would pass here and fail both (rt48 f04). The policy and key files are left to the rules in force,
 * which approve a rules change. Files the push leaves as they were are not judged again: a revocation must be
 * pushable before what it unpromotes is approved again (the commit hook only names those, rules-change.ts).
 */
export async function refusedByPushedRules(
  reads: PushReads,
  u: RefUpdate,
  inForce: Governance,
  brings: readonly Introduced[],
  after: LedgerAfter,
  refused: ReadonlySet<string | undefined>,
): Promise<PushRefusal[]> {
  const tip = await reads.commit(u.newId);
  if (tip === null || !(await reads.hasPolicy(tip))) return []; // removing the policy is refused as a deletion
  let pushed: Governance;
  try {
    pushed = await reads.governanceAt(tip);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return [
      {
        ref: u.ref,
        commit: tip,
        path: POLICY_PATH,
        reason: `the rules this push brings cannot be read: ${why}`,
        byPushedRules: true,
      },
    ];
  }
  const brought = new Set(brings.map((f) => f.path));
  const rulesFile = (p: string) => isGovernanceFile(pushed.policy, p) || isGovernanceFile(inForce.policy, p);
  const atTip = (await treeFiles(reads.repo.cwd, tip, [], reads.repo.env, { submodules: true })).filter(
    (f) => brought.has(f.path) && !rulesFile(f.path) && !refused.has(f.path),
  );
  const files = governedFiles(
    atTip,
    pushed,
    await recordedPathsFor(reads.matcher(pushed.policy), atTip, after),
  );
  const judged = await judgeFiles(files, {
    governance: pushed,
    ledger: await after.ledger,
    notesAt: after.at,
    index: after.index,
    batch: reads.blobs,
  });
  return judged.flatMap((j) =>
    j.promoted
      ? []
      : [
          {
            ref: u.ref,
            commit: tip,
            path: j.path,
            reason: `${j.reason} (under the rules this push brings)`,
            kind: j.kind,
            byPushedRules: true as const,
          },
        ],
  );
}

/**
 * When the pushed tip's policy moves the keys directory, every file there becomes a key file: each is judged as one
 * (a reviewer's approval under the rules in force, no older than the policy the move replaces: withJoiningKeys), not
 * only those the push adds (keysMovedTo). So is a move by a commit in between (one the tip may move back): verify's
 * walk judges each commit's move, and the server must not accept what it refuses.
 */
export async function movedKeysRefused(
  reads: PushReads,
  u: RefUpdate,
  governance: Governance,
  after: LedgerAfter,
  introduced: readonly Introduced[],
): Promise<PushRefusal[]> {
  const own = await previousTip(reads, u);
  const inForceAt = own !== null && (await reads.hasPolicy(own)) ? own : await reads.headCommit();
  const moves: Array<{ commit: string; from: Policy | null; datedAt: string | null }> = [
    { commit: u.newId, from: governance.policy, datedAt: inForceAt },
  ];
  const policyChanges = introduced.filter(
    (c) => c.commit !== u.newId && c.replacedAt && c.path === POLICY_PATH,
  );
  for (const c of firstOfEach(policyChanges, (c) => c.commit))
    moves.push({ commit: c.commit, from: await reads.policyAt(c.replacedAt!), datedAt: c.replacedAt! });
  const refusals: PushRefusal[] = [];
  for (const move of moves) refusals.push(...(await moveRefused(reads, u.ref, move, governance, after)));
  return refusals;
}

/** movedKeysRefused's answer for one commit whose policy moves the keys directory from `from`'s. */
async function moveRefused(
  reads: PushReads,
  ref: string,
  move: { commit: string; from: Policy | null; datedAt: string | null },
  governance: Governance,
  after: LedgerAfter,
): Promise<PushRefusal[]> {
  const keys =
    move.from === null
      ? null
      : await keysMove(reads.repo, {
          from: move.from,
          to: await reads.policyAt(move.commit),
          files: [],
          datedAt: move.datedAt,
          trustRoot: governance.trustRoot,
          joining: (dir) => treeFiles(reads.repo.cwd, move.commit, [dir], reads.repo.env),
        });
  if (keys === null) return [];
  const { movedTo: moved, judged: keyFiles } = keys;
  const left = keys.left.map(
    (path): PushRefusal => ({
      ref,
      commit: move.commit,
      path,
      reason: leftBehind(moved),
      kind: 'governance deletion',
    }),
  );
  const judged = await judgeFiles(keyFiles, {
    governance: { ...governance, policy: { ...governance.policy, keysDir: moved } },
    anchor: governance,
    ledger: await after.ledger,
    notesAt: after.at,
    index: after.index,
    batch: reads.blobs,
    historyOf: (commit, path) => pathHistory(reads.repo, commit, path),
  });
  return [
    ...left,
    ...judged.flatMap((j) =>
      j.promoted ? [] : [{ ref, commit: move.commit, path: j.path, reason: j.reason, kind: j.kind }],
    ),
  ];
}
