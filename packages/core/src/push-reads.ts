import { CatFileBatch, git, gitTry } from './git.js';
import { type Governance, loadGovernance, withRevocationsOf } from './governance.js';
import { KeptObjects } from './kept-objects.js';
import { type GovernedMatcher, governedMatcher, POLICY_PATH, type Policy, parsePolicy } from './policy.js';
import { early } from './promises.js';
import { isZeroId, type RefUpdate } from './push-judgement.js';
import type { Repository } from './repository.js';
import { holdsNothingJudged, type ReviewRefs, reviewRefsIn } from './review-refs.js';
import { gitSnapshot } from './snapshot.js';

/** Git reads a push needs more than once (the default branch, a commit's governance), each made once. */
export class PushReads {
  private branch: Promise<string | null> | null = null;
  private head: Promise<string | null> | null = null;
  private readonly commits = new Map<string, Promise<string | null>>();
  private readonly policies = new Map<string, Promise<boolean>>();
  private readonly governance = new Map<string, Promise<Governance>>();
  private readonly governanceByRules = new Map<string, Promise<Governance>>();
  private readonly refGovernance = new Map<string, Promise<Governance>>();
  private readonly parsedPolicies = new Map<string, Policy | null>();
  private readonly rules = new Map<string, Promise<string>>();
  private adopter: Promise<RefUpdate | null> | null = null;
  private content: Promise<boolean> | null = null;
  private review: Promise<ReviewRefs> | null = null;
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
    /** Whose revocations bind every ref (refGovernanceAt): the default branch's commit unless given. */
    private readonly revocationsAt?: string,
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
    if (update && !isZeroId(update.oldId)) load(this.commit(update.oldId));
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
      const u = this.updates.find((x) => x.ref === branch && !isZeroId(x.newId));
      if (u === undefined) return null;
      const head = await this.headCommit();
      if (head === null ? await this.holdsContent() : await this.hasPolicy(head)) return null;
      const tip = await this.commit(u.newId);
      return tip !== null && (await this.hasPolicy(tip)) ? u : null;
    })();
    return this.adopter;
  }

  /** Whether any ref but a notes or review ref exists here: content the policy in force was meant to govern. */
  holdsContent(): Promise<boolean> {
    this.content ??= Promise.all([
      git(['for-each-ref', '--format=%(refname)'], { cwd: this.repo.cwd, env: this.repo.env }),
      this.reviewRefs(),
    ]).then(([refs, review]) =>
      refs
        .toString('utf8')
        .split('\n')
        .some((ref) => ref !== '' && !ref.startsWith('refs/notes/') && !holdsNothingJudged(ref, review)),
    );
    return this.content;
  }

  /** The namespaces this server's administrator leaves to review (review-refs.ts): none unless configured. */
  reviewRefs(): Promise<ReviewRefs> {
    this.review ??= gitTry(['config', '--get-all', 'delegate-git.reviewRefs'], {
      cwd: this.repo.cwd,
      env: this.repo.env,
    }).then((r) => {
      // 1: no such setting. Anything else unread is refused, not read as "none".
      if (r.code === 1) return { prefixes: [] };
      if (r.code !== 0)
        return { invalid: `the server's git configuration cannot be read (${r.stderr.trim()})` };
      // An empty value is one too (and refused), not none (rt59 f06).
      const values = r.stdout.toString('utf8').replace(/\n$/, '').split('\n');
      return reviewRefsIn(values, this.repo.env ?? process.env);
    });
    return this.review;
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

  /**
   * The governance `ref`, whose rules are `commit`'s, is judged by: those rules, with the revocations of the default
   * branch (withRevocationsOf), or of `revocationsAt`. Another ref also takes those the default branch's new tip
   * brings in this same push (red team r04: one atomic push revoking a key on the default branch and bringing what
   * it alone approved to an old branch); the default branch itself is judged by its rules before the push, under
   * which a reviewer may approve the revocation of their own key. Once per commit and ref, so that every question
   * about one ref gets the same object.
   */
  refGovernanceAt(commit: string, ref?: string): Promise<Governance> {
    const key = `${commit}\0${ref ?? ''}`;
    let combined = this.refGovernance.get(key);
    if (!combined) {
      combined = (async () => {
        const [own, before, after] = await Promise.all([
          this.governanceAt(commit),
          this.revocationsAt === undefined ? this.headCommit() : Promise.resolve(this.revocationsAt),
          this.pushedDefaultTip(ref),
        ]);
        let bound = own;
        for (const at of new Set([before, after])) {
          if (at === null || at === commit) continue;
          // A default branch whose rules cannot be read revokes nothing here: its own pushes say what is wrong.
          const revoking = await this.governanceAt(at).catch(() => null);
          if (revoking) bound = withRevocationsOf(bound, revoking);
        }
        return bound;
      })();
      this.refGovernance.set(key, combined);
    }
    return combined;
  }

  /** The default branch's new tip when this push moves it and `ref` is another ref; null otherwise. */
  private async pushedDefaultTip(ref: string | undefined): Promise<string | null> {
    if (ref === undefined || this.revocationsAt !== undefined) return null;
    const branch = await this.defaultBranch();
    const u = this.updates.find((x) => x.ref === branch && !isZeroId(x.newId));
    return u === undefined || ref === branch ? null : this.commit(u.newId);
  }
}

/** The commit a ref names before the push; null for a new ref, or one naming no commit. */
export function previousTip(reads: PushReads, update: RefUpdate | null): Promise<string | null> {
  return update && !isZeroId(update.oldId) ? reads.commit(update.oldId) : Promise.resolve(null);
}

/** The commit the adopting update of this push brings (what the default branch will hold), as a list of none or one. */
export async function adoptedTip(reads: PushReads): Promise<string[]> {
  const adopting = await reads.adoptingUpdate();
  const tip = adopting && (await reads.commit(adopting.newId));
  return tip ? [tip] : [];
}
