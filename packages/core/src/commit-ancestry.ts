/**
 * Whether commits lie behind others, found by reading commit objects through a reader already open, within a budget.
 * git answers it with a process per question (`merge-base --is-ancestor`); a push moving hundreds of branches asks
 * it of each, and most answers are a few commits away (a branch rewound by one).
 */
import type { CatFileBatch } from './git.js';

export class CommitAncestry {
  private readonly parents = new Map<string, Promise<string[] | null>>();
  private reads = 0;

  constructor(
    private readonly objects: CatFileBatch,
    /** Commit objects read at most, over every question: past it, answers are "not found". */
    private readonly budget: number,
  ) {}

  /**
   * Whether each of `targets` is one of `from` or lies behind one, found by visiting at most `limit` commits (each
   * read once over all questions). False means not found: behind none, or not within the limit and the budget.
   */
  async allBehind(from: readonly string[], targets: ReadonlySet<string>, limit: number): Promise<boolean> {
    const missing = new Set(targets);
    const seen = new Set<string>();
    let frontier = [...new Set(from)];
    while (frontier.length > 0) {
      for (const commit of frontier) {
        seen.add(commit);
        missing.delete(commit);
      }
      if (missing.size === 0) return true;
      if (seen.size > limit) return false;
      const parents = await Promise.all(frontier.map((commit) => this.parentsOf(commit)));
      if (parents.includes(null)) return false; // unread: not known to be behind
      frontier = [...new Set(parents.flat() as string[])].filter((p) => !seen.has(p));
    }
    return missing.size === 0;
  }

  /** A commit's parents as git reads them; null for no commit here, one git might read otherwise, or past the budget. */
  private parentsOf(commit: string): Promise<string[] | null> {
    let found = this.parents.get(commit);
    if (!found) {
      if (this.reads >= this.budget) return Promise.resolve(null);
      this.reads++;
      found = this.objects.read(commit).then((o) => (o?.type === 'commit' ? parentsIn(o.content) : null));
      this.parents.set(commit, found);
    }
    return found;
  }
}

/**
 * A commit object's parents as git reads them: the `parent` lines right after `tree`, each a full lower-case id.
 * Null for a header git may read otherwise (a `parent` line elsewhere, an id in upper case, a second `tree`): the
 * caller then asks git (rt56 f01, f03: an extra `parent` line git ignores made a commit look held, an upper-case one a
 * merge look like an append).
 */
export function parentsIn(commit: Buffer): string[] | null {
  const text = commit.toString('latin1');
  const end = text.indexOf('\n\n');
  const lines = (end === -1 ? text : text.slice(0, end)).split('\n');
  const tree = /^tree ([0-9a-f]{40}|[0-9a-f]{64})$/.exec(lines[0] ?? '');
  if (!tree) return null;
  const id = new RegExp(`^parent ([0-9a-f]{${tree[1]!.length}})$`);
  const parents: string[] = [];
  let i = 1;
  for (; i < lines.length; i++) {
    const parent = id.exec(lines[i]!);
    if (!parent) break;
    parents.push(parent[1]!);
  }
  for (; i < lines.length; i++) if (/^(parent|tree)\b/i.test(lines[i]!)) return null;
  return parents;
}
