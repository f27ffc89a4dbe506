/**
 * The three places a check can read from (DESIGN 4.2): the work tree, the index, or a commit's tree. Policy, trust
 * root and content are always read from the same snapshot they judge, so `init` works before its first commit.
 */

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { type CatFileBatch, git, literalPathspecs, parseTreeObject } from './git.js';
import { splitZ } from './git-fields.js';
import { relativePosix } from './path-within.js';

export { splitZ };

export interface SnapshotFile {
  path: string;
  blob: string;
  mode: string;
  /** A submodule (gitlink, listed only when asked for): `blob` is a commit of another repository. */
  submodule?: boolean;
  /** A symbolic link (mode 120000): `blob` is its target's text. */
  symlink?: boolean;
}

export interface Snapshot {
  readonly label: string;
  /** For the index: the work tree it is staged from, where a file not staged yet may lie. */
  readonly stagedFrom?: string;
  readFile(file: string): Promise<Buffer | null>;
  /** Every file below `dir` (repository-relative POSIX paths). */
  listFiles(dir: string): Promise<string[]>;
}

/** Read synchronously: a policy and a few key files, where each asynchronous read costs a thread-pool round trip. */
export function worktreeSnapshot(topLevel: string): Snapshot {
  return {
    label: 'the work tree',
    async readFile(file) {
      try {
        return readFileSync(path.join(topLevel, file));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
    },
    async listFiles(dir) {
      try {
        const entries = readdirSync(path.join(topLevel, dir), { recursive: true, withFileTypes: true });
        return entries
          .filter((e) => e.isFile())
          .map((e) => relativePosix(topLevel, path.join(e.parentPath, e.name)))
          .sort();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw error;
      }
    },
  };
}

/**
 * The work tree as this checkout holds it, for reading its policy and keys: a sparse checkout may leave some of
 * `.delegate-git` out of the work tree (entries marked skip-worktree), and the index holds the checkout's version of
 * what it leaves out. Without a sparse checkout, the work tree.
 */
export function checkoutSnapshot(
  top: string,
  gitDir: string,
  batch: CatFileBatch,
  env?: NodeJS.ProcessEnv,
): Snapshot {
  const worktree = worktreeSnapshot(top);
  if (!existsSync(path.join(gitDir, 'info', 'sparse-checkout'))) return worktree;
  const index = gitSnapshot(top, batch, null, env);
  const leftOut = async (pathspec: string) => {
    const listed = await git(['ls-files', '-t', '-z', '--', `:(literal)${pathspec}`], { cwd: top, env });
    return splitZ(listed).flatMap((entry) => (entry.startsWith('S ') ? [entry.slice(2)] : []));
  };
  return {
    label: 'the sparse checkout (the index for what it leaves out)',
    async readFile(file) {
      const here = await worktree.readFile(file);
      if (here !== null) return here;
      return (await leftOut(file)).includes(file) ? index.readFile(file) : null;
    },
    async listFiles(dir) {
      const [here, out] = await Promise.all([worktree.listFiles(dir), leftOut(`${dir}/`)]);
      return [...new Set([...here, ...out])].sort();
    },
  };
}

/** The index (`:path`) or a tree-ish (`<rev>:path`). */
export function gitSnapshot(
  cwd: string,
  batch: CatFileBatch,
  rev: string | null,
  env?: NodeJS.ProcessEnv,
): Snapshot {
  const prefix = rev === null ? ':' : `${rev}:`;
  // The blob each listed file is, so that reading it does not make git look its path up again: a lookup reads every
  // tree on the way, and a keys directory of 3,000 files took 10 s to read by path (red-team round 44).
  const listed = new Map<string, string>();
  const list = (files: ReadonlyArray<{ path: string; blob: string }>): string[] =>
    files.map((f) => {
      listed.set(f.path, f.blob);
      return f.path;
    });
  return {
    label: rev === null ? 'the index' : rev,
    ...(rev === null && { stagedFrom: cwd }),
    async readFile(file) {
      const object = await batch.read(listed.get(file) ?? `${prefix}${file}`);
      return object && object.type === 'blob' ? object.content : null;
    },
    async listFiles(dir) {
      if (rev !== null && !/[\n\r]/.test(dir)) return list(await filesBelow(batch, rev, dir));
      return list(
        rev === null ? await stagedFiles(cwd, [`${dir}/`], env) : await treeFiles(cwd, rev, [`${dir}/`], env),
      );
    },
  };
}

/**
 * The files (blobs and symbolic links, not gitlinks) beneath `dir` at `rev`, in `git ls-tree -r` order, read through
 * the object reader already open: verify's walk lists the keys directory at every change of a long history, and a
 * git process for each was most of its time.
 */
async function filesBelow(
  batch: CatFileBatch,
  rev: string,
  dir: string,
): Promise<Array<{ path: string; blob: string }>> {
  const root = await batch.read(`${rev}:${dir}`);
  if (root?.type !== 'tree') return [];
  const oidBytes = root.oid.length / 2;
  const files: Array<{ path: string; blob: string }> = [];
  const walk = async (tree: Buffer, prefix: string): Promise<void> => {
    for (const entry of parseTreeObject(tree, oidBytes)) {
      const path = `${prefix}/${entry.name}`;
      if (entry.mode === TREE_MODE) {
        const sub = await batch.read(entry.oid);
        if (sub?.type === 'tree') await walk(sub.content, path);
      } else if (entry.mode !== GITLINK_MODE) files.push({ path, blob: entry.oid });
    }
  };
  await walk(root.content, dir);
  return files;
}

const TREE_MODE = '40000';
const GITLINK_MODE = '160000';

/** Staged entries (stage 0) as `git ls-files -s -z` reports them. */
export async function stagedFiles(
  cwd: string,
  pathspecs: string[] = [],
  env?: NodeJS.ProcessEnv,
): Promise<SnapshotFile[]> {
  const out = await git(['ls-files', '-s', '-z', '--', ...literalPathspecs(pathspecs)], { cwd, env });
  const files: SnapshotFile[] = [];
  for (const entry of splitZ(out)) {
    // "<mode> <blob> <stage>\t<path>"
    const tab = entry.indexOf('\t');
    const [mode, blob, stage] = entry.slice(0, tab).split(' ');
    if (stage === '0' && mode && blob && isRegularFile(mode))
      files.push({ path: entry.slice(tab + 1), blob, mode });
  }
  return files;
}

/** Files of a tree (`git ls-tree -r -z`); `submodules`: its gitlinks too, marked (the gates judge them). */
export async function treeFiles(
  cwd: string,
  rev: string,
  pathspecs: string[] = [],
  env?: NodeJS.ProcessEnv,
  opts: { submodules?: boolean } = {},
): Promise<SnapshotFile[]> {
  const out = await git(['ls-tree', '-r', '-z', '--full-tree', rev, '--', ...pathspecs], { cwd, env });
  const files: SnapshotFile[] = [];
  for (const entry of splitZ(out)) {
    // "<mode> <type> <object>\t<path>"
    const tab = entry.indexOf('\t');
    const [mode, type, blob] = entry.slice(0, tab).split(' ');
    if (!mode || !blob) continue;
    if (type === 'blob' && isRegularFile(mode))
      files.push({
        path: entry.slice(tab + 1),
        blob,
        mode,
        ...(mode === SYMLINK_MODE ? { symlink: true } : {}),
      });
    else if (type === 'commit' && opts.submodules)
      files.push({ path: entry.slice(tab + 1), blob, mode, submodule: true });
  }
  return files;
}

const SYMLINK_MODE = '120000';

/** Regular files and symlinks carry content a record can judge; gitlinks (submodules) do not. */
function isRegularFile(mode: string): boolean {
  return mode !== GITLINK_MODE;
}
