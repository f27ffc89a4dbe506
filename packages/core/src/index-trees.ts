/**
 * The trees an index will commit, walked as `git write-tree` walks them: a directory the index's cache tree still
 * names keeps that tree id, and only the directories a change invalidated are hashed from their entries. The same
 * walk can digest the governed entries (path, mode, id) of each directory, bottom up (and the names of some others), so that a directory already
 * digested under the same governance (known by its tree id) is not read again: the cost follows what changed since
 * the last commit, not the size of the index.
 */
import type { CacheTreeNode, GitIndex } from './index-file.js';
import { digestOf } from './object-hash.js';

/** How governedness is told, and what is already known of directories by tree id. */
export interface GovernedDigests {
  /**
   * Whether a path (UTF-8) is governed; null when that cannot be told here (the walk then gives no digest). `link`:
   * the entry is a symbolic link or a submodule, governed also by what it could bring beneath its path.
   */
  isGoverned(path: string, link: boolean): boolean | null;
  /**
   * Whether an entry that is not governed is digested by its name alone (its content may change without changing
   * the digest): the names `exclude` takes out, which can be one file with a governed name (fold-collisions.ts).
   */
  nameCounts?(path: string): boolean;
  known(tree: string, dir: string): string | undefined;
  learn(tree: string, dir: string, digest: string): void;
}

export type IndexTree =
  /** The root tree's id (hex), and its governed entries' digest (NOTHING_GOVERNED when none) when asked for. */
  | { tree: string; digest: string | null }
  /** Asked for a digest that could not be told: the walk stopped there. */
  | { tree: null; digest: null };

/** The digest of a directory that holds nothing governed. */
const NOTHING_GOVERNED = '-';
/** Smaller directories are digested again from their entries rather than remembered (keeps the facts few). */
const REMEMBERED_FROM_ENTRIES = 64;

class Unknown extends Error {}

/** A symbolic link (0o120000) or a gitlink (0o160000), as the index stores their modes. */
function isLinkMode(mode: number): boolean {
  return mode === 0o120000 || mode === 0o160000;
}

/** `algorithm`: the repository's object format ('sha1', or 'sha256' for `--object-format=sha256`). */
export function indexTree(
  index: GitIndex,
  algorithm: 'sha1' | 'sha256',
  digests?: GovernedDigests,
): IndexTree {
  const walk = new Walk(index, algorithm, digests ?? null);
  try {
    const root = walk.directory('', 0, index.count, index.cacheTree ?? undefined);
    return { tree: root.oid.toString('hex'), digest: digests ? root.digest : null };
  } catch (e) {
    if (e instanceof Unknown) return { tree: null, digest: null };
    throw e;
  }
}

class Walk {
  constructor(
    private readonly index: GitIndex,
    private readonly algorithm: 'sha1' | 'sha256',
    private readonly digests: GovernedDigests | null,
  ) {}

  /**
   * The directory `dir` ('' for the root), whose entries are exactly [lo, hi). Tree objects are built as latin1
   * strings (one character per byte): a Buffer per entry costs far more in a process V8 has not warmed up.
   */
  directory(
    dir: string,
    lo: number,
    hi: number,
    node: CacheTreeNode | undefined,
  ): { oid: Buffer; digest: string } {
    const { index, digests } = this;
    const cached = node?.oid ?? null;
    if (cached) {
      const known = digests ? digests.known(cached.toString('hex'), dir) : NOTHING_GOVERNED;
      if (known !== undefined) return { oid: cached, digest: known };
    }
    const prefixLength = dir === '' ? 0 : dir.length + 1;
    let tree = '';
    let governed = '';
    for (let i = lo; i < hi; ) {
      const name = index.nameOf(i);
      const slash = name.indexOf('/', prefixLength);
      if (slash < 0) {
        const entry = `${index.modeOf(i).toString(8)} ${name.slice(prefixLength)}\0${index.oidBytesOf(i)}`;
        if (!cached) tree += entry;
        if (digests) {
          const path = index.pathOf(i);
          if (this.isGoverned(path, isLinkMode(index.modeOf(i)))) governed += entry;
          else if (digests.nameCounts?.(path)) governed += `name ${name.slice(prefixLength)}\0`;
        }
        i++;
        continue;
      }
      const sub = name.slice(0, slash);
      const child = node?.children.get(name.slice(prefixLength, slash));
      const end = this.endOf(sub, i, hi, child);
      const { oid, digest } = this.directory(sub, i, end, child);
      const entry = `40000 ${name.slice(prefixLength, slash)}\0`;
      if (!cached) tree += entry + oid.toString('latin1');
      if (digest !== NOTHING_GOVERNED) governed += entry + digest;
      i = end;
    }
    const oid = cached ?? this.hashObject('tree', tree);
    const digest = governed === '' ? NOTHING_GOVERNED : this.hashObject('governed', governed).toString('hex');
    if (digests && (dir === '' || hi - lo >= REMEMBERED_FROM_ENTRIES))
      digests.learn(oid.toString('hex'), dir, digest);
    return { oid, digest };
  }

  /**
   * Where the entries of directory `sub` (starting at `from`) end: a valid cache-tree node counts them, checked at
   * both edges; otherwise they are scanned.
   */
  private endOf(sub: string, from: number, hi: number, child: CacheTreeNode | undefined): number {
    const prefix = `${sub}/`;
    const { index } = this;
    if (child?.oid) {
      const end = from + child.entryCount;
      if (
        child.entryCount > 0 &&
        end <= hi &&
        index.nameOf(end - 1).startsWith(prefix) &&
        (end === hi || !index.nameOf(end).startsWith(prefix))
      )
        return end;
    }
    let end = from + 1;
    while (end < hi && index.nameOf(end).startsWith(prefix)) end++;
    return end;
  }

  private isGoverned(path: string, link: boolean): boolean {
    const governed = this.digests!.isGoverned(path, link);
    if (governed === null) throw new Unknown();
    return governed;
  }

  /** `body` is latin1: its length is its length in bytes. */
  private hashObject(type: string, body: string): Buffer {
    return Buffer.from(digestOf(this.algorithm, `${type} ${body.length}\0${body}`));
  }
}
