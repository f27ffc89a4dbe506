/**
 * The server gate (DESIGN 4.2, pre-receive). Everything is judged by the policy and trust root already in force on
 * the target (never the ones being pushed), against the ledger as it will be after the push. Objects are read
 * through the quarantine git provides in the hook's environment; no ref is updated here.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parentsIn } from './commit-ancestry.js';
import { DecisionCache } from './decision-cache.js';
import { collisionsWithAdded, namesCanCollide } from './fold-collisions.js';
import { CatFileBatch, git, gitTry } from './git.js';
import { type Governance, loadGovernance } from './governance.js';
import { recordedAsCheckedOut } from './governed-paths.js';
import { governedFiles, isLink, judgeFiles, type LinkedEntry, revisionAnchor } from './judge.js';
import { KeptObjects } from './kept-objects.js';
import { keysMove, leftBehind } from './keys-move.js';
import type { LedgerChange } from './ledger-change.js';
import { ForeignEntries, type ForeignEntry, whyNotANote } from './notes-format.js';
import { LEDGER_REF, NotesLedger } from './notes-ledger.js';
import { NotesTree } from './notes-tree.js';
import { PathHistories, pathHistory } from './path-history.js';
import { type KnownAddition, loadPathIndex, loadRecordedPaths, type PathIndex } from './path-index.js';
import {
  deletionRefusal,
  type GovernedMatcher,
  governedMatcher,
  isGovernanceFile,
  POLICY_PATH,
  type Policy,
  parsePolicy,
  type RefusalKind,
} from './policy.js';
import {
  type CheckedPromotions,
  type LedgerCheck,
  NOT_CHECKED,
  startLedgerCheck,
} from './push-ledger-check.js';
import {
  changesBetween,
  changesBetweenMany,
  changesFrom,
  filesAt,
  type Introduced,
  type NewChanges,
  type NewCommits,
  newChanges,
  newChangesOfMany,
  treeRefChanges,
  walkNewCommits,
} from './pushed-changes.js';
import { shadowsOf } from './ref-shadows.js';
import type { Repository } from './repository.js';
import { shownPath } from './shown-path.js';
import { gitSnapshot, treeFiles } from './snapshot.js';

export { LEDGER_REF };

export interface RefUpdate {
  oldId: string;
  newId: string;
  ref: string;
}

export interface PushRefusal {
  ref: string;
  commit?: string;
  path?: string;
  reason: string;
  /**
   * For a refused path: what it needs (no kind: content to promote). `ledger line`: a line the ledger update adds that
   * may not enter it. `repeated ref`: a ref the push's commands name more than once (a client of one's own), which no
   * advice about the ledger helps.
   */
  kind?: RefusalKind | 'ledger line' | 'repeated ref';
  /** Refused by the rules the push brings, not by those in force (refusedByPushedRules): pushing those first is no way out. */
  byPushedRules?: true;
}

export interface PushJudgement {
  refusals: PushRefusal[];
  /** True when no policy was in force anywhere and the pushed one was trusted on first push. */
  bootstrap: boolean;
  /** Refs whose push changes the policy file or the trust root in force on them (judged by the rules before it). */
  changingRules: string[];
  commits: number;
  files: number;
  noteLines: number;
}

const ZERO = /^0+$/;

/** A judgement before anything is judged: what judgePush fills in, and all a push refused on its commands gets. */
export function emptyJudgement(refusals: PushRefusal[] = []): PushJudgement {
  return { refusals, bootstrap: false, changingRules: [], commits: 0, files: 0, noteLines: 0 };
}

export interface JudgePushOptions {
  /**
   * The commit of the protected branch, when not the one HEAD names: `verify --since` judges a revision as a push
   * onto the commit verified last, in a clone whose HEAD is whatever CI checked out.
   */
  defaultBranchAt?: string;
}

