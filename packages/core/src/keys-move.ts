/**
 * A change that moves the keys directory (keysMovedTo), as every gate judges it: every file in the new directory is a
 * key file, dated by the policy version the move replaces, and no key of the trust root may be left behind.
 */

import { holdsKey } from './governance.js';
import { keysMovedTo } from './governed-paths.js';
import type { FileToJudge } from './judge.js';
import { GOVERNANCE_DELETED, POLICY_PATH, type Policy } from './policy.js';
import type { Repository } from './repository.js';
import { parseKeyFile, type TrustRoot } from './trust-root.js';

/** A file of the directory the keys move to, as the index or a commit's tree lists it. */
type JoiningFile = { path: string; blob: string; submodule?: boolean; symlink?: boolean };

/**
 * One change from the policy `from` to `to`, when it moves the keys directory: the files to judge (`files`, with every
 * file of the new directory joining as a key file, dated by the policy at `datedAt`) and the key files of `trustRoot`
 * it leaves behind (each refused, `leftBehind`). Null when it moves nothing. `joining` lists a directory's files where
 * the change is read: the index, or a commit's tree.
 */
export async function keysMove(
  repo: Repository,
  change: {
    from: Policy;
    to: Policy | null;
    files: readonly FileToJudge[];
    datedAt: string | null;
    trustRoot: TrustRoot;
    joining: (dir: string) => Promise<JoiningFile[]>;
  },
): Promise<{ movedTo: string; judged: FileToJudge[]; left: string[] } | null> {
  const movedTo = keysMovedTo(change.from, change.to);
  if (movedTo === null) return null;
  const joining = await change.joining(`${movedTo}/`);
  const [replaced, left] = await Promise.all([
    policyVersionAt(repo, change.datedAt),
    keysLeftBehind(repo, change.trustRoot, joining),
  ]);
  return { movedTo, judged: withJoiningKeys(change.files, joining, replaced), left };
}

/**
 * When a change moves the keys directory, every file there becomes a key file (keysMovedTo): each is judged as one,
 * not only those the change adds, and dated by the policy version the move replaces (`replaced`: its blob and the
 * commit holding it), so approvals made before that policy was admitted do not count. A key file left there from
 * before (a revoked key's unrevoked copy, say, while the directory was not the keys directory) cannot join on its old
 * approvals.
 */
function withJoiningKeys(
  files: readonly FileToJudge[],
  joining: readonly JoiningFile[],
  replaced: { blob: string; at: string } | null,
): FileToJudge[] {
  const changed = new Map(files.map((f) => [f.path, f]));
  const dated = joining.map((f): FileToJudge => {
    const own = changed.get(f.path);
    if (!replaced) return own ?? f;
    const policy = { blob: replaced.blob, path: POLICY_PATH, at: replaced.at };
    // A key file the change rewrites too is dated by both: going back to its own earlier content stays refused.
    if (own?.replaces) return { ...own, alsoReplaces: policy };
    return { ...(own ?? f), replaces: policy.blob, replacedPath: policy.path, replacedAt: policy.at };
  });
  const there = new Set(joining.map((f) => f.path));
  return [...files.filter((f) => !there.has(f.path)), ...dated];
}

/**
 * The key files of the trust root `before` whose key no file in the directory the keys move to holds. A key leaves
 * the trust root only by revocation (a key file cannot be deleted): left behind, its records could no longer be
 * verified, and the versions of the policy they dated would fall back to older dates, so that a key file left in the
 * new directory could come back on an old approval.
 */
async function keysLeftBehind(
  repo: Repository,
  before: TrustRoot,
  joining: ReadonlyArray<{ path: string; blob: string }>,
): Promise<string[]> {
  const held = new Set<string>();
  for (const f of joining) {
    // Held only where the trust root loads it from: a copy under another name is no key there.
    if (!holdsKey(f.path)) continue;
    const object = await repo.objects.read(f.blob);
    if (object?.type !== 'blob') continue;
    try {
      held.add(parseKeyFile(object.content.toString('utf8'), f.path).keyid);
    } catch {
      // Not a key file: the trust root refuses it where it is loaded.
    }
  }
  return before.keys.filter((k) => !held.has(k.keyid)).map((k) => k.file);
}

/** Why a key file left behind by a move of the keys directory is refused. */
export function leftBehind(movedTo: string): string {
  return `left behind when the keys directory moves to ${movedTo}/: ${GOVERNANCE_DELETED}`;
}

/** The policy's blob at `commit`, with the commit: what a move of the keys directory there is dated by. */
async function policyVersionAt(
  repo: Repository,
  commit: string | null,
): Promise<{ blob: string; at: string } | null> {
  const object = commit === null ? null : await repo.objects.read(`${commit}:${POLICY_PATH}`);
  return object?.type === 'blob' && commit !== null ? { blob: object.oid, at: commit } : null;
}
