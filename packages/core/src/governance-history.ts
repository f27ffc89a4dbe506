/**
 * The trust root's own history, for `verify` (DESIGN 3.5, 4.2). A revision's policy and keys judge its files, so they
 * must themselves have been adopted under the rules in force before them: every commit reachable from the revision
 * that changed the policy file or the keys directory needs that change promoted under the governance of its parent
 * (reviewer approval, the parent's threshold, the parent's trust root). Otherwise a key that approved itself, once
 * committed past the local hook, would be trusted by every later revision's trust root, and CI would agree with it.
 * The commit that adopted delegate-git (no rules in force before it) is the trust anchor.
 */
import type { CheckResult } from './checks.js';
import { isDelegateGitError } from './errors.js';
import { git, gitTry, PINNED_LOG } from './git.js';
import { type Governance, loadGovernance } from './governance.js';
import { type FileToJudge, type Judgement, judgeFiles } from './judge.js';
import { keysMove, leftBehind } from './keys-move.js';
import { PathHistories } from './path-history.js';
import { loadPathIndex, type PathIndex } from './path-index.js';
import {
  DEFAULT_KEYS_DIR,
  GOVERNANCE_DELETED,
  isGovernanceFile,
  POLICY_PATH,
  parsePolicy,
  type RefusalKind,
} from './policy.js';
import type { Repository } from './repository.js';
import { gitSnapshot, splitZ, treeFiles } from './snapshot.js';
import { parseRawDiff } from './staged-changes.js';

export interface GovernanceChangeProblem {
  /** The commit that made the change. */
  commit: string;
  /** For a merge judged against a parent other than its first (mergesGoingBack): that parent. */
  parent?: string;
  path: string;
  blob: string;
  sha256: string;
  reason: string;
  kind?: RefusalKind;
}

/**
 * Whether `commit` holds every change `of` made to its policy and keys (each is an ancestor of it): then the rules
 * at `commit` are `of`'s or grew from them. A branch that forked before `of` raised its threshold or revoked a key
 * holds older rules, however clean its own history. False when git cannot tell.
 */
export async function holdsGovernanceOf(repo: Repository, commit: string, of: string): Promise<boolean> {
  const missing = await gitTry(
    ['rev-list', '-1', of, `^${commit}`, '--', ...ignoringCase(await governancePathspecs(repo, of))],
    { cwd: repo.cwd, env: repo.env },
  );
  return missing.code === 0 && missing.stdout.toString('utf8').trim() === '';
}

/**
 * Every change to the policy file or the keys directory in `commit`'s history not promoted under the rules before it.
 * `index`: the path index of the ledger at `notesAt`, when the caller has it already (verify builds it in its pass).
 */
