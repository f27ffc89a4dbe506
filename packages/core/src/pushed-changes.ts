/**
 * What a push brings to judge, read from git: the files each new commit adds or changes (first-parent diffs, renames
 * and copies found), the files a ref's tips differ in, and the files of a ref that names a tree. Which commits count
 * as new, and by whose rules they are judged, is the server gate's question (push-governance.ts).
 */

import { CommitAncestry } from './commit-ancestry.js';
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
  return tipsChanges(splitZ(out), from, to);
}

/**
 * changesBetween for many pairs of commits, in one `git diff-tree --stdin` for them all: a push moving hundreds of
 * branches started a git for each. Answers in the order of `pairs`.
 */
export async function changesBetweenMany(
  repo: Repository,
  pairs: ReadonlyArray<{ from: string; to: string }>,
): Promise<Array<Pick<NewChanges, 'introduced' | 'deleted'>>> {
  if (pairs.length === 0) return [];
  // "<commit> <parent>" diffs that parent against the commit; --always prints each pair's header, even with nothing
  // changed, so the answers line up with the pairs.
  const out = await git(['diff-tree', '--stdin', '--always', '-r', '-z', '--no-renames'], {
    cwd: repo.cwd,
    env: repo.env,
    input: pairs.map((p) => `${p.to} ${p.from}\n`).join(''),
  });
  const fields = splitZ(out);
  const answers: Array<Pick<NewChanges, 'introduced' | 'deleted'>> = [];
  let pending: string[] | null = null;
  const flush = () => {
    if (pending === null) return;
    const pair = pairs[answers.length]!;
    answers.push(tipsChanges(pending, pair.from, pair.to));
  };
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (field.startsWith(':')) {
      // A change: its path follows (no renames here, so always one).
      pending?.push(field, fields[++i] ?? '');
    } else if (field !== '') {
      flush();
      pending = [];
    }
  }
  flush();
  if (answers.length !== pairs.length)
    throw new Error(`git diff-tree answered ${answers.length} of ${pairs.length} pairs of commits`);
  return answers;
}

