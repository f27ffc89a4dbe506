/**
 * The few things the pre-commit hook's quick answer reads from a git directory without starting git: where the
 * directories and the index are, what a ref names, and the tree of a commit git has not packed yet. Each answers
 * only when it is certain, and `undefined` (or null) otherwise, so the caller asks git.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { inflateZlib } from './inflate.js';
import { hexDigestOf } from './object-hash.js';

export interface GitDirs {
  /** The repository's (or, in a linked worktree, the worktree's) git dir: HEAD and the index. */
  gitDir: string;
  /** Shared refs, objects, packed-refs. */
  commonDir: string;
  indexFile: string;
}

/**
 * As git finds them for a hook: GIT_DIR (git sets it in a linked worktree) or the `.git` at the top of the work tree
 * (the hook's cwd), a directory or a file naming one; GIT_COMMON_DIR or the git dir's `commondir` file; and
 * GIT_INDEX_FILE (set by `git commit`, a temporary index for `commit -a` and `commit <paths>`). Null when git
 * would read something this does not (another object directory, refs kept in a reftable).
 */
export function gitDirsOf(cwd: string, env: NodeJS.ProcessEnv): GitDirs | null {
  if (env.GIT_OBJECT_DIRECTORY) return null;
  try {
    let gitDir: string;
    if (env.GIT_DIR) gitDir = path.resolve(cwd, env.GIT_DIR);
    else {
      const dotGit = path.join(cwd, '.git');
      gitDir = statSync(dotGit).isDirectory()
        ? dotGit
        : path.resolve(cwd, /^gitdir: (.+)$/m.exec(readFileSync(dotGit, 'utf8'))![1]!.trim());
    }
    const named = env.GIT_COMMON_DIR ?? readText(path.join(gitDir, 'commondir'))?.trim();
    const commonDir = named ? path.resolve(env.GIT_COMMON_DIR ? cwd : gitDir, named) : gitDir;
    if (exists(path.join(commonDir, 'reftable'))) return null;
    const indexFile = env.GIT_INDEX_FILE ? path.resolve(cwd, env.GIT_INDEX_FILE) : path.join(gitDir, 'index');
    return { gitDir, commonDir, indexFile };
  } catch {
    return null;
  }
}

/** The refs git keeps per worktree (gitrepository-layout(5)); every other ref is shared. */
const PER_WORKTREE = /^(HEAD$|refs\/(worktree|bisect|rewritten)\/)/;
const OBJECT_ID = /^([0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * The object `name` (HEAD, or a full ref name) points to, following symbolic refs: its id; null when there is no
 * such ref (an unborn branch, no ledger yet); undefined when it cannot be told here.
 */
export function refTarget(dirs: GitDirs, name: string, depth = 0): string | null | undefined {
  if (depth > 5) return undefined;
  const dir = PER_WORKTREE.test(name) ? dirs.gitDir : dirs.commonDir;
  let text: string;
  try {
    text = readFileSync(path.join(dir, name), 'utf8').trim();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? packedRef(dirs, name) : undefined;
  }
  if (OBJECT_ID.test(text)) return text;
  const symbolic = /^ref: (refs\/\S+)$/.exec(text);
  return symbolic ? refTarget(dirs, symbolic[1]!, depth + 1) : undefined;
}

/** `packed-refs`: "<id> <name>" lines (and "^<id>" lines peeling the tag above). */
function packedRef(dirs: GitDirs, name: string): string | null | undefined {
  let text: string;
  try {
    text = readFileSync(path.join(dirs.commonDir, 'packed-refs'), 'utf8');
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined;
  }
  const suffix = ` ${name}\n`;
  for (let at = text.indexOf(suffix); at >= 0; at = text.indexOf(suffix, at + 1)) {
    const lineStart = text.lastIndexOf('\n', at - 1) + 1;
    const id = text.slice(lineStart, at);
    if (OBJECT_ID.test(id)) return id;
  }
  return null;
}

/**
 * The tree of `commit` when it is a loose object (as every commit is until git packs it), checked against its id;
 * null when it is packed or not what it should be.
 */
export function looseCommitTree(dirs: GitDirs, commit: string): string | null {
  let object: Uint8Array | null;
  try {
    object = inflateZlib(
      readFileSync(path.join(dirs.commonDir, 'objects', commit.slice(0, 2), commit.slice(2))),
    );
  } catch {
    return null;
  }
  if (object === null) return null;
  const algorithm = commit.length === 40 ? 'sha1' : 'sha256';
  if (hexDigestOf(algorithm, object) !== commit) return null;
  const tree = /^commit \d+\0tree ([0-9a-f]+)\n/.exec(Buffer.from(object).toString('latin1', 0, 100));
  return tree && tree[1]!.length === commit.length ? tree[1]! : null;
}

/** A file's text, or null when it cannot be read (missing, unreadable): the caller then asks git. */
export function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

function exists(file: string): boolean {
  try {
    statSync(file);
    return true;
  } catch {
    return false;
  }
}
