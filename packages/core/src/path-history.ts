/**
 * The history a policy or key file's versions were admitted along (promotion.ts, admittedAt): every commit behind a
 * commit that changed the path, and every merge, each with the content the path holds there and its parents among
 * them (git's parent rewriting). Every parent is kept, not only first parents: a merge whose first parent is an
 * orphan or older commit would otherwise start the file's history afresh, dated by its first approval again.
 */
import { git, gitTry, literalPathspecs, PINNED_LOG } from './git.js';

export interface PathVersion {
  /** The path's blob at this commit; null where the commit does not hold it. */
  blob: string | null;
  /** The nearest commits behind it that are in the history too. */
  parents: readonly string[];
}

export interface PathHistory {
  /** The commit asked about. */
  tip: string;
  commits: ReadonlyMap<string, PathVersion>;
}

/** The history of `path` behind `commit`, the commit itself included. */
export async function pathHistory(
  repo: { cwd: string; env?: NodeJS.ProcessEnv },
  commit: string,
  path: string,
): Promise<PathHistory> {
  const opts = { cwd: repo.cwd, env: repo.env };
  // --full-history keeps every merge, with its parents rewritten to the nearest commits kept (--simplify-merges
  // would drop a merge the same as both parents, and its first parent would then stand for it alone).
  const out = await git(
    [
      'log',
      ...PINNED_LOG,
      '--full-history',
      '--parents',
      '--format=%H %P',
      commit,
      '--',
      ...literalPathspecs([path]),
    ],
    opts,
  );
  const parentsOf = new Map<string, string[]>();
  for (const line of out.toString('utf8').split('\n')) {
    const [id, ...parents] = line.trim().split(' ').filter(Boolean);
    if (id) parentsOf.set(id, [...new Set(parents)]);
  }
  if (!parentsOf.has(commit)) {
    // The commit itself does not change the path: it holds what the nearest commits listed hold.
    const below = new Set([...parentsOf.values()].flat());
    parentsOf.set(
      commit,
      [...parentsOf.keys()].filter((id) => !below.has(id)),
    );
  }
  const ids = [...parentsOf.keys()];
  const blobs = await blobsAt(repo, ids, path);
  const commits = new Map(ids.map((id, i) => [id, { blob: blobs[i]!, parents: parentsOf.get(id)! }]));
  return { tip: commit, commits };
}

/** The blob `path` names at each commit (null where there is none): one git process for all of them. */
async function blobsAt(
  repo: { cwd: string; env?: NodeJS.ProcessEnv },
  commits: readonly string[],
  path: string,
): Promise<Array<string | null>> {
  const opts = { cwd: repo.cwd, env: repo.env };
  if (/[\n\r]/.test(path)) {
    // cat-file reads one name per line: a path holding a line break is asked commit by commit.
    return Promise.all(
      commits.map(async (c) => {
        const r = await gitTry(['rev-parse', '--verify', '-q', `${c}:${path}`], opts);
        return r.code === 0 ? r.stdout.toString('utf8').trim() : null;
      }),
    );
  }
  const out = await git(['cat-file', '--batch-check=%(objectname) %(objecttype)'], {
    ...opts,
    input: commits.map((c) => `${c}:${path}\n`).join(''),
  });
  return out
    .toString('utf8')
    .split('\n')
    .slice(0, commits.length)
    .map((line) => (line.endsWith(' blob') ? line.slice(0, line.indexOf(' ')) : null));
}

/** The commits of a history that are `tip` or behind it: what dates the version at `tip`, nothing newer. */
function behind(commits: ReadonlyMap<string, PathVersion>, tip: string): Map<string, PathVersion> {
  const kept = new Map<string, PathVersion>();
  const stack = [tip];
  while (stack.length > 0) {
    const id = stack.pop()!;
    const version = commits.get(id);
    if (!version || kept.has(id)) continue;
    kept.set(id, version);
    stack.push(...version.parents);
  }
  return kept;
}

/**
 * The histories of several commits behind one `top`, read once per path: verify's walk and a push ask about the
 * version replaced at many commits, and reading a path's history costs a walk of all of it (0.4 s over 20,000
 * commits). A commit the history does not list changes nothing there and is no merge, so it holds what its first
 * parent holds: it is answered by the nearest commit listed along its first parents.
 */
export class PathHistories {
  private readonly paths = new Map<string, Promise<PathHistory>>();
  private firstParents: Promise<Map<string, string>> | null = null;

  constructor(
    private readonly repo: { cwd: string; env?: NodeJS.ProcessEnv },
    private readonly top: string,
  ) {}

  async historyOf(commit: string, path: string): Promise<PathHistory> {
    let read = this.paths.get(path);
    if (!read) {
      read = pathHistory(this.repo, this.top, path);
      this.paths.set(path, read);
    }
    const { commits } = await read;
    const parents = commits.has(commit) ? null : await this.firstParentsOf();
    let at: string | undefined = commit;
    while (at !== undefined && !commits.has(at)) at = parents!.get(at);
    // Not behind the top at all (a rewound tip, say): read on its own.
    if (at === undefined) return pathHistory(this.repo, commit, path);
    return { tip: at, commits: behind(commits, at) };
  }

  private firstParentsOf(): Promise<Map<string, string>> {
    this.firstParents ??= git(['rev-list', '--parents', this.top], {
      cwd: this.repo.cwd,
      env: this.repo.env,
    }).then((out) => {
      const parents = new Map<string, string>();
      for (const line of out.toString('utf8').split('\n')) {
        const [id, first] = line.split(' ');
        if (id && first) parents.set(id, first);
      }
      return parents;
    });
    return this.firstParents;
  }
}
