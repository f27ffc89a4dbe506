/**
 * What the index changes against HEAD, as `git diff-index --raw -z` prints it. Its own module because the
 * pre-commit hook's quick path reads it before loading anything else.
 */
/**
 * The arguments of `git diff-index` the gates read the index through, against `base`: what the commit will hold.
 * Submodule changes are always listed: a `.gitmodules` entry with `ignore = all`, which the commit itself may carry,
 * would hide them otherwise. An intent-to-add entry (`git add -N`) is not: git leaves it out of the commit, while
 * diff-index would show it as an empty file added.
 */
export function stagedDiffArgs(base: string): string[] {
  return [
    'diff-index',
    '--cached',
    '--raw',
    '-z',
    '-M',
    '-C',
    '--ignore-submodules=none',
    '--ita-invisible-in-index',
    base,
  ];
}

/** A change to one path. A rename (R) also removes `from`: the gates treat that as deleting it. */
export interface StagedChange {
  /** git's letter; U: unmerged (a conflict not resolved yet, no content staged). */
  status: 'A' | 'M' | 'R' | 'C' | 'T' | 'D' | 'U';
  path: string;
  blob: string;
  from?: string;
  /** A submodule (gitlink): `blob` is a commit of another repository, content no record can name. */
  submodule?: true;
  /** A symbolic link (new mode 120000): `blob` is its target's text, and files may appear beneath its path. */
  symlink?: true;
  /** For a modification (M, T): the blob it replaces at this path; for a deletion (D), the blob it removes. */
  replaces?: string;
  /**
   * For a deletion, a rename or a type change: what it removes was a symbolic link or a submodule, whose path governs
   * what appears beneath it (GovernedMatcher's `link`), so removing it is judged there too. A link turned into a file
   * removes the link as deleting it does (rt55 f03).
   */
  removesLink?: true;
}

/** Whether a change brings a name HEAD did not hold (an addition, or a rename's or copy's new path). */
export function addsName(change: StagedChange): boolean {
  return change.status === 'A' || change.status === 'R' || change.status === 'C';
}

/** A path a change removes (a deletion, or a rename's old path), and whether it was a link. */
export interface RemovedPath {
  path: string;
  link: boolean;
}

/** Parses `--raw -z` records: ":<mode> <mode> <old> <new> <status>\0<path>[\0<path>]". */
export function parseRawDiff(fields: string[]): StagedChange[] {
  const changes: StagedChange[] = [];
  for (let i = 0; i < fields.length; ) {
    const meta = fields[i++]!;
    // Fixed layout up to the ids (":" + two 6-digit modes); the ids' length depends on the object format.
    const oldMode = meta.slice(1, 7);
    const newMode = meta.slice(8, 14);
    const statusAt = meta.lastIndexOf(' ') + 1;
    const newBlobAt = meta.lastIndexOf(' ', statusAt - 2) + 1;
    const newBlob = meta.slice(newBlobAt, statusAt - 1);
    const status = meta.charAt(statusAt) as StagedChange['status'];
    if (status === 'R' || status === 'C') {
      const from = fields[i++]!;
      const to = fields[i++]!;
      const change = marked({ status, path: to, blob: newBlob, from }, newMode);
      if (status === 'R' && isLinkMode(oldMode)) change.removesLink = true;
      changes.push(change);
    } else {
      const p = fields[i++]!;
      if (newMode === '160000' && oldMode !== '160000') {
        // A file replaced by a submodule is gone, as if deleted; the submodule itself is judged as added.
        if (oldMode !== '000000')
          changes.push({
            status: 'D',
            path: p,
            blob: newBlob,
            ...(isLinkMode(oldMode) && { removesLink: true }),
          });
        changes.push({ status: 'A', path: p, blob: newBlob, submodule: true });
        continue;
      }
      const change = marked({ status, path: p, blob: newBlob }, newMode);
      if (status === 'M' || status === 'T' || status === 'D') change.replaces = meta.slice(15, newBlobAt - 1);
      if ((status === 'D' || status === 'T') && isLinkMode(oldMode) && oldMode !== newMode)
        change.removesLink = true;
      changes.push(change);
    }
  }
  return changes;
}

/**
 * The change, marked as a submodule's or a symbolic link's by its new mode (the gates run this on every staged path):
 * either is governed also by what it could bring beneath its path (governed-paths.ts).
 */
function marked(change: StagedChange, newMode: string): StagedChange {
  if (newMode === '160000') change.submodule = true;
  else if (newMode === '120000') change.symlink = true;
  return change;
}

/** A symbolic link's or a submodule's mode, as git prints it. */
export function isLinkMode(mode: string): boolean {
  return mode === '120000' || mode === '160000';
}

/** The paths a change set removes: deletions, the old path of each rename, and each link a type change replaces. */
export function removedPaths(changes: readonly StagedChange[]): RemovedPath[] {
  return changes.flatMap((c) => {
    const link = c.removesLink === true;
    if (c.status === 'T') return link ? [{ path: c.path, link }] : [];
    return c.status === 'D' ? [{ path: c.path, link }] : c.status === 'R' ? [{ path: c.from!, link }] : [];
  });
}
