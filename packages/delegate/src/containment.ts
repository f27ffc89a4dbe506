/**
 * Containment: where a unit may read and write. Both sides of every comparison are canonical (symlinks
 * resolved through the deepest existing ancestor), the comparison is segment-wise, and a relative path is
 * always resolved against an explicit root (the workspace or the session root), never process.cwd(): most
 * path escapes in the original plugin came from one of those three being skipped.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DelegateGitError } from '@delegate-git/core/errors';
import { relativeWithin } from '@delegate-git/core/path-within';
import { UNPRINTABLE } from '@delegate-git/core/shown-path';
import { isWellFormed } from '@delegate-git/core/well-formed';

/** Symlink hops followed before a path is declared unresolvable (Linux's own limit is 40). */
const MAX_LINK_HOPS = 40;

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

function requireAbsolute(p: string, what: string): void {
  if (!path.isAbsolute(p)) {
    // A programming error, not a user one: resolving it here would silently use process.cwd().
    throw new Error(`${what} must be absolute, got ${JSON.stringify(p)}`);
  }
}

function realOrSpelled(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return p;
  }
}

function rootOf(p: string): string {
  return path.parse(p).root;
}

/**
 * Resolves `p` (absolute) to the path the file system would really use: realpath of the deepest existing
 * ancestor, plus the part that does not exist yet. A dangling symlink along the way is followed to where it
 * points, because writing through it would create the file there. If realpath fails for another reason (no
 * permission), the spelling is kept: the later read or write fails the same way.
 */
export function canonicalisePath(p: string): string {
  requireAbsolute(p, 'canonicalisePath: the path');
  let current = path.resolve(p);
  const tail: string[] = [];
  let hops = 0;
  for (;;) {
    try {
      return path.join(fs.realpathSync.native(current), ...tail);
    } catch (error) {
      const code = errorCode(error);
      if (code === 'ELOOP') break;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') return path.join(current, ...tail);
    }
    let link: string | null = null;
    try {
      if (fs.lstatSync(current).isSymbolicLink()) link = fs.readlinkSync(current);
    } catch {
      // Does not exist (or a parent is a file): part of the tail.
    }
    if (link !== null) {
      if (++hops > MAX_LINK_HOPS) break;
      // A relative target is relative to the directory that really holds the link, which exists.
      current = path.resolve(realOrSpelled(path.dirname(current)), link);
      continue;
    }
    if (current === rootOf(current)) return path.join(current, ...tail);
    tail.unshift(path.basename(current));
    current = path.dirname(current);
  }
  throw new DelegateGitError('IO', `${p} cannot be resolved: too many levels of symbolic links`);
}

/** Resolves `p` against `base` (absolute paths kept) and canonicalises it. */
export function canonicaliseAgainst(base: string, p: string): string {
  requireAbsolute(base, 'canonicaliseAgainst: the base');
  return canonicalisePath(path.resolve(base, p));
}

/**
 * True if `candidate` is `root` or inside it, segment by segment: `/w/src-extra` is not inside `/w/src`. Both
 * should already be canonical; this comparison is purely lexical. Case-insensitive on Windows.
 */
export function isPathWithin(root: string, candidate: string): boolean {
  const fold = (p: string) => (process.platform === 'win32' ? p.toLowerCase() : p);
  return relativeWithin(fold(root), fold(candidate)) !== null;
}

function canonicalRoots(entries: readonly string[], base: string): string[] {
  return entries
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => canonicaliseAgainst(base, entry));
}

export type WorkspaceResolution =
  | { ok: true; dir: string; source: 'session-root' | 'within-session-root' | 'emitAllowlist' }
  | { ok: false; reason: string };

/**
 * Chooses the workspace for a unit. `workspaceDir` is written by the architect, so it is trusted only inside the
 * session root or an operator's emitAllowlist root. There is no interactive approval here: anything else is
 * refused. A relative `requested` (and a relative emitAllowlist entry) resolves against the session root.
 */
export function resolveWorkspace(
  requested: string | undefined,
  opts: { sessionRoot: string; emitAllowlist: string[]; gitDirs?: readonly string[] },
): WorkspaceResolution {
  const sessionRoot = canonicalisePath(opts.sessionRoot);
  if (requested === undefined || requested.trim() === '') {
    return { ok: true, dir: sessionRoot, source: 'session-root' };
  }
  let dir: string;
  try {
    dir = canonicaliseAgainst(sessionRoot, requested.trim());
  } catch (error) {
    return { ok: false, reason: `workspaceDir ${JSON.stringify(requested)}: ${(error as Error).message}` };
  }
  // Under the session root or an allowlisted root alike: another repository's git directory is no workspace either.
  if (entersGitDir(dir, opts.gitDirs)) {
    return {
      ok: false,
      reason: `workspaceDir ${JSON.stringify(requested)} is inside a git directory, where a unit may never work (hooks and config there run code)`,
    };
  }
  if (isPathWithin(sessionRoot, dir)) return { ok: true, dir, source: 'within-session-root' };
  if (canonicalRoots(opts.emitAllowlist, sessionRoot).some((root) => isPathWithin(root, dir))) {
    return { ok: true, dir, source: 'emitAllowlist' };
  }
  return {
    ok: false,
    reason:
      `workspaceDir ${JSON.stringify(requested)} resolves to ${dir}, outside the session root ${sessionRoot} and ` +
      'every emitAllowlist root; a unit cannot choose to work there. If it should, an operator can add the ' +
      'directory to emitAllowlist in the operator settings.',
  };
}