export async function unapprovedGovernanceChanges(
  repo: Repository,
  commit: string,
  notesAt: string | null,
  index?: PathIndex,
): Promise<GovernanceChangeProblem[]> {
  const opts = { cwd: repo.cwd, env: repo.env };
  const pathspecs = await governancePathspecs(repo, commit);
  const out = await git(
    [
      'log',
      ...PINNED_LOG,
      '--raw',
      '-z',
      '--no-abbrev',
      '--no-renames',
      '--diff-merges=first-parent',
      '--format=%x01%H %P',
      commit,
      '--',
      ...ignoringCase(pathspecs),
    ],
    opts,
  );
  let known = index;
  const pathIndex = async () => {
    known ??= await loadPathIndex(repo.ledger, notesAt, repo.cacheDir);
    return known;
  };
  const inForce = new Map<string, Promise<Governance | null>>();
  const rulesBefore = (parent: string) => {
    if (!inForce.has(parent)) inForce.set(parent, governanceInForce(repo, parent, pathspecs));
    return inForce.get(parent)!;
  };

  const histories = new PathHistories(repo, commit);
  const judge: Judge = (files, governance, anchor) =>
    judgeFiles(files, {
      governance,
      anchor,
      ledger: repo.ledger,
      notesAt,
      index: pathIndex,
      batch: repo.objects,
      historyOf: (at, path) => histories.historyOf(at, path),
    });

  const problems: GovernanceChangeProblem[] = [];
  const anchors: Array<{ commit: string; governance: Governance }> = [];
  for (const commitAt of commitsOf(splitZ(out))) {
    const { id } = commitAt;
    let { parent } = commitAt;
    let changes = parseRawDiff(commitAt.fields);
    if (changes.length === 0) continue;
    let before = parent === undefined ? null : await rulesBefore(parent);
    // A branch from before the adoption that merges the adopted line ("Update branch") takes its rules from that
    // parent: the merge is judged as a change from it, not as another adoption.
    for (const other of before === null ? commitAt.others : []) {
      const rules = await rulesBefore(other);
      if (rules === null) continue;
      [parent, before] = [other, rules];
      changes = parseRawDiff(
        splitZ(
          await git(
            ['diff-tree', '-r', '-z', '--no-renames', other, id, '--', ...ignoringCase(pathspecs)],
            opts,
          ),
        ),
      );
      break;
    }
    const own = await readGovernance(repo, id);
    if (before === null) {
      // Nothing was in force before it: an adoption, the trust anchor (or not adopted yet).
      if (own !== null) anchors.push({ commit: id, governance: own });
      continue;
    }
    const governs = (path: string) =>
      isGovernanceFile(before.policy, path) || (own !== null && isGovernanceFile(own.policy, path));
    const at = `commit ${id.slice(0, 12)}`;
    for (const c of changes) {
      if (c.status === 'D' && governs(c.path))
        problems.push(deletion({ commit: id, path: c.path, blob: c.replaces! }, `deleted in ${at}`));
    }
    const edited = changes
      .filter((c) => c.status !== 'D' && governs(c.path))
      .map((c) => ({ path: c.path, blob: c.blob, replaces: c.replaces, replacedAt: parent }));
    const move = await keysMove(repo, {
      from: before.policy,
      to: own?.policy ?? null,
      files: edited,
      datedAt: parent ?? null,
      trustRoot: before.trustRoot,
      joining: (dir) => treeFiles(repo.cwd, id, [dir], repo.env),
    });
    const changed = move?.judged ?? edited;
    for (const path of move?.left ?? [])
      problems.push({
        commit: id,
        path,
        blob: '',
        sha256: '',
        reason: `${leftBehind(move!.movedTo)} (in ${at})`,
        kind: 'governance deletion',
      });
    if (changed.length === 0) continue;
    for (const j of await judge(changed, own ?? before, before)) {
      if (!j.promoted) {
        const reason = `changed in ${at} without the approval the rules in force before it required (${j.reason})`;
        problems.push({ commit: id, path: j.path, blob: j.blob, sha256: j.sha256, reason });
      }
    }
  }
  problems.push(...(await mergesGoingBack(repo, commit, pathspecs, rulesBefore, judge)));
  problems.push(...secondAnchors(anchors));
  return problems;
}

/**
 * A history holds one adoption. A branch started before it (or an orphan) that adopts again with rules and keys of
 * its own, then merged with the adopted line, would otherwise be a second trust anchor: its own keys approved
 * under nothing. Adoptions of the very same policy and keys (one adopting commit rebased or cherry-picked) are one.
 */
function secondAnchors(anchors: ReadonlyArray<{ commit: string; governance: Governance }>) {
  const rulesOf = (g: Governance) =>
    JSON.stringify([g.policy, g.trustRoot.sources.map((source) => [source.path, source.text])]);
  if (new Set(anchors.map((a) => rulesOf(a.governance))).size <= 1) return [];
  const commits = anchors.map((a) => a.commit.slice(0, 12)).join(', ');
  return anchors.map(
    (a): GovernanceChangeProblem => ({
      commit: a.commit,
      path: POLICY_PATH,
      blob: '',
      sha256: '',
      reason: `adopted in commit ${a.commit.slice(0, 12)}, one of ${anchors.length} adoptions in this history with different rules or keys (${commits}): each would be a trust anchor of its own, so a branch that adopts again could bring its own keys. Keep one adoption: start the other line again from the adopted one`,
    }),
  );
}

/**
 * A governance file deleted: refused, as pre-receive refuses it. Deleting a revoked key's file and adding its earlier
 * version back later would otherwise trust it again on its first approval (an addition replaces nothing).
 */
function deletion(at: Pick<GovernanceChangeProblem, 'commit' | 'parent' | 'path' | 'blob'>, what: string) {
  return {
    ...at,
    sha256: '',
    reason: `${what}: ${GOVERNANCE_DELETED}`,
    kind: 'governance deletion' as const,
  };
}

type Judge = (files: FileToJudge[], governance: Governance, anchor: Governance) => Promise<Judgement[]>;

