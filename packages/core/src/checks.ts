/**
 * The local checks of DESIGN 4.2: the work tree (`--path`), a commit (`--rev`) and the index (`--staged`). Each reads
 * policy, trust root and content from the same snapshot it judges.
 */
import { existsSync, lstatSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { DecisionCache, governanceDigest } from './decision-cache.js';
import { rememberGovernanceDigest } from './decision-store.js';
import { DelegateGitError, isDelegateGitError } from './errors.js';
import { collisionRefusals, collisionsWithAdded, namesCanCollide } from './fold-collisions.js';
import { CatFileBatch, git, gitTry, literalPathspecs } from './git.js';
import {
  type Governance,
  loadGovernance,
  loadPolicy,
  revokedWhere,
  withRevocationsOf,
} from './governance.js';
import { changesGovernance, isGovernanceFile, recordedAsCheckedOut } from './governed-paths.js';
import {
  type FileToJudge,
  governedFiles,
  isLink,
  type Judgement,
  judgeFiles,
  revisionAnchor,
} from './judge.js';
import { keysMove, leftBehind } from './keys-move.js';
import { damagedLedger } from './notes-tree.js';
import { hexDigestOf } from './object-hash.js';
import { PartialClone } from './partial-clone.js';
import { pathHistory } from './path-history.js';
import { loadPathIndex, loadRecordedPaths } from './path-index.js';
import { relativeWithin } from './path-within.js';
import {
  type DeletionRefusal,
  deletionRefusal,
  GOVERNANCE_DELETION,
  governedMatcher,
  POLICY_PATH,
  type Policy,
  parsePolicy,
} from './policy.js';
import { rememberValidPolicy } from './quiet-commit.js';
import type { Repository } from './repository.js';
import type { RulesChange } from './rules-change.js';
import { shownPath } from './shown-path.js';
import { checkoutSnapshot, gitSnapshot, type Snapshot, splitZ, stagedFiles, treeFiles } from './snapshot.js';
import { addsName, parseRawDiff, removedPaths, type StagedChange, stagedDiffArgs } from './staged-changes.js';
import { worktreeBlobs } from './worktree-blobs.js';

export interface CheckResult extends Judgement {
  governed: boolean;
  /** A path asked about (check --path) where the work tree holds no file: no content to judge. */
  absent?: true;
  /**
   * verify: refused, and the ledger holds no note on this content at all. Records made for it elsewhere (another clone,
   * a fork's pull request) have not reached this ledger.
   */
  unrecorded?: true;
}

export interface CheckReport {
  results: CheckResult[];
  /** Governed paths the change deletes; `blocks` when the policy refuses deleting protected paths. */
  deletions: Array<{ path: string; blocks: boolean; reason: string | null; kind?: DeletionRefusal['kind'] }>;
  /** Null for a branch that has no policy in a repository adopted on another (see `notice`). */
  policy: Policy | null;
  /** Said to the user even when the check passes. */
  notice?: string;
  /** `--staged`, a commit changing the policy or the trust root: what it does beyond its files (rules-change.ts). */
  rulesChange?: RulesChange;
  /** `--staged`: the committed policy, whose rules judge a change to the governance files (its threshold, say). */
  policyInForce?: Policy;
  /**
   * The gate mode in force. For the index it is HEAD's policy's (when HEAD has one), not the staged one's, so an
   * unapproved edit that switches the policy to "warn" cannot wave itself through.
   */
  mode: Policy['mode'];
  source: string;
}

/** Spelled out rather than spread: a commit can stage ten thousand of them. */
function governedResult(j: Judgement): CheckResult {
  const { path, blob, sha256, promoted, reason, by, kind } = j;
  return { path, blob, sha256, promoted, reason, by, governed: true, ...(kind && { kind }) };
}

/** 0 every governed file promoted (and no blocking deletion), 1 otherwise. */
export function reportExitCode(report: CheckReport): 0 | 1 {
  const refused =
    report.results.some((r) => r.governed && !r.promoted) || report.deletions.some((d) => d.blocks);
  return refused ? 1 : 0;
}

export async function judgeIn(
  repo: Repository,
  governance: Governance,
  files: FileToJudge[],
  all: boolean,
  anchor?: Governance,
): Promise<CheckResult[]> {
  const notesAt = await repo.ledger.tip();
  const recorded = await recordedPathsFor(repo, notesAt, governance.policy, files);
  const governed = governedFiles(files, governance, recorded);
  const judged = await judgeWithCache(repo, governed, governance, anchor, notesAt);
  const results: CheckResult[] = judged.map(governedResult);
  for (const refusal of collisionRefusals(governance.policy, files, governed)) results.push(refusal);
  if (all) {
    const listed = new Set(results.map((r) => r.path));
    for (const f of files) {
      if (!listed.has(f.path)) {
        results.push({
          path: f.path,
          blob: f.blob,
          sha256: '',
          promoted: false,
          governed: false,
          reason: 'not governed (no protect glob matches it and the ledger has no record of it)',
          by: [],
        });
      }
    }
  }
  return results;
}

/** Judges the work-tree content of each path (relative to `cwd`). Paths not governed are reported as such. */
export async function checkWorktreePaths(
  repo: Repository,
  cwd: string,
  paths: string[],
): Promise<CheckReport> {
  const top = requireWorkTree(repo);
  const defaultBranch = await defaultBranchRules(
    repo,
    (await repo.objects.read('HEAD^{commit}'))?.oid ?? null,
  );
  const governance = defaultBranch.bind(
    await loadGovernance(checkoutSnapshot(top, repo.layout.gitDir, repo.objects, repo.env)),
  );
  const rel = paths.map((p) => toRepositoryPath(top, cwd, p));
  // Stored (-w): the blobs are what judging reads, and what a record made next would name. Where the object store
  // is read-only, content already stored (all a record can promote) is still judged.
  let stored = true;
  const ids = await worktreeBlobs(top, rel, { env: repo.env, write: true }).catch(() => {
    stored = false;
    return worktreeBlobs(top, rel, { env: repo.env, write: false });
  });
  const files: FileToJudge[] = [];
  const missing: CheckResult[] = [];
  for (const [i, p] of rel.entries()) {
    const blob = ids[i];
    if (blob) {
      // A symbolic link is governed also by what it brings beneath its path, as at the gates.
      const symlink = lstatSync(path.join(top, p), { throwIfNoEntry: false })?.isSymbolicLink() === true;
      files.push({
        path: p,
        blob,
        ...(symlink ? { symlink } : {}),
        ...(stored ? {} : unstoredContent(path.join(top, p), blob, symlink)),
      });
      continue;
    }
    const exists =
      (
        await gitTry(['ls-files', '--error-unmatch', '--', ...literalPathspecs([p])], {
          cwd: top,
          env: repo.env,
        })
      ).code === 0;
    missing.push({
      path: p,
      blob: '',
      sha256: '',
      promoted: false,
      governed: exists,
      reason: notAFile(path.join(top, p), p),
      by: [],
      absent: true,
    });
  }
  const inForce = await rulesInForce(repo);
  const anchor = inForce && defaultBranch.bind(inForce);
  const results = await judgeIn(
    repo,
    governance,
    await withVersionsReplaced(repo, files, anchor),
    true,
    anchor,
  );
  return {
    results: [
      ...results.map((r) => ({ ...r, reason: defaultBranch.where(r.reason, governance) })),
      ...missing,
    ],
    deletions: [],
    policy: governance.policy,
    mode: governance.policy.mode,
    source: governance.source,
  };
}

/** Why `check` has no content to judge at a path: a directory is named as such, with how to name its files. */
function notAFile(file: string, shown: string): string {
  const directory = lstatSync(file, { throwIfNoEntry: false })?.isDirectory() === true;
  if (!directory || existsSync(path.join(file, '.git')))
    return 'it is not a file in the work tree (nothing is there, or a directory or submodule)';
  return `it is a directory, and check judges files: name them (git ls-files -z -- ${shownPath(shown)} | xargs -0 delegate-git check --)`;
}

/**
 * The bytes of a work-tree file git hashed but could not store (fc audit f05: every record of it read as "its content
 * could not be read"), where they are the blob as hashed (no filter changed them): its SHA-256 is then theirs.
 */
function unstoredContent(file: string, blob: string, symlink: boolean): { content?: Buffer } {
  const bytes = symlink ? readlinkSync(file, { encoding: 'buffer' }) : readFileSync(file);
  const header = Buffer.from(`blob ${bytes.length}\0`, 'latin1');
  const id = hexDigestOf(blob.length === 64 ? 'sha256' : 'sha1', Buffer.concat([header, bytes]));
  return id === blob ? { content: bytes } : {};
}

/** Judges every governed file in a commit's tree, by that commit's policy and trust root. */
export async function checkRevision(repo: Repository, rev: string): Promise<CheckReport> {
  const commit = await resolveCommit(repo, rev);
  const defaultBranch = await defaultBranchRules(repo, commit);
  const governance = defaultBranch.bind(
    await loadGovernance(gitSnapshot(repo.cwd, repo.objects, commit, repo.env)),
  );
  const files = await treeFiles(repo.cwd, commit, [], repo.env, { submodules: true });
  // As verify judges a revision: the governance files by the anchor, and every change in their history.
  const judged = (await judgeIn(repo, governance, files, false, revisionAnchor(governance))).map((r) => ({
    ...r,
    reason: defaultBranch.where(r.reason, governance),
  }));
  // Loaded when asked: governance-history.ts builds on this module.
  const { unapprovedGovernanceChanges, withGovernanceHistory } = await import('./governance-history.js');
  const problems = await unapprovedGovernanceChanges(repo, commit, await repo.ledger.tip());
  return {
    results: withGovernanceHistory(judged, problems),
    deletions: [],
    policy: governance.policy,
    mode: governance.policy.mode,
    source: `${rev} (${commit.slice(0, 12)})`,
  };
}

/**
 * Judges what the index changes against HEAD: additions, modifications, renames and copies by their staged blob;
 * deletions of governed paths reported (blocking for the governance files, and with `protectDeletes` on a protected
 * path).
 */
export async function checkStaged(repo: Repository): Promise<CheckReport> {
  const top = requireWorkTree(repo);
  const snapshot: Snapshot = gitSnapshot(top, repo.objects, null, repo.env);
  // The common commit touches nothing governed: answer it with the policy and the path index alone, and read the
  // trust root only when something governed is staged (the hook runs on every commit).
  const [{ base, changes }, inForce, notesAt] = await Promise.all([
    stagedChanges(repo),
    stagedPolicy(repo, snapshot, top),
    notesTip(repo),
  ]);
  if (inForce === null) {
    return {
      results: [],
      deletions: [],
      policy: null,
      mode: 'enforce',
      source: snapshot.label,
      notice: NO_POLICY_HERE,
    };
  }
  const { policy, blob: policyBlob } = inForce;
  const quiet: CheckReport = {
    results: [],
    deletions: [],
    policy,
    mode: policy.mode,
    source: snapshot.label,
  };
  if (changes.length === 0) return quiet;
  const matcher = governedMatcher(policy);
  const removed = removedPaths(changes);
  const askLedger = [...changes.map((c) => ({ path: c.path, link: isLink(c) })), ...removed].some(
    (r) => matcher.classify(r.path, r.link) === 'if-recorded',
  );
  const recorded = recordedAsCheckedOut(
    askLedger ? await loadRecordedPaths(repo.ledger, notesAt, repo.cacheDir) : NOTHING_RECORDED,
  );
  const isGoverned = (p: string, link = false) => matcher(p, recorded.has(p), link);
  refuseUnmerged(changes.filter((c) => isGoverned(c.path, isLink(c))));
  const files = stagedToJudge(changes, isGoverned, base);
  const deletions = governedDeletions(removed, isGoverned, policy, matcher);
  // Only a name the commit adds can make a new pair of names one file on a checkout that ignores case.
  const adds = changes.filter(addsName);
  const collisions =
    namesCanCollide(policy) && adds.length > 0
      ? await collisionsWithAdded(
          policy,
          await stagedFiles(top, [], repo.env),
          adds.map((c) => c.path),
          async () =>
            askLedger
              ? recorded
              : recordedAsCheckedOut(await loadRecordedPaths(repo.ledger, notesAt, repo.cacheDir)),
        )
      : [];
  if (files.length === 0 && deletions.length === 0 && collisions.length === 0) return quiet;

  // Only content needs the trust root; a change that only deletes is decided by the policy alone.
  const [ownCommitted, ownGovernance, defaultBranch] = await Promise.all([
    committedGovernance(repo, base),
    files.length > 0 ? loadGovernance(snapshot, policy) : null,
    defaultBranchRules(repo, base),
  ]);
  const committed = ownCommitted && defaultBranch.bind(ownCommitted);
  const governance = ownGovernance && defaultBranch.bind(ownGovernance);
  if (committed) refuseGovernanceDeletions(deletions, removed, committed.policy);
  const move = committed
    ? await keysMove(repo, {
        from: committed.policy,
        to: policy,
        files,
        datedAt: base,
        trustRoot: committed.trustRoot,
        joining: (dir) => stagedFiles(top, [dir], repo.env),
      })
    : null;
  const judged = move?.judged ?? files;
  for (const path of move?.left ?? [])
    deletions.push({ path, blocks: true, reason: leftBehind(move!.movedTo), kind: 'governance deletion' });
  const results: CheckResult[] = governance
    ? (
        await takenFromMerged(
          repo,
          judged,
          await judgeWithCache(repo, judged, governance, committed, notesAt),
          notesAt,
          defaultBranch,
        )
      ).map((j) => governedResult({ ...j, reason: defaultBranch.where(j.reason, governance) }))
    : [];
  results.push(...collisions);
  const mode = (committed?.policy ?? policy).mode;
  const report: CheckReport = { results, deletions, policy, mode, source: snapshot.label };
  if (!governance || !committed || base === null) return report;
  const changesRules = changesGovernance(policy, changes) || changesGovernance(committed.policy, changes);
  // The staged governance is the committed one: say which objects the decisions' digest stands for.
  if (!changesRules && policyBlob !== null) {
    const keys = await repo.objects.read(`${base}:${policy.keysDir}`);
    const objects = {
      policyBlob,
      keysTree: keys?.type === 'tree' ? keys.oid : null,
      defaultTip: defaultBranch.tip,
    };
    await rememberGovernanceDigest(repo.cacheDir, objects, governanceDigest(governance, committed));
  }
  report.policyInForce = committed.policy;
  if (changesRules) {
    const { rulesChangeOf } = await import('./rules-change.js');
    const change = await rulesChangeOf(repo, base, changes, removed, governance, committed, report);
    if (change.aheadOfRules.length > 0 || change.unpromoted.length > 0) report.rulesChange = change;
  }
  return report;
}

/** The staged changes a commit is judged on: each governed one that leaves content at its path, by its staged blob. */
function stagedToJudge(
  changes: readonly StagedChange[],
  isGoverned: (path: string, link?: boolean) => boolean,
  base: string | null,
): FileToJudge[] {
  return changes
    .filter((c) => c.status !== 'D' && isGoverned(c.path, isLink(c)))
    .map((c) => ({
      path: c.path,
      blob: c.blob,
      submodule: c.submodule,
      symlink: c.symlink,
      replaces: c.replaces,
      ...(c.replaces && base !== null ? { replacedAt: base } : {}),
    }));
}

/**
 * The governed paths a commit removes, and whether the policy refuses it. A rename judges its new path and removes its
 * old one: moving a file out of governance is deleting it there.
 */
function governedDeletions(
  removed: ReadonlyArray<{ path: string; link: boolean }>,
  isGoverned: (path: string, link?: boolean) => boolean,
  policy: Policy,
  matcher: ReturnType<typeof governedMatcher>,
): CheckReport['deletions'] {
  return removed
    .filter((r) => isGoverned(r.path, r.link))
    .map((r) => {
      const refusal = deletionRefusal(policy, r.path, matcher, r.link);
      return { path: r.path, blocks: refusal !== null, reason: refusal?.reason ?? null, kind: refusal?.kind };
    });
}

/**
 * A governance file of the rules in force stays one when the staged policy moves the keys: deleting it (a `git mv` of
 * the keys directory) is refused, as the server and verify judge it.
 */
function refuseGovernanceDeletions(
  deletions: CheckReport['deletions'],
  removed: ReadonlyArray<{ path: string }>,
  policyInForce: Policy,
): void {
  for (const r of removed.filter((r) => isGovernanceFile(policyInForce, r.path))) {
    const at = deletions.find((d) => d.path === r.path);
    if (at) Object.assign(at, { blocks: true, ...GOVERNANCE_DELETION });
    else deletions.push({ path: r.path, blocks: true, ...GOVERNANCE_DELETION });
  }
}

/**
 * The paths the ledger ever recorded, read only when some path's governance depends on it: a path the policy
 * protects, excludes, or names as a governance file is decided without it, and the first read of a large ledger
 * (no cache yet) costs seconds.
 */
async function recordedPathsFor(
  repo: Repository,
  notesAt: string | null,
  policy: Policy,
  files: ReadonlyArray<{ path: string }>,
): Promise<ReadonlySet<string>> {
  const matcher = governedMatcher(policy);
  return files.some((f) => matcher.classify(f.path) === 'if-recorded')
    ? loadRecordedPaths(repo.ledger, notesAt, repo.cacheDir)
    : NOTHING_RECORDED;
}

const NOTHING_RECORDED: ReadonlySet<string> = new Set();

/** judgeFiles with the decisions cached for this ledger tip and governance, and the path index read on demand. */
async function judgeWithCache(
  repo: Repository,
  files: FileToJudge[],
  governance: Governance,
  anchor: Governance | undefined,
  notesAt: string | null,
): Promise<Judgement[]> {
  if (files.length === 0) return [];
  const decisions = await DecisionCache.open(repo.cacheDir, notesAt, governance, anchor, {
    cwd: repo.cwd,
    env: repo.env,
  });
  const judged = await judgeFiles(files, {
    governance,
    anchor,
    ledger: repo.ledger,
    notesAt,
    index: () => loadPathIndex(repo.ledger, notesAt, repo.cacheDir),
    batch: repo.objects,
    decisions,
    historyOf: (commit, path) => pathHistory(repo, commit, path),
  });
  await decisions.save();
  return judged;
}

/**
 * During a merge (`git merge`, `git pull`), a refused file whose staged content is exactly a merged branch's is
 * judged again by that branch's own rules, which already accepted it there: merging the default branch into a
 * feature branch brings the default branch's policy and keys as that branch approved them, perhaps by a reviewer the
 * feature branch's older trust root does not list yet, as long as that branch holds every change of HEAD's rules and
 * its policy and keys were each admitted by the rules before them. (The server judges the push by the ref's own rules as well, and skips what the default
 * branch holds; this gate is the early word, not the last.)
 */
async function takenFromMerged(
  repo: Repository,
  files: readonly FileToJudge[],
  judged: Judgement[],
  notesAt: string | null,
  defaultBranch: DefaultBranchRules,
): Promise<Judgement[]> {
  let out = judged;
  // An octopus merge merges several: each is asked about what it holds.
  for (const merged of judged.every((j) => j.promoted) ? [] : await mergedCommits(repo)) {
    const taken: FileToJudge[] = [];
    for (const [i, j] of out.entries()) {
      if (!j.promoted && (await repo.objects.read(`${merged}:${j.path}`))?.oid === j.blob)
        taken.push(files[i]!);
    }
    const theirs = gitSnapshot(repo.cwd, repo.objects, merged, repo.env);
    if (taken.length === 0 || (await theirs.readFile(POLICY_PATH)) === null) continue;
    // Bound by origin's default branch as the merge's own side is (rt62 f01): else what a key revoked there approved
    // would come in through a merge.
    const own = await loadGovernance(theirs).catch(() => null);
    const rules = own && defaultBranch.bind(own);
    if (rules === null || !(await admittedAlongItsHistory(repo, merged, notesAt))) continue;
    const again = new Map(
      (await judgeWithCache(repo, taken, rules, rules, notesAt))
        .filter((j) => j.promoted)
        .map((j) => [j.path, j]),
    );
    const why = `as the branch being merged (${merged.slice(0, 12)}) holds it, under its own rules`;
    out = out.map((j) => {
      const promoted = again.get(j.path);
      return promoted?.blob === j.blob ? { ...promoted, reason: `${promoted.reason}, ${why}` } : j;
    });
  }
  return out;
}

/**
 * Whether the rules at `commit` may judge what a merge takes from it: they hold every change of HEAD's rules, and
 * each version of its policy and keys was admitted under the rules before it (verify's history walk). A branch whose
 * key approved itself, that adopted on its own, or that forked before HEAD raised its threshold or revoked a key must
 * not have its keys judge what the merge takes from it.
 */
async function admittedAlongItsHistory(
  repo: Repository,
  commit: string,
  notesAt: string | null,
): Promise<boolean> {
  // Loaded when asked: governance-history.ts builds on this module.
  const { holdsGovernanceOf, unapprovedGovernanceChanges } = await import('./governance-history.js');
  // An orphan, a line that adopted on its own, or a branch from before HEAD's last change of its rules: its rules are
  // not HEAD's, nor grown from them.
  if (!(await holdsGovernanceOf(repo, commit, 'HEAD'))) return false;
  return (await unapprovedGovernanceChanges(repo, commit, notesAt)).length === 0;
}

/**
 * The commits being merged: MERGE_HEAD's once a merge stopped (conflicts; `git commit` concludes it). For the commit
 * `git merge` or `git pull` makes itself, git runs pre-merge-commit before writing MERGE_HEAD, and says what it
 * merges only in GIT_REFLOG_ACTION (`merge <name>...`) and, for a pull, in FETCH_HEAD's lines for the merge.
 */
async function mergedCommits(repo: Repository): Promise<string[]> {
  const commitsOf = async (names: readonly string[]) => {
    const objects = await Promise.all(names.map((name) => repo.objects.read(`${name}^{commit}`)));
    return objects.flatMap((o) => (o?.type === 'commit' ? [o.oid] : []));
  };
  const lines = async (file: string) =>
    (await readFile(path.join(repo.layout.gitDir, file), 'utf8').catch(() => '')).split('\n').filter(Boolean);
  const stopped = await lines('MERGE_HEAD');
  if (stopped.length > 0) return commitsOf(stopped);
  const [action, ...args] = ((repo.env ?? process.env).GIT_REFLOG_ACTION ?? '').split(' ');
  if (action === 'merge') return commitsOf(args.filter((name) => name && !name.startsWith('-')));
  if (action === 'pull') {
    const forMerge = (await lines('FETCH_HEAD')).filter((l) => !l.includes('\tnot-for-merge\t'));
    return commitsOf(forMerge.map((l) => l.slice(0, l.indexOf('\t'))));
  }
  return [];
}

/**
 * The staged policy and its blob id; when the commit deletes it, HEAD's (blob null), so that the deletion itself is
 * judged (and refused) rather than the question going unanswered. A staged policy that validates is remembered for
 * the hook's quick path (quiet-commit.ts). Null on a branch that has neither in a repository adopted on another (it
 * has a ledger, and the work tree holds no policy that was forgotten in `git add`): a branch from before the
 * adoption, or an orphan such as gh-pages, where nothing is governed; a server judges a push of it by its default
 * branch's policy.
 */
async function stagedPolicy(
  repo: Repository,
  snapshot: Snapshot,
  top: string,
): Promise<{ policy: Policy; blob: string | null } | null> {
  const staged = await repo.objects.read(`:${POLICY_PATH}`);
  if (staged?.type === 'blob') {
    const policy = parsePolicy(staged.content.toString('utf8'), `${POLICY_PATH} (${snapshot.label})`);
    await rememberValidPolicy(repo.cacheDir, staged.oid, policy);
    return { policy, blob: staged.oid };
  }
  const head = await repo.objects.read('HEAD');
  if (head?.type === 'commit') {
    const committed = gitSnapshot(repo.cwd, repo.objects, head.oid, repo.env);
    if ((await committed.readFile(POLICY_PATH)) !== null)
      return { policy: await loadPolicy(committed), blob: null };
  }
  if (!existsSync(path.join(top, POLICY_PATH)) && (await repo.ledger.tip()) !== null) return null;
  return { policy: await loadPolicy(snapshot), blob: null }; // neither has one: the usual "run init" answer
}

const NO_POLICY_HERE = `this commit's branch has no ${POLICY_PATH} (it starts before the adoption, or is an orphan such as gh-pages), so nothing is governed here and nothing was judged; a server judges a push of it by its default branch's policy`;

/** The ledger's tip through the object reader the check already has open (one spawn fewer than rev-parse). */
async function notesTip(repo: Repository): Promise<string | null> {
  const object = await repo.objects.readRef(repo.ledger.ref);
  if (object && object.type !== 'commit') throw damagedLedger(repo.ledger.ref, object.type, object.oid);
  return object ? object.oid : null;
}

/** The empty tree's id in each object format (git knows this object without storing it). */
const EMPTY_TREE = {
  sha1: '4b825dc642cb6eb9a060e54bf8d69288fbee4904',
  sha256: '6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321',
} as const;

/** The index against HEAD (or the empty tree before the first commit), as stagedDiffArgs reads it. */
export async function stagedChanges(
  repo: Repository,
): Promise<{ base: string | null; changes: StagedChange[] }> {
  const head = await repo.objects.read('HEAD');
  const base = head && head.type === 'commit' ? head.oid : null;
  const out = await git(stagedDiffArgs(base ?? EMPTY_TREE[repo.layout.objectFormat]), {
    cwd: repo.cwd,
    env: repo.env,
  });
  return { base, changes: parseRawDiff(splitZ(out)) };
}

/** A governed path in conflict has no staged content to judge yet (git commits nothing before it is resolved either). */
function refuseUnmerged(changes: readonly StagedChange[]): void {
  const unmerged = changes.filter((c) => c.status === 'U').map((c) => shownPath(c.path));
  if (unmerged.length === 0) return;
  throw new DelegateGitError(
    'GIT',
    `Governed files are in conflict (${unmerged.join(', ')}), so the index holds no content of theirs to judge yet. Resolve each and \`git add\` it, then check again.`,
  );
}

/** Where a clone keeps its remote's default branch as last fetched (`git clone` sets it; `git remote set-head`). */
const DEFAULT_BRANCH_REF = 'refs/remotes/origin/HEAD';

export interface DefaultBranchRules {
  /** The commit DEFAULT_BRANCH_REF names, or null: what the quick answer's cache is keyed by. */
  tip: string | null;
  /** The keys it revokes (keyid → when), and where it was read ("origin/main at 1a2b3c4d5e6f, as last fetched"). */
  revoked: ReadonlyMap<string, number>;
  source: string;
  /** `own` with the default branch's revocations (the same object when they add none). */
  bind(own: Governance): Governance;
  /** A refusal's reason, saying where a key it names as revoked was revoked. */
  where(reason: string, governance: Governance): string;
}

/**
 * The revocations of origin's default branch as last fetched: the server applies them to a push of any branch
 * (withRevocationsOf), so the commit hook and `check` do too, and refuse on a branch made before a revocation what
 * its push will be refused for. None where there is no such ref, it is `base` (the commit judged from), or its rules
 * cannot be read (revoking nothing, as on the server).
 */
export async function defaultBranchRules(repo: Repository, base: string | null): Promise<DefaultBranchRules> {
  const tip = (await repo.objects.readRef(DEFAULT_BRANCH_REF))?.oid ?? null;
  const commit = tip === null ? null : ((await repo.objects.read(`${tip}^{commit}`))?.oid ?? null);
  const rules = commit === null || commit === base ? null : await defaultBranchGovernance(repo, commit);
  // Named as the clone names it, with the commit read: a stale origin/HEAD (the server's default branch changed
  // since) shows in the message itself (rt62 f03).
  const named =
    rules === null ? '' : `${await defaultBranchName(repo)} at ${commit!.slice(0, 12)}, as last fetched`;
  const binding = rules && { ...rules, source: named };
  return {
    tip,
    revoked: new Map(
      (binding?.trustRoot.keys ?? []).flatMap((k) => (k.revoked === undefined ? [] : [[k.keyid, k.revoked]])),
    ),
    source: named,
    bind: (own) => (binding ? withRevocationsOf(own, binding) : own),
    where: (reason, governance) =>
      revokedWhere(reason, governance.trustRoot, `on origin's default branch (${named})`),
  };
}

/**
 * The rules at `commit` of origin's default branch, or null where they cannot be read. In a partial clone its key
 * files may not be here yet (a fetch brings commits and trees, not blobs): git fetches each as it is read, and where
 * the remote cannot be reached the reader fails. So there they are read through a reader of their own, whose failure
 * leaves the check's reader working (rt62 f04: offline, every commit of a governed file on another branch exited 2).
 */
async function defaultBranchGovernance(repo: Repository, commit: string): Promise<Governance | null> {
  const partial = await PartialClone.of({ cwd: repo.cwd, env: repo.env, commonDir: repo.layout.commonDir });
  const reader = partial ? new CatFileBatch({ cwd: repo.cwd, env: repo.env }) : repo.objects;
  try {
    return await loadGovernance(gitSnapshot(repo.cwd, reader, commit, repo.env));
  } catch {
    return null;
  } finally {
    if (reader !== repo.objects) await reader.close().catch(() => {});
  }
}

/** The branch DEFAULT_BRANCH_REF names (`origin/main`), or the ref itself where it is no symbolic ref. */
async function defaultBranchName(repo: Repository): Promise<string> {
  const read = await gitTry(['symbolic-ref', '-q', '--short', DEFAULT_BRANCH_REF], {
    cwd: repo.cwd,
    env: repo.env,
  });
  const name = read.code === 0 ? read.stdout.toString('utf8').trim() : '';
  return name === '' ? 'origin/HEAD' : name;
}

/**
 * The rules committed at `commit` (HEAD), which judge the staged change. When they cannot be read (a corrupt policy
 * or key file committed past the hook, or pulled from a host without one), the last readable ones in its
 * first-parent history: otherwise the commit that repairs them could never be made.
 */
async function committedGovernance(repo: Repository, commit: string | null): Promise<Governance | undefined> {
  let damaged: unknown;
  for (let at = commit, step = 0; at !== null && step < REPAIR_DEPTH; step++) {
    const snapshot = gitSnapshot(repo.cwd, repo.objects, at, repo.env);
    if ((await snapshot.readFile(POLICY_PATH)) === null) break;
    try {
      return await loadGovernance(snapshot);
    } catch (error) {
      if (!isDelegateGitError(error)) throw error;
      damaged ??= error;
    }
    at = (await repo.objects.read(`${at}^1`))?.oid ?? null;
  }
  if (damaged !== undefined) throw damaged;
  return undefined;
}

/**
 * The rules in force on the checkout: HEAD's (or, where damaged, the nearest readable first parent's). The commit
 * hook judges the policy and key files by them, not by the rules a change brings, so `check` and `attest` do too
 * (admin audit a04: a threshold raised in the work tree read "not promoted" for a change the hook accepts). Undefined
 * without a HEAD holding a policy (not adopted yet), or where none can be read: the work tree's rules judge then.
 */
export async function rulesInForce(repo: Repository): Promise<Governance | undefined> {
  const head = (await repo.objects.read('HEAD^{commit}'))?.oid ?? null;
  return committedGovernance(repo, head).catch(() => undefined);
}

/**
 * Each policy or key file with the version at HEAD it replaces (FileToJudge.replaces), as the commit hook judges a
 * change of them: an approval older than that version's admission does not count (going back to an earlier version
 * needs a new one). Only where rules are in force (`anchor`).
 */
export async function withVersionsReplaced(
  repo: Repository,
  files: readonly FileToJudge[],
  anchor: Governance | undefined,
): Promise<FileToJudge[]> {
  const head = anchor && (await repo.objects.read('HEAD^{commit}'))?.oid;
  if (!anchor || !head) return [...files];
  return Promise.all(
    files.map(async (f) => {
      if (!isGovernanceFile(anchor.policy, f.path)) return f;
      const before = await repo.objects.read(`${head}:${f.path}`);
      return before?.type === 'blob' && before.oid !== f.blob
        ? { ...f, replaces: before.oid, replacedAt: head }
        : f;
    }),
  );
}

/** How far back committedGovernance looks for rules it can read. */
const REPAIR_DEPTH = 1000;

/** The commit `rev` names; refused (GIT) when it names none, an unborn HEAD said as such. */
export async function resolveCommit(repo: Repository, rev: string): Promise<string> {
  const opts = { cwd: repo.cwd, env: repo.env };
  const r = await gitTry(['rev-parse', '--verify', '-q', `${rev}^{commit}`], opts);
  if (r.code === 0) return r.stdout.toString('utf8').trim();
  const branch = rev === 'HEAD' ? await gitTry(['symbolic-ref', '-q', '--short', 'HEAD'], opts) : null;
  if (branch?.code === 0) {
    throw new DelegateGitError(
      'GIT',
      `HEAD has no commit yet (branch ${branch.stdout.toString('utf8').trim()} is unborn): there is no revision to judge until the first commit.`,
    );
  }
  // A tree or blob id is in the repository, just not a commit: say what it is rather than that it is missing.
  const other = rev.startsWith('-') ? null : await gitTry(['cat-file', '-t', `${rev}^{}`], opts);
  const kind = other?.code === 0 ? other.stdout.toString('utf8').trim() : null;
  throw new DelegateGitError(
    'GIT',
    kind
      ? `"${rev}" names a ${kind}, not a commit. Name a branch, tag or commit id.`
      : `"${rev}" is not a commit in this repository. Name a branch, tag or commit id.`,
  );
}

function requireWorkTree(repo: Repository): string {
  if (repo.layout.topLevel === null) {
    throw new DelegateGitError(
      'NOT_A_REPOSITORY',
      repo.layout.isBare
        ? 'This is a bare repository: there is no work tree or index to check. Use --rev <rev>.'
        : 'This directory is inside the git directory, not the work tree: run this in the work tree, or use --rev <rev>.',
    );
  }
  return repo.layout.topLevel;
}

export function toRepositoryPath(top: string, cwd: string, p: string): string {
  const abs = path.resolve(cwd, p);
  // The top level is a physical path (git's); a path named through a symbolic link to the checkout (or to a
  // directory in it) is placed by its directory's physical path. The file itself stays as named: a link there is a
  // file of the repository.
  const rel = inside(top, abs) ?? inside(top, path.join(physical(path.dirname(abs)), path.basename(abs)));
  if (rel === null)
    throw new DelegateGitError('USAGE', `${p} is outside the repository at ${top}. Name a file inside it.`);
  const named = rel.split(path.sep).join('/');
  // git refuses such a path in any tree or index (its verify_path, whatever the case): no commit can hold it, and a
  // record of it would carry a hash of local git state (a config holding a remote's token) into the shared ledger.
  if (named.split('/').some((segment) => segment.toLowerCase() === '.git'))
    throw new DelegateGitError(
      'USAGE',
      `${p} is inside a git directory (.git), which no commit can hold. Name a file of the work tree.`,
    );
  // git's rule too ("beyond a symbolic link"): no commit holds a file under a link, and hashing through one reads
  // wherever it leads, the git directory included (`src/gd -> ../.git` made `src/gd/config` its config; rt53 f05).
  // The last component may be a link: git tracks a link as a file, and it is hashed as its target's text.
  const link = directoriesOf(named).find((dir) => isSymbolicLink(path.join(top, dir)));
  if (link !== undefined)
    throw new DelegateGitError(
      'USAGE',
      `${p} is beyond a symbolic link (${link}), so it is no file of the repository: git never reads a file through a link, and the link may lead anywhere, the git directory included. Name the file where it really is, or the link itself.`,
    );
  return named;
}

/** The directories above a repository path, shallowest first: `a/b/c` gives `a`, `a/b`. */
function directoriesOf(named: string): string[] {
  const segments = named.split('/');
  return segments.slice(1).map((_, i) => segments.slice(0, i + 1).join('/'));
}

function isSymbolicLink(file: string): boolean {
  try {
    return lstatSync(file).isSymbolicLink();
  } catch {
    return false; // nothing there (or a file where a directory was named): no link to pass through
  }
}

/** `abs` relative to `top` when it lies beneath it (`..weird.ts` does; `../x` does not); null for `top` itself or anywhere else. */
function inside(top: string, abs: string): string | null {
  return relativeWithin(top, abs) || null;
}

function physical(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return dir; // a directory that does not exist is named as it is
  }
}
