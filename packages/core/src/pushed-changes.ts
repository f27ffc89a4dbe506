/**
 * What a push brings to judge, read from git: the files each new commit adds or changes (first-parent diffs, renames
 * and copies found), the files a ref's tips differ in, and the files of a ref that names a tree. Which commits count
 * as new, and by whose rules they are judged, is pre-receive.ts's question.
 */

import { git, PINNED_LOG } from './git.js';
import type { Repository } from './repository.js';
import { splitZ, treeFiles } from './snapshot.js';
import { parseRawDiff } from './staged-changes.js';

/** A file a push brings at a path, or removes from it. */
export interface Introduced {
  path: string;
  blob: string;
  commit: string;
  submodule?: boolean;
  /** A symbolic link: governed also where files would appear beneath it (judge.ts, governedFiles). */
  symlink?: boolean;
  /** The blob a modification replaces (judgeFiles weighs it for the policy and key files). */
  replaces?: string;
  /** The commit holding `replaces` (FileToJudge.replacedAt). */
  replacedAt?: string;
  /** For a deletion: it removed a symbolic link or a submodule (StagedChange.removesLink). */
  removesLink?: true;
}

export interface NewChanges {
  introduced: Introduced[];
  deleted: Introduced[];
  commits: number;
}

/**
 * What differs between a branch's tips before and after: a rewind, or a merge whose first parent is an older commit
 * (`git merge -s ours`, or `git commit-tree` with the old tree), brings content back with no commit's first-parent
 * diff showing it, so an earlier policy, a key from before its revocation, or content a reviewer has rejected since,
 * would pass. Judged like the commits' changes: a governance file with the version it replaces (going back needs a
 * new approval), any other file by its content alone, the same question a commit bringing it asks.
 */
export async function changesBetween(
  repo: Repository,
  from: string,
  to: string,
): Promise<Pick<NewChanges, 'introduced' | 'deleted'>> {
  const out = await git(['diff-tree', '-r', '-z', '--no-renames', from, to], {
    cwd: repo.cwd,
    env: repo.env,
  });
  const introduced: Introduced[] = [];
  const deleted: Introduced[] = [];
  for (const c of parseRawDiff(splitZ(out))) {
    if (c.status === 'D')
      deleted.push({ path: c.path, blob: c.blob, commit: to, removesLink: c.removesLink });
    else
      introduced.push({
        path: c.path,
        blob: c.blob,
        commit: to,
        submodule: c.submodule,
        symlink: c.symlink,
        replaces: c.replaces,
        replacedAt: from,
      });
  }
  return { introduced, deleted };
}

/** What one new commit brings, by its first-parent diff. */
interface WalkedCommit {
  parents: string[];
  introduced: Introduced[];
  deleted: Introduced[];
  /** Changes a merge takes from its other parents: kept only where they do not come from one held already. */
  merged: Array<{ change: Introduced; deletion: boolean; others: string[] }>;
}

/** The new commits behind some tips, in the order git lists them, each with what it brings. */
export type NewCommits = ReadonlyMap<string, WalkedCommit>;

/**
 * The commits behind `tips` that `held` does not reach (null: that no ref reaches, notes refs aside), walked once
 * for all of them: a push of many new refs sharing new commits lists and diffs each commit once, in one process.
 */
export async function walkNewCommits(
  repo: Repository,
  tips: readonly string[],
  held: readonly string[] | null,
): Promise<NewCommits> {
  const walked = new Map<string, WalkedCommit>();
  if (tips.length === 0) return walked;
  const out = await git(
    [
      'log',
      ...PINNED_LOG, // the server's own config cannot change what is listed
      '--raw',
      '-z',
      '--no-abbrev',
      '-M',
      '-C',
      '--diff-merges=first-parent',
      '--format=%x01%H %P',
      '--stdin',
      '--not',
      ...(held ?? ['--exclude=refs/notes/*', '--all']),
    ],
    { cwd: repo.cwd, env: repo.env, input: `${tips.join('\n')}\n` },
  );
  let at: WalkedCommit | null = null;
  let commit = '';
  let pending: string[] = [];
  const flush = () => {
    if (at === null) return;
    const [parent, ...others] = at.parents;
    const keep = (change: Introduced, deletion: boolean) => {
      if (others.length > 0) at!.merged.push({ change, deletion, others });
      else (deletion ? at!.deleted : at!.introduced).push(change);
    };
    for (const c of parseRawDiff(pending)) {
      if (c.status !== 'D')
        keep(
          {
            path: c.path,
            blob: c.blob,
            commit,
            submodule: c.submodule,
            symlink: c.symlink,
            replaces: c.replaces,
            replacedAt: parent,
          },
          false,
        );
      if (c.status === 'D' || c.status === 'R')
        keep({ path: c.from ?? c.path, blob: c.blob, commit, removesLink: c.removesLink }, true);
    }
    pending = [];
  };
  for (const token of out.toString('utf8').split('\0')) {
    if (token.startsWith('\x01')) {
      flush();
      const [id = '', ...parents] = token.slice(1).trim().split(' ');
      commit = id;
      at = { parents, introduced: [], deleted: [], merged: [] };
      walked.set(commit, at);
    } else if (token.length > 0) pending.push(token.replace(/^\n/, ''));
  }
  flush();
  return walked;
}