/** The raw diff of `from` against `to`, as what `to` brings and removes. */
function tipsChanges(fields: string[], from: string, to: string): Pick<NewChanges, 'introduced' | 'deleted'> {
  const introduced: Introduced[] = [];
  const deleted: Introduced[] = [];
  for (const c of parseRawDiff(fields)) {
    if (c.status === 'D' || c.removesLink)
      deleted.push({ path: c.path, blob: c.blob, commit: to, removesLink: c.removesLink });
    if (c.status !== 'D')
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
  /** Where git listed it (0 first). */
  order: number;
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
  return loggedCommits(repo, tips, ['--not', ...(held ?? ['--exclude=refs/notes/*', '--all'])]);
}

/** `git log` of the commits `revisions` (on its stdin) and `selection` name, each with what it brings. */
async function loggedCommits(
  repo: Repository,
  revisions: readonly string[],
  selection: readonly string[],
): Promise<NewCommits> {
  const walked = new Map<string, WalkedCommit>();
  if (revisions.length === 0) return walked;
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
      ...selection,
    ],
    { cwd: repo.cwd, env: repo.env, input: `${revisions.join('\n')}\n` },
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
      if (c.status === 'D' || c.status === 'R' || c.removesLink)
        keep({ path: c.from ?? c.path, blob: c.blob, commit, removesLink: c.removesLink }, true);
    }
    pending = [];
  };
  for (const token of out.toString('utf8').split('\0')) {
    if (token.startsWith('\x01')) {
      flush();
      const [id = '', ...parents] = token.slice(1).trim().split(' ');
      commit = id;
      at = { order: walked.size, parents, introduced: [], deleted: [], merged: [] };
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
  return changesOfListed(
    repo,
    walked,
    reachedWithin((c) => walked.get(c)?.parents, tip),
  );
}

/**
 * The commits reached from `from` by following parents while `parentsOf` knows them (undefined: outside the set),
 * never entering `stop` (the commits behind a ref's old tip, which holds what lies behind them too).
 */
function reachedWithin(
  parentsOf: (commit: string) => readonly string[] | undefined,
  from: string,
  stop: ReadonlySet<string> = new Set(),
): Set<string> {
  const reached = new Set<string>();
  const stack = [from];
  while (stack.length > 0) {
    const commit = stack.pop()!;
    if (reached.has(commit) || stop.has(commit)) continue;
    const parents = parentsOf(commit);
    if (parents === undefined) continue;
    reached.add(commit);
    for (const parent of parents) stack.push(parent);
  }
  return reached;
}

/** What the commits `listed` (all in `walked`) bring, in the order `walked` lists them. */
async function changesOfListed(
  repo: Repository,
  walked: NewCommits,
  listed: ReadonlySet<string>,
): Promise<NewChanges> {
  if (listed.size === 0) return { introduced: [], deleted: [], commits: 0 };
  const introduced: Introduced[] = [];
  const deleted: Introduced[] = [];
  const merged: WalkedCommit['merged'] = [];
  // Not a pass over all of `walked`: a push of hundreds of branches asks this of each.
  const inOrder = [...listed].map((commit) => walked.get(commit)!).sort((a, b) => a.order - b.order);
  for (const brings of inOrder) {
    for (const c of brings.introduced) introduced.push(c);
    for (const c of brings.deleted) deleted.push(c);
    for (const c of brings.merged) merged.push(c);
  }
  for (const { change, deletion } of await notTakenFromHeld(repo, merged, listed))
    (deletion ? deleted : introduced).push(change);
  return { introduced, deleted, commits: listed.size };
}

/**
 * Commit objects a batched walk reads at most to tell that each ref's walk stays among the new commits
 * (newChangesOfMany), about a second on this kind of machine; each ref gets its share (at least 64, at most 2,000
 * commits), so that refs searching at once do not spend it all and send every ref to a walk of its own (rt56 f02).
 */
const ANCESTRY_BUDGET = 100_000;
const ANCESTRY_SHARE = { least: 64, most: 2_000 };

/**
 * newChanges for many refs that held a commit before the push, each with its own old tip: what each ref's new tip
 * brings that neither its old tip nor `held` reaches. A push moving hundreds of branches started a walk each (rt53:
 * 54 s for a mirror push rewinding 599 refs); here one `git rev-list` lists the commits new to the repository
 * (behind a new tip, behind no old tip and not held), and each ref's share is what its new tip reaches among them.
 * That is all it brings when every commit where its walk leaves them (its tip, for a rewind) lies behind its own old
 * tip or what is held, which the commit objects tell (CommitAncestry); else the ref also brings commits only another
 * ref held, and is walked alone. One `git log` diffs the commits some ref brings. Costs follow what the push brings,
 * not the history behind the old tips (rt55 f05). Answers in the order of `refs`.
 */
export async function newChangesOfMany(
  repo: Repository,
  refs: ReadonlyArray<{ tip: string; own: string }>,
  held: readonly string[],
): Promise<NewChanges[]> {
  const listing = await git(['rev-list', '--parents', '--stdin'], {
    cwd: repo.cwd,
    env: repo.env,
    input: [...refs.map((r) => r.tip), ...[...refs.map((r) => r.own), ...held].map((h) => `^${h}`)]
      .map((r) => `${r}\n`)
      .join(''),
  });
  const parents = new Map<string, string[]>();
  for (const line of listing.toString('latin1').split('\n')) {
    const [commit, ...ofIt] = line.split(' ');
    if (commit) parents.set(commit, ofIt);
  }
  const ancestry = new CommitAncestry(repo.objects, ANCESTRY_BUDGET);
  const share = Math.max(
    ANCESTRY_SHARE.least,
    Math.min(ANCESTRY_SHARE.most, Math.floor(ANCESTRY_BUDGET / Math.max(1, refs.length))),
  );
  const listed = await Promise.all(
    refs.map(async (r): Promise<Set<string> | null> => {
      const reached = reachedWithin((c) => parents.get(c), r.tip);
      const edge = new Set<string>(parents.has(r.tip) ? [] : [r.tip]);
      for (const commit of reached) for (const p of parents.get(commit)!) if (!parents.has(p)) edge.add(p);
      for (const h of [r.own, ...held]) edge.delete(h);
      const behind = edge.size === 0 || (await ancestry.allBehind([r.own, ...held], edge, share));
      return behind ? reached : null;
    }),
  );
  const brought = new Set(listed.flatMap((l) => (l ? [...l] : [])));
  // Newest first, as the listing has them (a walk of one ref alone may order commits of the same date otherwise).
  const walked = await loggedCommits(
    repo,
    [...parents.keys()].filter((c) => brought.has(c)),
    ['--no-walk=unsorted'],
  );
  // Every commit a ref brings is judged: one git did not list would pass unseen.
  if (walked.size !== brought.size)
    throw new Error(`git log listed ${walked.size} of the ${brought.size} commits this push brings`);
  return Promise.all(
    refs.map((r, i) =>
      listed[i] ? changesOfListed(repo, walked, listed[i]) : newChanges(repo, r.tip, [r.own, ...held]),
    ),
  );
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
