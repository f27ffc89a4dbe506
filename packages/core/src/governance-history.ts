/**
 * The trust root's own history, for `verify` (DESIGN 3.5, 4.2). A revision's policy and keys judge its files, so they
 * must themselves have been adopted under the rules in force before them: every commit reachable from the revision
 * that changed the policy file or the keys directory needs that change promoted under the governance of its parent
 * (reviewer approval, the parent's threshold, the parent's trust root). Otherwise a key that approved itself, once
 * committed past the local hook, would be trusted by every later revision's trust root, and CI would agree with it.
 * The commit that adopted delegate-git (no rules in force before it) is the trust anchor.
 */
import { parseRawDiff } from './checks.js';
import { isDelegateGitError } from './errors.js';
import { git, gitTry, literalPathspecs, PINNED_LOG } from './git.js';
import { type Governance, loadGovernance } from './governance.js';
import { judgeFiles } from './judge.js';
import { loadPathIndex, type PathIndex } from './path-index.js';
import { DEFAULT_KEYS_DIR, isGovernanceFile, POLICY_PATH, parsePolicy } from './policy.js';
import type { Repository } from './repository.js';
import { gitSnapshot, splitZ } from './snapshot.js';

export interface GovernanceChangeProblem {
  /** The commit that made the change. */
  commit: string;
  path: string;
  blob: string;
  sha256: string;
  reason: string;
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
      ...literalPathspecs(pathspecs),
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

  const problems: GovernanceChangeProblem[] = [];
  for (const { id, parent, fields } of commitsOf(splitZ(out))) {
    const changes = parseRawDiff(fields).filter((c) => c.status !== 'D');
    if (changes.length === 0 || parent === undefined) continue;
    const before = await rulesBefore(parent);
    if (before === null) continue; // the trust anchor: nothing was in force before it
    const own = await readGovernance(repo, id);
    const changed = changes
      .filter(
        (c) =>
          isGovernanceFile(before.policy, c.path) || (own !== null && isGovernanceFile(own.policy, c.path)),
      )
      .map((c) => ({ path: c.path, blob: c.blob, replaces: c.replaces }));
    if (changed.length === 0) continue;
    const judged = await judgeFiles(changed, {
      governance: own ?? before,
      anchor: before,
      ledger: repo.ledger,
      notesAt,
      index: await pathIndex(),
      batch: repo.objects,
    });
    for (const j of judged) {
      if (!j.promoted)
        problems.push({ commit: id, path: j.path, blob: j.blob, sha256: j.sha256, reason: j.reason });
    }
  }
  return problems;
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
      ['rev-list', '-1', '--first-parent', at, '--', ...literalPathspecs(pathspecs)],
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
function commitsOf(tokens: string[]): Array<{ id: string; parent: string | undefined; fields: string[] }> {
  const commits: Array<{ id: string; parent: string | undefined; fields: string[] }> = [];
  for (const token of tokens) {
    if (token.startsWith('\x01')) {
      const [id, parent] = token.slice(1).trim().split(' ');
      commits.push({ id: id!, parent: parent || undefined, fields: [] });
    } else if (token.length > 0 && commits.length > 0) {
      commits[commits.length - 1]!.fields.push(token.replace(/^\n/, ''));
    }
  }
  return commits;
}