/** A worker's path holding any of these shows other than it is (`src/\u202Esj.txt` shows as `src/txt.js`). */
export { UNPRINTABLE } from '@delegate-git/core/shown-path';

export type EmissionPathCheck = { ok: true; absolute: string } | { ok: false; reason: string };

/**
 * Whether `absolute` (canonical) is in a git directory: any `.git` segment of the path, in any letter case
 * (case-insensitive file systems open it too), or under one of `gitDirs`, the repository's real git directories
 * (`git rev-parse --git-dir` and `--git-common-dir`, canonical), whatever their names: a gitfile, a symbolic link or
 * GIT_DIR can put them anywhere. Hooks and config there run code, and the operator's settings live there.
 */
export function entersGitDir(absolute: string, gitDirs: readonly string[] = []): boolean {
  return (
    absolute.split(path.sep).some((segment) => segment.toLowerCase() === '.git') ||
    gitDirs.some((dir) => isPathWithin(dir, absolute))
  );
}

/**
 * Where a file the unit names for reading (context, contract) is: canonical, inside `workspace` (canonical) and in no
 * git directory, or why not. The worker may be shown it, and the record signs its path and digest into a shared
 * ledger: a file elsewhere (a key, /etc, a device) must never be either.
 */
export function locateReadable(
  workspace: string,
  requested: string,
  gitDirs: readonly string[],
): { absolute: string } | string {
  let absolute: string;
  try {
    absolute = canonicaliseAgainst(workspace, requested);
  } catch {
    return 'cannot be resolved (symbolic link loop)';
  }
  if (absolute === workspace || !isPathWithin(workspace, absolute)) return 'outside the workspace';
  // Emission's rule: nothing in a git directory (config, hooks, the operator's settings) is read for the worker.
  if (entersGitDir(absolute, gitDirs)) return 'inside a git directory';
  return { absolute };
}

/**
 * Checks a path the worker wants to write. Relative paths resolve against the workspace. The canonical result must
 * lie within the workspace or an emitAllowlist root, which refuses `..` escapes, absolute paths elsewhere and symlinks
 * inside that lead out. Paths in a git directory (entersGitDir, with the repository's own as `gitDirs`) are refused
 * as well: hooks and config there run code, and the ledger lives there.
 */
export function checkEmissionPath(
  spelled: string,
  opts: { workspace: string; emitAllowlist: string[]; gitDirs?: readonly string[] },
): EmissionPathCheck {
  const shown = `\`${spelled}\``;
  if (spelled.trim() === '') return { ok: false, reason: 'an empty path was named; not written' };
  if (spelled.includes('\0')) return { ok: false, reason: `${shown} contains a NUL byte; not written` };
  // A name with a control character (an escape sequence, a line break) is no file a person meant to create.
  if (UNPRINTABLE.test(spelled))
    return { ok: false, reason: `${JSON.stringify(spelled)} contains a control character; not written` };
  // The file system would get U+FFFD in its place, and the record of it could not be signed, found only after
  // the file was written and its code run.
  if (!isWellFormed(spelled))
    return {
      ok: false,
      reason: `${JSON.stringify(spelled)} is not a valid file name (it holds half of a UTF-16 surrogate pair); not written`,
    };
  const workspace = canonicalisePath(opts.workspace);
  let absolute: string;
  let roots: string[];
  try {
    absolute = canonicaliseAgainst(workspace, spelled);
    roots = [workspace, ...canonicalRoots(opts.emitAllowlist, workspace)];
  } catch (error) {
    return { ok: false, reason: `${shown}: ${(error as Error).message}; not written` };
  }
  const root = roots.find((candidate) => isPathWithin(candidate, absolute));
  if (root === undefined) {
    return {
      ok: false,
      reason:
        `${shown} resolves to ${absolute}, outside the workspace ${workspace}; not written. Paths must stay inside ` +
        'the workspace (no `..`, no absolute paths elsewhere, no symlinks leading out); an operator can allow ' +
        'another root with emitAllowlist.',
    };
  }
  if (entersGitDir(absolute, opts.gitDirs)) {
    return {
      ok: false,
      reason: `${shown} is inside a git directory, which a unit may never write; not written`,
    };
  }
  return { ok: true, absolute };
}
