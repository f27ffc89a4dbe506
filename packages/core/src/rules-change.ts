/**
 * What a commit that changes the policy or the trust root does beyond the files it stages, said before it is made. A
 * local check judges a commit by its own rules (DESIGN 4.2), the server and CI a push by the rules already in force
 * on its branch, so two things pass the commit hook unsaid otherwise:
 * - files the commit stages that the rules in force refuse though the staged rules let them through: the server
 *   refuses them until the rules change is on the branch, so the change goes in a push of its own first;
 * - governed files the commit leaves as they are that the staged rules no longer promote (a threshold raised, a new
 *   protect glob, a reviewer's key revoked), the policy and key files among them: every later `verify` refuses them
 *   until they are approved again.
 * Loaded only for such a commit (checks.ts), as governance-history.ts is.
 */
import { type CheckResult, judgeIn } from './checks.js';
import type { Governance } from './governance.js';
import { isGovernanceFile } from './governed-paths.js';
import { type FileToJudge, revisionAnchor } from './judge.js';
import { deletionRefusal, governedMatcher, type RefusalKind } from './policy.js';
import type { Repository } from './repository.js';
import { treeFiles } from './snapshot.js';
import type { StagedChange } from './staged-changes.js';

/** A path a rules change decides otherwise, with why it is refused. */
export interface RefusedPath {
  path: string;
  reason: string;
  kind?: RefusalKind;
}

export interface RulesChange {
  /** Paths this commit stages or deletes that the rules in force refuse and the staged rules do not. */
  aheadOfRules: RefusedPath[];
  /** Governed paths the commit leaves unchanged that the staged rules no longer promote. */
  unpromoted: RefusedPath[];
}

/** The staged check's own answer, which the rules in force are compared with. */
export interface StagedAnswer {
  results: readonly CheckResult[];
  deletions: ReadonlyArray<{ path: string; blocks: boolean }>;
}

export async function rulesChangeOf(
  repo: Repository,
  base: string,
  changes: readonly StagedChange[],
  removed: ReadonlyArray<{ path: string; link: boolean }>,
  staged: Governance,
  inForce: Governance,
  answer: StagedAnswer,
): Promise<RulesChange> {
  const governance = (p: string) => isGovernanceFile(staged.policy, p) || isGovernanceFile(inForce.policy, p);
  const refusedHere = new Set([
    ...answer.results.filter((r) => r.governed && !r.promoted).map((r) => r.path),
    ...answer.deletions.filter((d) => d.blocks).map((d) => d.path),
  ]);
  const stagedFiles = changes
    .filter((c) => c.status !== 'D' && !governance(c.path))
    .map((c) => ({ path: c.path, blob: c.blob, submodule: c.submodule, symlink: c.symlink }));
  const matcher = governedMatcher(inForce.policy);
  const aheadOfRules = [
    ...refusedBy(await judgeIn(repo, inForce, stagedFiles, false)),
    ...removed.flatMap((r) => {
      const refusal = deletionRefusal(inForce.policy, r.path, matcher, r.link);
      return refusal ? [{ path: r.path, ...refusal }] : [];
    }),
  ].filter((r) => !refusedHere.has(r.path));

  const touched = new Set([...changes.map((c) => c.path), ...removed.map((r) => r.path)]);
  return { aheadOfRules, unpromoted: await unpromotedBy(repo, base, touched, governance, staged, inForce) };
}

/**
 * The governed files at `base`, untouched by the commit, that the staged rules refuse and the rules in force promote,
 * each judged as `verify` judges it at a revision (checkRevision): the policy and key files included, by the
 * revision's own reviewers (revisionAnchor), so that what is said here is what `verify` refuses after the commit.
 * Judging every file under new rules is a cold check of the whole tree (seconds on ten thousand files), so it is
 * done only where it must be: nothing can change when the rules that promote are the same; where the trust root
 * only changed or lost keys (a revocation, a role taken away), only files those keys' records promote can.
 */