/**
 * A merge takes each governance file from one side, and its first-parent diff (judged above) shows only what changed
 * against the first parent: a merge whose first parent is the older commit (`git merge -s ours` from it) puts an
 * earlier policy or key back, or drops the policy, with no diff at all. So against each other parent: where that
 * side changed a governance file after the two sides parted (its version is not the merge base's) and the merge does
 * not keep that version, the merge goes back from it, and is judged as a change from it under that side's rules.
 * A side that did not touch the file since they parted (a stale branch merged in) is not asked about it.
 */
async function mergesGoingBack(
  repo: Repository,
  commit: string,
  pathspecs: string[],
  rulesAt: (commit: string) => Promise<Governance | null>,
  judge: Judge,
): Promise<GovernanceChangeProblem[]> {
  const opts = { cwd: repo.cwd, env: repo.env };
  const pairs = (await git(['rev-list', '--merges', '--parents', commit], opts))
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .flatMap((line) => {
      const [merge, first, ...others] = line.split(' ');
      return others.map((parent) => ({ merge: merge!, first: first!, parent }));
    });
  if (pairs.length === 0) return [];
  // --always prints every pair's header, even with nothing changed, so the output lines up with the input.
  const out = await git(
    ['diff-tree', '--stdin', '--always', '-r', '-z', '--no-renames', '--', ...ignoringCase(pathspecs)],
    { ...opts, input: pairs.map((p) => `${p.merge} ${p.parent}\n`).join('') },
  );
  const problems: GovernanceChangeProblem[] = [];
  const diffs = pairDiffs(splitZ(out));
  for (const [i, pair] of pairs.entries()) {
    const changes = diffs[i] ?? [];
    if (changes.length === 0) continue;
    const bases = await mergeBases(repo, pair.first, pair.parent);
    const left: PairChange[] = [];
    for (const c of changes) if (!(await allHold(repo, bases, c.path, c.before))) left.push(c);
    if (left.length === 0) continue;
    const theirs = await rulesAt(pair.parent);
    if (theirs === null) continue; // that side had no rules to go back from
    const own = await readGovernance(repo, pair.merge);
    const governed = left.filter(
      (c) =>
        isGovernanceFile(theirs.policy, c.path) || (own !== null && isGovernanceFile(own.policy, c.path)),
    );
    const at = `merge ${pair.merge.slice(0, 12)}`;
    const from = `its parent ${pair.parent.slice(0, 12)}`;
    for (const c of governed.filter((c) => c.after === null)) {
      const where = { commit: pair.merge, parent: pair.parent, path: c.path, blob: c.before };
      problems.push(
        deletion(where, `deleted by ${at}, though ${from} changed it after the two sides parted`),
      );
    }
    const kept = governed.flatMap((c) =>
      c.after === null ? [] : [{ path: c.path, blob: c.after, replaces: c.before, replacedAt: pair.parent }],
    );
    for (const j of kept.length === 0 ? [] : await judge(kept, own ?? theirs, theirs)) {
      if (!j.promoted) {
        const reason = `${at} does not keep what ${from} changed here, without the approval the rules there required (${j.reason})`;
        problems.push({
          commit: pair.merge,
          parent: pair.parent,
          path: j.path,
          blob: j.blob,
          sha256: j.sha256,
          reason,
        });
      }
    }
  }
  return problems;
}

interface PairChange {
  path: string;
  /** The blob at the other parent. */
  before: string;
  /** The blob at the merge; null when the merge does not have the path. */
  after: string | null;
}

/** `diff-tree --stdin --always -r -z` output: for each input line in order, its changes (additions left out). */
function pairDiffs(tokens: string[]): PairChange[][] {
  const diffs: PairChange[][] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (!token.startsWith(':')) {
      if (token !== '') diffs.push([]); // a header: the pair's commit id
      continue;
    }
    const [, , before, after, status] = token.slice(1).split(' ');
    const path = tokens[++i]!;
    if (status === 'A') continue;
    diffs[diffs.length - 1]!.push({ path, before: before!, after: status === 'D' ? null : after! });
  }
  return diffs;
}

async function mergeBases(repo: Repository, a: string, b: string): Promise<string[]> {
  const out = await gitTry(['merge-base', '--all', a, b], { cwd: repo.cwd, env: repo.env });
  return out.code === 0 ? out.stdout.toString('utf8').split('\n').filter(Boolean) : [];
}

/** Whether every one of `commits` (at least one) holds `blob` at `path`. */
async function allHold(repo: Repository, commits: string[], path: string, blob: string): Promise<boolean> {
  if (commits.length === 0) return false;
  for (const c of commits) if ((await repo.objects.read(`${c}:${path}`))?.oid !== blob) return false;
  return true;
}