export async function judgePush(
  repo: Repository,
  updates: RefUpdate[],
  opts: JudgePushOptions = {},
): Promise<PushJudgement> {
  const result = emptyJudgement();
  const reads = new PushReads(repo, updates, opts.defaultBranchAt);
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
  const notesUpdate = updates.find((u) => u.ref === LEDGER_REF);
  for (const u of updates.filter((x) => isReplaceRef(x.ref) && !ZERO.test(x.newId)))
    result.refusals.push({ ref: u.ref, reason: REPLACE_REFUSED });
  for (const u of updates.filter((x) => posesAsLedger(x.ref)))
    result.refusals.push({ ref: u.ref, reason: POSES_AS_LEDGER });
  const detours = ledgerDetours(repo, updates);
  // Every other ref is content anyone can check out, a notes ref too (`git checkout refs/notes/x` gives its files).
  const contentUpdates = updates.filter(
    (u) => u.ref !== LEDGER_REF && !posesAsLedger(u.ref) && !isReplaceRef(u.ref) && !ZERO.test(u.newId),
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
    notesUpdate && !ZERO.test(notesUpdate.newId) ? early(alongUpdate(repo, notesUpdate)) : null;
  const notesAfterRead = early(
    notesUpdate && !ZERO.test(notesUpdate.newId) ? Promise.resolve(notesUpdate.newId) : repo.ledger.tip(),
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

/** Any spelling: loose refs on a server whose file system ignores case put `refs/REPLACE/x` where git reads. */
function isReplaceRef(ref: string): boolean {
  return ref.toLowerCase().startsWith('refs/replace/');
}

/**
 * A replace ref makes git read one object in place of another wherever it is reachable: `git show`, `git archive` and
 * every checkout on the server and in mirror clones would hold content no gate judged (the gates read objects as
 * stored). Nothing delegate-git governs needs one, so none is taken; removing one is fine.
 */
const REPLACE_REFUSED =
  'a replace ref makes git show other content in place of an object wherever it is read (the server, archives, mirror clones), which no gate judges: push the change as a commit instead';

const LEDGER_SHADOWS = shadowsOf(LEDGER_REF);

/**
 * A ref git takes for the ledger though it is not it: one that differs only in case is the ledger's own file on a
 * server whose file system ignores case, and git reads `refs/tags/refs/notes/delegations` (and the like) as the
 * ledger in a clone that has none.
 */
function posesAsLedger(ref: string): boolean {
  const folded = ref.toLowerCase();
  return ref !== LEDGER_REF && (folded === LEDGER_REF || LEDGER_SHADOWS.includes(folded));
}

const POSES_AS_LEDGER = `git reads this name as ${LEDGER_REF} (where case is ignored, or in a clone without the ledger): push the ledger by its own name`;

/**
 * Ways around the ledger's checks through symbolic refs here (ones an administrator made). When the ledger is a
 * symbolic ref, the ref its chain ends at (which may not exist yet) is the ledger; and a pushed symbolic ref whose
 * chain ends where the ledger's does (an alias, or a link in the middle of the ledger's own chain, dangling or not)
 * moves, creates or deletes the ledger. Either is pushed as the ledger by its own name, where its checks run.
 */
function ledgerDetours(repo: Repository, updates: readonly RefUpdate[]): PushRefusal[] {
  const ledgerEnd = chainEnd(repo.layout.commonDir, LEDGER_REF);
  const refusals: PushRefusal[] = [];
  for (const { ref } of updates) {
    if (ref === LEDGER_REF) continue;
    if (ref === ledgerEnd)
      refusals.push({
        ref,
        reason: `${LEDGER_REF} is a symbolic ref to this one here: ${THROUGH_THE_LEDGER}`,
      });
    else if (chainEnd(repo.layout.commonDir, ref) === ledgerEnd)
      refusals.push({
        ref,
        reason: `a symbolic ref here that leads where ${LEDGER_REF} does: ${THROUGH_THE_LEDGER}`,
      });
  }
  return refusals;
}

/**
 * The name a chain of symbolic refs from `ref` ends at (`ref` itself when it is none), read from git's loose ref
 * files, where a symbolic ref lives (`ref: <name>`), dangling ones included, which git's listings leave out. As git,
 * no more than five links are followed.
 */
function chainEnd(commonDir: string, ref: string): string {
  let at = ref;
  for (let hop = 0; hop < 5; hop++) {
    let text: string;
    try {
      text = readFileSync(path.join(commonDir, at), 'utf8');
    } catch {
      return at;
    }
    const next = /^ref: (refs\/\S+)\s*$/.exec(text)?.[1];
    if (next === undefined) return at;
    at = next;
  }
  return at;
}

const THROUGH_THE_LEDGER =
  'a push to it moves the ledger; push the ledger by its own name, where its checks run';

/** `load` run on the first call only; every call gets its one promise. */
function once<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | null = null;
  return () => {
    loaded ??= load();
    return loaded;
  };
}

/** A promise started before it is awaited: its rejection is handled where it is awaited, not reported as unhandled. */
function early<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

/** Git reads a push needs more than once (the default branch, a commit's governance), each made once. */
class PushReads {
  private branch: Promise<string | null> | null = null;
  private head: Promise<string | null> | null = null;
  private readonly commits = new Map<string, Promise<string | null>>();
  private readonly policies = new Map<string, Promise<boolean>>();
  private readonly governance = new Map<string, Promise<Governance>>();
  private readonly governanceByRules = new Map<string, Promise<Governance>>();
  private readonly parsedPolicies = new Map<string, Policy | null>();
  private readonly rules = new Map<string, Promise<string>>();
  private adopter: Promise<RefUpdate | null> | null = null;
  private content: Promise<boolean> | null = null;
  private readonly matchers = new WeakMap<Policy, GovernedMatcher>();
  /** The pushed blobs the ledger check hashes, kept for judging the pushed files. */
  readonly blobs: KeptObjects;
  /**
   * Policies and keys are read through their own reader: the shared one is busy with the pushed notes and blobs,
   * and every line waits for the trust root.
   */
  private readonly governanceReader: CatFileBatch;
  /** Which object a name has, without its content (the default branch's copy of each file a branch brings). */
  readonly objectIds: CatFileBatch;

  constructor(
    readonly repo: Repository,
    private readonly updates: readonly RefUpdate[],
    defaultBranchAt?: string,
  ) {
    if (defaultBranchAt !== undefined) this.head = Promise.resolve(defaultBranchAt);
    this.blobs = new KeptObjects(repo.objects, { cwd: repo.cwd, env: repo.env });
    this.governanceReader = new CatFileBatch({ cwd: repo.cwd, env: repo.env });
    this.objectIds = new CatFileBatch({ cwd: repo.cwd, env: repo.env, headersOnly: true });
  }

  /** Starts the reads `governanceInForce` will make for this update (a governance not used in the end is dropped). */
  prefetch(update: RefUpdate | null): void {
    const load = (commit: Promise<string | null>) =>
      early(commit.then((c) => (c === null ? null : early(this.governanceAt(c)))));
    if (update && !ZERO.test(update.oldId)) load(this.commit(update.oldId));
    load(this.headCommit());
  }

  async close(): Promise<void> {
    await Promise.all([this.blobs.close(), this.governanceReader.close(), this.objectIds.close()]);
  }

  /** The commit `rev` (a full id or a full ref name) names, or null when it names none. */
  commit(rev: string): Promise<string | null> {
    let found = this.commits.get(rev);
    if (!found) {
      // `rev-parse --verify <rev>^{commit}` without a process of its own: the reader resolves the same way.
      found = this.governanceReader.read(`${rev}^{commit}`).then((o) => o?.oid ?? null);
      this.commits.set(rev, found);
    }
    return found;
  }

  /** The policy's matcher, compiled once per policy. */
  matcher(policy: Policy): GovernedMatcher {
    let matcher = this.matchers.get(policy);
    if (!matcher) {
      matcher = governedMatcher(policy);
      this.matchers.set(policy, matcher);
    }
    return matcher;
  }

  /** The branch HEAD names (the default branch), or null when HEAD is detached. */
  defaultBranch(): Promise<string | null> {
    this.branch ??= gitTry(['symbolic-ref', '-q', 'HEAD'], { cwd: this.repo.cwd, env: this.repo.env }).then(
      (r) => (r.code === 0 ? r.stdout.toString().trim() : null),
    );
    return this.branch;
  }

  /** The commit of the default branch, or null when HEAD is detached or names a branch that does not exist. */
  headCommit(): Promise<string | null> {
    this.head ??= this.defaultBranch().then((ref) => (ref === null ? null : this.commit(ref)));
    return this.head;
  }

  /** Whether a commit holds a policy file (any: a corrupt one is loaded, and refused, by governanceAt). */
  hasPolicy(commit: string): Promise<boolean> {
    let held = this.policies.get(commit);
    if (!held) {
      held = this.governanceReader.read(`${commit}:${POLICY_PATH}`).then((o) => o !== null);
      this.policies.set(commit, held);
    }
    return held;
  }

  /**
   * The update that adopts delegate-git in this push: the default branch's, where no policy is in force on it yet
   * and its new tip holds one (the first push to an empty repository, or the adopting commit of one with history).
   * The push's other refs are then judged as if it had come first, by its policy, with what it holds held (a mirror
   * push of a repository moved from another server brings its old branches and tags along). Null when there is none,
   * and where HEAD names a branch that does not exist in a repository holding content: one adopted on another branch
   * must not be adopted again by a push that creates the branch HEAD names.
   */
  adoptingUpdate(): Promise<RefUpdate | null> {
    this.adopter ??= (async () => {
      const branch = await this.defaultBranch();
      const u = this.updates.find((x) => x.ref === branch && !ZERO.test(x.newId));
      if (u === undefined) return null;
      const head = await this.headCommit();
      if (head === null ? await this.holdsContent() : await this.hasPolicy(head)) return null;
      const tip = await this.commit(u.newId);
      return tip !== null && (await this.hasPolicy(tip)) ? u : null;
    })();
    return this.adopter;
  }

  /** Whether any ref but a notes ref exists here: content the policy in force was meant to govern. */
  holdsContent(): Promise<boolean> {
    this.content ??= git(['for-each-ref', '--format=%(refname)'], {
      cwd: this.repo.cwd,
      env: this.repo.env,
    }).then((refs) =>
      refs
        .toString('utf8')
        .split('\n')
        .some((ref) => ref !== '' && !ref.startsWith('refs/notes/')),
    );
    return this.content;
  }

  /**
   * Which rules a commit holds, as its policy's and keys directory's object ids: equal ids, equal rules. Read without
   * loading the keys (a push that changes no rules compares two ids per ref).
   */
  rulesAt(commit: string): Promise<string> {
    let ids = this.rules.get(commit);
    if (!ids) {
      ids = (async () => {
        const file = await this.policyFileAt(commit);
        if (file?.policy === undefined) return file?.oid ?? 'none';
        // Unreadable: judged where the governance is loaded.
        if (file.policy === null) return `${file.oid} unreadable`;
        const keys = await this.governanceReader.read(`${commit}:${file.policy.keysDir}`);
        return `${file.oid} ${keys?.oid ?? 'none'}`;
      })();
      this.rules.set(commit, ids);
    }
    return ids;
  }

  /** The policy committed at `commit`, or null when it has none or it cannot be read (judged where it is loaded). */
  async policyAt(commit: string): Promise<Policy | null> {
    return (await this.policyFileAt(commit))?.policy ?? null;
  }

  /**
   * The object at the policy's path in `commit` (null: nothing there) and, for a file, what it says (null: it cannot
   * be read), parsed once per content: a push of hundreds of branches holds one policy in all of them.
   */
  private async policyFileAt(commit: string): Promise<{ oid: string; policy?: Policy | null } | null> {
    const object = await this.governanceReader.read(`${commit}:${POLICY_PATH}`);
    if (object === null) return null;
    if (object.type !== 'blob') return { oid: object.oid };
    let policy = this.parsedPolicies.get(object.oid);
    if (policy === undefined) {
      try {
        policy = parsePolicy(object.content.toString('utf8'));
      } catch {
        policy = null;
      }
      this.parsedPolicies.set(object.oid, policy);
    }
    return { oid: object.oid, policy };
  }

  /**
   * The policy and trust root of a commit, loaded once per rules (rulesAt): one trust root object also lets every
   * line be verified once (judgeLine remembers per trust root), for the ledger check and for the pushed files alike,
   * and a push of hundreds of branches loaded and checked the same keys for each. A failure is loaded again as the
   * commit's own, so that what it says names that commit.
   */
  governanceAt(commit: string): Promise<Governance> {
    let loaded = this.governance.get(commit);
    if (!loaded) {
      const own = () =>
        loadGovernance(gitSnapshot(this.repo.cwd, this.governanceReader, commit, this.repo.env));
      loaded = this.rulesAt(commit).then((rules) => {
        const shared = this.governanceByRules.get(rules);
        if (shared) return shared.catch(own);
        const mine = own();
        this.governanceByRules.set(rules, mine);
        return mine;
      });
      this.governance.set(commit, loaded);
    }
    return loaded;
  }
}

/**
 * The commits no ref holds (notes refs aside) among and behind the tips of the new refs a push makes, found in one
 * walk: a new ref whose tip is not among them (a tag on a commit held already) brings nothing, and is not walked on
 * its own. A release pushing a thousand tags cost a git process each (rt41 f05).
 */
async function unheldCommits(reads: PushReads, updates: readonly RefUpdate[]): Promise<ReadonlySet<string>> {
  const tips = await Promise.all(
    updates.map(async (u) => ((await previousTip(reads, u)) === null ? reads.commit(u.newId) : null)),
  );
  const commits = tips.filter((tip): tip is string => tip !== null);
  if (commits.length === 0) return new Set();
  const adopted = await adoptedTip(reads);
  const out = await git(['rev-list', '--stdin', '--not', '--exclude=refs/notes/*', '--all', ...adopted], {
    cwd: reads.repo.cwd,
    env: reads.repo.env,
    input: `${commits.join('\n')}\n`,
  });
  return new Set(out.toString('utf8').split('\n').filter(Boolean));
}

/** The commit a ref names before the push; null for a new ref, or one naming no commit. */
function previousTip(reads: PushReads, update: RefUpdate | null): Promise<string | null> {
  return update && !ZERO.test(update.oldId) ? reads.commit(update.oldId) : Promise.resolve(null);
}

/**
 * The governance a ref is judged by: the policy on the ref before the push; where it has none (a new ref, or a branch
 * from before delegate-git was adopted), the default branch's. Where neither has one, the repository has not adopted
 * delegate-git yet, and a pushed policy is taken on trust (the first push, or the adopting commit of a repository
 * with history): the default branch's when this push brings it one (PushReads.adoptingUpdate), else the ref's own;
 * the ledger's lines (`update` null) are weighed by the first pushed ref holding one. Null when none may be chosen:
 * the ref holds none, or the repository holds content but its HEAD names a branch that does not exist (a server made
 * with one default branch name and pushed another), which may well have adopted it on a branch this hook cannot tell.
 */
async function governanceInForce(
  reads: PushReads,
  update: RefUpdate | null,
  result: PushJudgement,
  candidates: readonly RefUpdate[] = [],
): Promise<Governance | null> {
  const inForce = await policyCommitInForce(reads, update);
  if (inForce !== null) return reads.governanceAt(inForce);
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
async function adopts(reads: PushReads, u: RefUpdate): Promise<boolean> {
  if ((await policyCommitInForce(reads, u)) !== null) return false;
  return ((await reads.adoptingUpdate()) ?? u) === u;
}

/** The commit whose policy is in force on a ref: its tip before the push, else the default branch's; null if neither holds one. */
async function policyCommitInForce(reads: PushReads, update: RefUpdate | null): Promise<string | null> {
  const own = await previousTip(reads, update);
  if (own !== null && (await reads.hasPolicy(own))) return own;
  const head = await reads.headCommit();
  return head !== null && (await reads.hasPolicy(head)) ? head : null;
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

/** Why a ref has no governance in force (governanceInForce gave none), and what the pusher or the server's admin can do. */
async function noGovernanceReason(reads: PushReads, u?: RefUpdate): Promise<string> {
  const branch = await reads.defaultBranch();
  const headMissing = (await reads.headCommit()) === null && (await reads.holdsContent());
  if (u !== undefined && branch !== null && !headMissing)
    return `no policy is in force here yet, and this ref holds none: push ${branch} with the commit that adopts delegate-git, and the ledger, first or in the same push (git push --atomic <remote> ${branch.replace(/^refs\/heads\//, '')} ${LEDGER_REF} ...)`;
  const head = branch === null ? 'HEAD is detached' : `HEAD names ${branch}, which does not exist here`;
  return `no policy in force to judge by: ${head}. Point HEAD at the branch that holds the policy (on the server: git symbolic-ref HEAD refs/heads/<branch>) and push again`;
}

async function judgeLedgerUpdate(
  reads: PushReads,
  u: RefUpdate,
  governance: Governance | null,
  ledger: LedgerCheck,
  alongRead: Promise<AlongUpdate> | null,
  result: PushJudgement,
) {
  const refuse = (reason: string) => result.refusals.push({ ref: u.ref, reason });
  if (ZERO.test(u.newId)) return refuse('the ledger cannot be deleted (it is append-only)');
  // Every reader takes the ref as it is: a tag of a notes commit would read as damage in every clone that fetched it.
  const pushed = await reads.repo.objects.read(u.newId);
  if (pushed?.type !== 'commit')
    return refuse(`the ledger must name a notes commit, not a ${pushed?.type ?? 'missing object'}`);
  if (ledger.fastForward && ledger.change) {
    if (!(await ledger.fastForward)) {
      return refuse(
        'non-fast-forward update of the ledger (it is append-only): run `delegate-git sync` and push again',
      );
    }
    const { dropped } = await ledger.change;
    if (dropped.length > 0) {
      const blobs = [...new Set(dropped.map((d) => d.annotated.slice(0, 12)))];
      return refuse(
        `the update drops ${dropped.length} record line(s) on blob(s) ${blobs.join(', ')} (the ledger is append-only)`,
      );
    }
  }
  const along = await alongRead;
  if (along && along.dropped.length > 0)
    return refuse(
      `${droppedAlongText(along.dropped)}; push the ledger as delegate-git and \`delegate-git sync\` write it`,
    );
  const { added, foreign } = ledger.change ? await ledger.change : await wholeLedger(reads.repo, u.newId);
  // At the tip, and in every commit the update brings (a commit of content may hide in the ledger's history).
  const everywhere = new Map([...foreign, ...(along?.foreign ?? [])].map((entry) => [entry.path, entry]));
  for (const reason of foreignRefusals([...everywhere.values()])) refuse(reason);
  if (!governance)
    return refuse(
      (await reads.holdsContent())
        ? await noGovernanceReason(reads)
        : 'no policy is in force on this repository to verify the ledger against; push a branch with the policy first',
    );
  const problems = await Promise.all(
    added.map(({ annotated, lines }) => ledger.problems(governance, annotated, lines)),
  );
  let unchecked = 0;
  added.forEach(({ annotated, lines }, i) => {
    lines.forEach((_, j) => {
      result.noteLines++;
      const problem = problems[i]![j];
      if (problem === NOT_CHECKED) unchecked++;
      else if (problem)
        result.refusals.push({
          ref: u.ref,
          reason: `note on blob ${annotated.slice(0, 12)}: ${problem}`,
          kind: 'ledger line',
        });
    });
  });
  if (unchecked > 0)
    refuse(`${unchecked} more new line(s) not checked: the push is refused for the lines above already`);
}

interface AlongUpdate {
  /** Entries that are no notes in the commits the update brings, each against its first parent. */
  foreign: ForeignEntry[];
  /** Lines dropped along those commits and missing at the new tip. */
  dropped: Array<{ commit: string }>;
}

/**
 * What the notes commits a ledger update brings hold that the tips' comparison cannot see, read in one walk of them
 * (NotesLedger.walkUpdate): entries that are no notes (a commit of content may hide in the ledger's history), and
 * lines dropped along them and missing at the new tip, which `verify` finds in the history for good (rt44 f01). One
 * commit on the old tip, the usual append, is the tips' comparison itself: nothing to walk, no git process more.
 */
async function alongUpdate(repo: Repository, u: RefUpdate): Promise<AlongUpdate> {
  const older = ZERO.test(u.oldId) ? null : u.oldId;
  if (older !== null) {
    const pushed = await repo.objects.read(u.newId);
    const parents = pushed?.type === 'commit' ? parentsIn(pushed.content) : null;
    if (parents?.length === 1 && parents[0] === older) return { foreign: [], dropped: [] };
  }
  const walk = await repo.ledger.walkUpdate(u.newId, older, { foreign: true, dropped: true });
  const dropped = walk.dropped() ?? [];
  return { foreign: walk.foreign, dropped: await repo.ledger.notHeldAt(dropped, [u.newId]) };
}

/**
 * What is wrong with a ledger whose history drops lines between its tips that its tip lacks: the tips' comparison
 * cannot see them, `verify` checks the whole history, and a server could never take the history back.
 */
export function droppedAlongText(dropped: ReadonlyArray<{ commit: string }>): string {
  const commits = [...new Set(dropped.map((d) => d.commit.slice(0, 12)))];
  const named = `${commits.slice(0, 3).join(', ')}${commits.length > 3 ? ` and ${commits.length - 3} more` : ''}`;
  return `notes commit(s) ${named} drop ${dropped.length} line(s) their parents hold that the tip does not hold either (a line that was ever in the ledger stays in it: verify checks its whole history)`;
}

/** A first push of the ledger adds all of it: every note, and every entry that is no note. */
async function wholeLedger(repo: Repository, at: string): Promise<Pick<LedgerChange, 'added' | 'foreign'>> {
  const foreign = new ForeignEntries();
  const added: LedgerChange['added'] = [];
  for await (const note of repo.ledger.entries(at, foreign)) added.push(note);
  return { added, foreign: foreign.found };
}

/** Entries that are no notes named one by one in a refusal; the rest are counted. */
const FOREIGN_NAMED = 10;

/**
 * The ledger holds only notes: every reader skips anything else, so it would stay in the append-only history unread
 * and unchecked for good.
 */
function foreignRefusals(foreign: readonly ForeignEntry[]): string[] {
  const named = foreign
    .slice(0, FOREIGN_NAMED)
    .map(
      (e) => `the update adds ${shownPath(e.path)}, which is ${whyNotANote(e)}; the ledger holds only notes`,
    );
  const more = foreign.length - named.length;
  if (more > 0) named.push(`the update adds ${more} more entr${more === 1 ? 'y' : 'ies'} that are not notes`);
  return named;
}

/** The ledger as it will be after the push, as the pushed refs are judged against it. */
interface LedgerAfter {
  at: string | null;
  recordedPaths: () => Promise<Set<string>>;
  index: () => Promise<PathIndex>;
  ledger: Promise<NotesLedger>;
  /** The pushed files the ledger check already promoted while checking their notes (null: none). */
  promotions: Promise<CheckedPromotions | null>;
}

/**
 * The ledger, reading notes at `at` from one notes tree walked through the repository's object reader (the notes
 * the ledger check read are already there), instead of listing the whole notes tree for a thousand blobs.
 */
async function ledgerReadAt(
  repo: Repository,
  at: string | null,
  checked: Promise<LedgerChange> | null,
): Promise<NotesLedger> {
  if (at === null) return repo.ledger;
  const tree = checked
    ? await checked.then(
        (c) => c.newer,
        () => NotesTree.open(repo.objects, at),
      )
    : await NotesTree.open(repo.objects, at);
  return new LedgerReadAt(repo, tree);
}

class LedgerReadAt extends NotesLedger {
  constructor(
    repo: Repository,
    private readonly tree: NotesTree,
  ) {
    super({ cwd: repo.ledger.cwd, ref: repo.ledger.ref, env: repo.env });
  }

  override linesOnMany(blobs: string[], at?: string): Promise<Map<string, string[]>> {
    return at === this.tree.at ? this.tree.linesOnMany(blobs) : super.linesOnMany(blobs, at);
  }

  // Every ref's judging reads notes at this tip: through the tree already open, not a git of its own each time (a
  // push of a hundred branches started a hundred).
  protected override withReader<T>(
    at: string | undefined,
    use: (reader: NotesTree | null, batch: CatFileBatch) => Promise<T>,
    few = false,
  ): Promise<T> {
    return at === this.tree.at ? use(this.tree, this.tree.batch) : super.withReader(at, use, few);
  }
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
        reason: j.reason,
        kind: j.kind,
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
 * Whether the rules at the pushed tip differ from those in force on the ref: a push that changes them, or a new ref
 * made from a branch that changed them (judged by the default branch's, rt50 f01).
 */
async function tipChangesRules(reads: PushReads, u: RefUpdate): Promise<boolean> {
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
async function refusedByPushedRules(
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
 * When the pushed tip's policy moves the keys directory, every file there becomes a key file: each is judged as one
 * (a reviewer's approval under the rules in force, no older than the policy the move replaces: withJoiningKeys), not
 * only those the push adds (keysMovedTo). So is a move by a commit in between (one the tip may move back): verify's
 * walk judges each commit's move, and the server must not accept what it refuses.
 */
async function movedKeysRefused(
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

function firstOfEach<T>(list: readonly T[], keyOf: (item: T) => string): T[] {
  const first = new Map<string, T>();
  for (const item of list) if (!first.has(keyOf(item))) first.set(keyOf(item), item);
  return [...first.values()];
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

/** The paths the ledger recorded, read only when the policy alone does not decide some path's governance. */
async function recordedPathsFor(
  governed: GovernedMatcher,
  files: readonly LinkedEntry[],
  after: LedgerAfter,
): Promise<ReadonlySet<string>> {
  const depends = files.some((f) => governed(f.path, true, isLink(f)) !== governed(f.path, false, isLink(f)));
  return depends ? after.recordedPaths() : NOTHING_RECORDED;
}

const NOTHING_RECORDED: ReadonlySet<string> = new Set();

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
async function changesOf(
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
async function walkNewRefs(
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
    ['--exclude=refs/notes/*', '--all', ...(await adoptedTip(reads))],
  );
}

const NOTHING_NEW: NewChanges = { introduced: [], deleted: [], commits: 0 };

/** Answers made together for the refs of a push that held a commit before it; a ref not there is asked alone. */
type HeldRefAnswers<T> = ReadonlyMap<RefUpdate, T>;
type TipsDiff = Pick<NewChanges, 'introduced' | 'deleted'>;

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
async function walkHeldRefs(
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
async function diffHeldTips(
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

/** The commit the adopting update of this push brings (what the default branch will hold), as a list of none or one. */
async function adoptedTip(reads: PushReads): Promise<string[]> {
  const adopting = await reads.adoptingUpdate();
  const tip = adopting && (await reads.commit(adopting.newId));
  return tip ? [tip] : [];
}