async function unpromotedBy(
  repo: Repository,
  base: string,
  touched: ReadonlySet<string>,
  governance: (path: string) => boolean,
  staged: Governance,
  inForce: Governance,
): Promise<RulesChange['unpromoted']> {
  const samePolicy = promotingPolicy(staged) === promotingPolicy(inForce);
  if (samePolicy && staged.trustRoot.digest === inForce.trustRoot.digest) return [];
  const kept = (await treeFiles(repo.cwd, base, [], repo.env, { submodules: true })).filter(
    (f) => !touched.has(f.path),
  );
  const changedKeys = samePolicy ? keysChangedOrRemoved(staged, inForce) : null;
  // The rules in force's answer (for ordinary files the gates' usual one, cached): a file they refuse already is no
  // news of this commit, and where only keys changed, a file promoted without those keys' records stays promoted.
  const now = await asVerifyJudges(repo, inForce, kept, governance);
  const refusedNow = new Set(refusedBy(now).map((r) => r.path));
  const promotedBy = new Map(now.filter((r) => r.promoted).map((r) => [r.path, r.by]));
  const candidates = kept.filter(
    (f) =>
      !refusedNow.has(f.path) &&
      (changedKeys === null || (promotedBy.get(f.path) ?? []).some((name) => changedKeys.has(name))),
  );
  return refusedBy(await asVerifyJudges(repo, staged, candidates, governance));
}

/**
 * `files` judged under `rules` as checkRevision judges a revision: a policy or key file by the anchor `verify` gives
 * it (revisionAnchor: an approval by a reviewer of `rules`' own trust root), every other file without one. Whether a
 * path is a governance file is `rules`' own say (judge.ts rulesFor): a file of a keys directory the staged policy
 * moves away from is an ordinary file under it, as at the revision. Split so that the many ordinary files keep the
 * decisions the gates cached with no anchor, which makes no difference to them.
 */
async function asVerifyJudges(
  repo: Repository,
  rules: Governance,
  files: FileToJudge[],
  governance: (path: string) => boolean,
): Promise<CheckResult[]> {
  const [governing, ordinary] = [
    files.filter((f) => governance(f.path)),
    files.filter((f) => !governance(f.path)),
  ];
  const judged = [
    ...(await judgeIn(repo, rules, governing, false, revisionAnchor(rules))),
    ...(await judgeIn(repo, rules, ordinary, false)),
  ];
  // Back in the tree's order, as verify lists them.
  const order = new Map(files.map((f, i) => [f.path, i]));
  return judged.sort((a, b) => (order.get(a.path) ?? 0) - (order.get(b.path) ?? 0));
}

/** What of a policy decides promotion (not its mode, nor protectDeletes), as one comparable text. */
function promotingPolicy({ policy }: Governance): string {
  const { repositoryId, keysDir, protect, exclude, requireReview, reviewThreshold } = policy;
  return JSON.stringify([repositoryId, keysDir, protect, exclude, requireReview, reviewThreshold]);
}

/** The names of the keys in force whose file the staged trust root changes or drops; null when it adds a key (whose
 * records, a rejection say, may now count against anything). */
function keysChangedOrRemoved(staged: Governance, inForce: Governance): Set<string> | null {
  if (staged.trustRoot.keys.some((k) => inForce.trustRoot.byKeyid(k.keyid) === undefined)) return null;
  const stagedText = new Map(staged.trustRoot.sources.map((s) => [s.path, s.text]));
  const changed = new Set(
    inForce.trustRoot.sources.filter((s) => stagedText.get(s.path) !== s.text).map((s) => s.path),
  );
  return new Set(inForce.trustRoot.keys.filter((k) => changed.has(k.file)).map((k) => k.name));
}

function refusedBy(results: readonly CheckResult[]): RefusedPath[] {
  return results
    .filter((r) => r.governed && !r.promoted)
    .map(({ path, reason, kind }) => ({ path, reason, kind }));
}