/**
 * The governance pathspecs as git's literal paths, ignoring case: the gates fold case when they tell a governance
 * file (`.delegate-git/KEYS/x.json` is in the keys directory on a file system that ignores case), and a walk that
 * listed only the exact spelling would judge such a change at the revision alone. (git folds ASCII case only.)
 */
function ignoringCase(pathspecs: readonly string[]): string[] {
  return pathspecs.map((p) => `:(literal,icase)${p}`);
}

/** The policy file and every keys directory any version of the policy in this history named. */
async function governancePathspecs(repo: Repository, commit: string): Promise<string[]> {
  const opts = { cwd: repo.cwd, env: repo.env };
  const versions = (await git(['log', '--no-show-signature', '--format=%H', commit, '--', POLICY_PATH], opts))
    .toString('utf8')
    .split('\n')
    .filter(Boolean);
  const dirs = new Set<string>([DEFAULT_KEYS_DIR]);
  for (const rev of [commit, ...versions]) {
    const object = await repo.objects.read(`${rev}:${POLICY_PATH}`);
    if (object?.type !== 'blob') continue;
    try {
      dirs.add(parsePolicy(object.content.toString('utf8')).keysDir);
    } catch {
      // An unreadable version names no keys directory; the rules around it are judged where it is read.
    }
  }
  return [POLICY_PATH, ...[...dirs].map((d) => `${d}/`)];
}

/**
 * The rules in force at `rev`: its own governance when it has a readable one; otherwise (the policy was deleted, or
 * a version could not be read) the last readable one in its first-parent history; null when there never was one.
 */
async function governanceInForce(
  repo: Repository,
  rev: string,
  pathspecs: string[],
): Promise<Governance | null> {
  const opts = { cwd: repo.cwd, env: repo.env };
  let at: string | null = rev;
  while (at !== null) {
    const governance = await readGovernance(repo, at);
    if (governance !== null) return governance;
    const last = await gitTry(
      ['rev-list', '-1', '--first-parent', at, '--', ...ignoringCase(pathspecs)],
      opts,
    );
    const changedAt = last.code === 0 ? last.stdout.toString('utf8').trim() : '';
    if (changedAt === '') return null;
    const parent = await gitTry(['rev-parse', '--verify', '-q', `${changedAt}^1`], opts);
    at = parent.code === 0 ? parent.stdout.toString('utf8').trim() : null;
  }
  return null;
}

/** The governance committed at `rev`, or null when it has no policy or it cannot be read. */
async function readGovernance(repo: Repository, rev: string): Promise<Governance | null> {
  const snapshot = gitSnapshot(repo.cwd, repo.objects, rev, repo.env);
  if ((await snapshot.readFile(POLICY_PATH)) === null) return null;
  try {
    return await loadGovernance(snapshot);
  } catch (error) {
    if (isDelegateGitError(error)) return null;
    throw error;
  }
}

/** Splits `log --raw -z --format=%x01%H %P` output into commits with their first parent and raw diff fields. */
function commitsOf(
  tokens: string[],
): Array<{ id: string; parent: string | undefined; others: string[]; fields: string[] }> {
  const commits: Array<{ id: string; parent: string | undefined; others: string[]; fields: string[] }> = [];
  for (const token of tokens) {
    if (token.startsWith('\x01')) {
      const [id, parent, ...others] = token.slice(1).trim().split(' ');
      commits.push({ id: id!, parent: parent || undefined, others, fields: [] });
    } else if (token.length > 0 && commits.length > 0) {
      commits[commits.length - 1]!.fields.push(token.replace(/^\n/, ''));
    }
  }
  return commits;
}

/**
 * The revision's own policy and trust root judge its files, so a governance file whose history holds an unapproved
 * change is refused at the revision too (the revision's trust root may well count the very key that approved itself).
 */
export function withGovernanceHistory(
  files: CheckResult[],
  problems: GovernanceChangeProblem[],
): CheckResult[] {
  if (problems.length === 0) return files;
  const out = files.map((f) => ({ ...f }));
  for (const p of problems) {
    const { reason } = p;
    const file = out.find((f) => f.path === p.path);
    if (!file)
      out.push({
        path: p.path,
        blob: p.blob,
        sha256: p.sha256,
        promoted: false,
        governed: true,
        reason,
        by: [],
      });
    else if (file.promoted) Object.assign(file, { promoted: false, reason, by: [] });
  }
  return out;
}