/**
 * What the new commits behind the commit `tip` bring: those of `walked` it reaches (every commit between a tip and a
 * new commit is new too, so following parents within `walked` finds exactly the commits a walk from `tip` alone
 * would list).
 */
export async function changesFrom(repo: Repository, tip: string, walked: NewCommits): Promise<NewChanges> {
  const listed = new Set<string>();
  const stack = walked.has(tip) ? [tip] : [];
  while (stack.length > 0) {
    const commit = stack.pop()!;
    if (listed.has(commit)) continue;
    listed.add(commit);
    for (const parent of walked.get(commit)!.parents) if (walked.has(parent)) stack.push(parent);
  }
  if (listed.size === 0) return { introduced: [], deleted: [], commits: 0 };
  const introduced: Introduced[] = [];
  const deleted: Introduced[] = [];
  const merged: WalkedCommit['merged'] = [];
  for (const [commit, brings] of walked) {
    if (!listed.has(commit)) continue;
    for (const c of brings.introduced) introduced.push(c);
    for (const c of brings.deleted) deleted.push(c);
    for (const c of brings.merged) merged.push(c);
  }
  for (const { change, deletion } of await notTakenFromHeld(repo, merged, listed))
    (deletion ? deleted : introduced).push(change);
  return { introduced, deleted, commits: listed.size };
}

/** What the commits behind the commit `tip` that `held` does not reach bring (null: that no ref reaches, notes refs aside). */
export async function newChanges(
  repo: Repository,
  tip: string,
  held: readonly string[] | null,
): Promise<NewChanges> {
  return changesFrom(repo, tip, await walkNewCommits(repo, [tip], held));
}

/**
 * A merge's first-parent diff shows what it takes from its other parents, and what a parent this push does not
 * bring (one the ref already holds; for a new ref, any ref) was judged when it came: "Update branch" brings the default
 * branch's history into a feature branch, and judging that again by the rules in force now refused content the
 * default branch has replaced since (a rejection, a revoked key) though the tip never holds it. Such content is left
 * to the comparison of the tips, which judges whatever of it the branch still holds. A submodule is always judged.
 */
async function notTakenFromHeld<T extends { change: Introduced; deletion: boolean; others: string[] }>(
  repo: Repository,
  changes: readonly T[],
  listed: ReadonlySet<string>,
): Promise<T[]> {
  const kept = await Promise.all(
    changes.map(async (c) => {
      const held = c.others.filter((p) => !listed.has(p));
      if (held.length === 0 || c.change.submodule) return true;
      const there = await Promise.all(held.map((p) => repo.objects.read(`${p}:${c.change.path}`)));
      const taken = c.deletion ? there.some((o) => o === null) : there.some((o) => o?.oid === c.change.blob);
      return !taken;
    }),
  );
  return changes.filter((_, i) => kept[i]);
}

/**
 * A ref may name a tree (or a tag of one) rather than a commit: no commit is new, yet the tree can hold governed
 * content nobody judged, for anyone to check out from that ref. Every file of such a tree is judged as if a root
 * commit added it. A ref naming a blob (content without a path) brings nothing to judge.
 */
export async function treeRefChanges(repo: Repository, tip: string): Promise<NewChanges> {
  const peeled = await repo.objects.read(`${tip}^{}`);
  if (peeled?.type !== 'tree') return { introduced: [], deleted: [], commits: 0 };
  return { introduced: await filesOfTree(repo, peeled.oid, peeled.oid), deleted: [], commits: 0 };
}

/** Every file of a commit's tree, as brought by that commit. */
export async function filesAt(repo: Repository, commit: string): Promise<Introduced[]> {
  const tree = await repo.objects.read(`${commit}^{tree}`);
  return tree ? filesOfTree(repo, tree.oid, commit) : [];
}

async function filesOfTree(repo: Repository, tree: string, commit: string): Promise<Introduced[]> {
  const files = await treeFiles(repo.cwd, tree, [], repo.env, { submodules: true });
  return files.map((f) => ({
    path: f.path,
    blob: f.blob,
    commit,
    submodule: f.submodule,
    symlink: f.symlink,
  }));
}
