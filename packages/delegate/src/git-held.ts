/**
 * What the index and HEAD hold at a few paths, by blob id: read before a run writes (kept in its journal) and again
 * when a journal is replayed, so that only what changed in between counts as the user's stage or commit
 * (journal-rules.ts, whyLeft).
 */
import { type GitOptions, git, literalPathspecs } from '@delegate-git/core/git';
import { splitZ } from '@delegate-git/core/git-fields';
import type { Repository } from '@delegate-git/core/repository';

export interface HeldInGit {
  /** The blob staged at the path (stage 0), or null: none, or only an intent-to-add entry. */
  index: string | null;
  /** The blob HEAD holds at the path, or null. */
  head: string | null;
}

/** The empty tree's id in each object format (git knows this object without storing it). */
const EMPTY_TREE = {
  sha1: '4b825dc642cb6eb9a060e54bf8d69288fbee4904',
  sha256: '6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321',
} as const;

/** What the index and HEAD hold at each of `paths` (repository paths): two git processes for them all. */
export async function heldInGit(
  repo: Repository,
  paths: readonly string[],
): Promise<(path: string) => HeldInGit> {
  if (paths.length === 0) return () => ({ index: null, head: null });
  const opts = { cwd: repo.layout.topLevel!, env: repo.env };
  const pathspecs = ['--', ...literalPathspecs(paths)];
  const [staged, head] = await Promise.all([
    // Against the empty tree every staged entry is an addition. An intent-to-add entry (`git add -N`) stages the
    // empty blob only as a placeholder, chosen by nobody: read as nothing staged, or a worker's empty file would look
    // staged by the user. An unmerged path has no stage 0 entry and is listed as U, with no content either.
    git(
      [
        'diff-index',
        '--cached',
        '--raw',
        '-z',
        '--no-renames',
        '--ignore-submodules=none',
        '--ita-invisible-in-index',
        EMPTY_TREE[repo.layout.objectFormat],
        ...pathspecs,
      ],
      opts,
    ).then(addedBlobs),
    headBlobs(repo, pathspecs, opts),
  ]);
  return (p) => ({ index: staged.get(p) ?? null, head: head.get(p) ?? null });
}

/** The blob each addition of a `--raw -z` diff adds: ":<mode> <mode> <old> <new> <status>\0<path>". */
function addedBlobs(out: Buffer): Map<string, string> {
  const fields = splitZ(out);
  const added = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [, , , blob, status] = fields[i]!.split(' ');
    if (status === 'A') added.set(fields[i + 1]!, blob!);
  }
  return added;
}

async function headBlobs(
  repo: Repository,
  pathspecs: string[],
  opts: GitOptions,
): Promise<Map<string, string>> {
  const blobs = new Map<string, string>();
  // Read by id: HEAD names no commit yet in a new repository, and may move while this runs.
  const commit = await repo.objects.read('HEAD');
  if (commit?.type !== 'commit') return blobs;
  // "<mode> <type> <id>\t<path>"
  for (const entry of splitZ(await git(['ls-tree', '-r', '-z', commit.oid, ...pathspecs], opts))) {
    const tab = entry.indexOf('\t');
    const [, type, id] = entry.slice(0, tab).split(' ');
    if (type === 'blob') blobs.set(entry.slice(tab + 1), id!);
  }
  return blobs;
}
