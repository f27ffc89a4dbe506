import path from 'node:path';

/**
 * `candidate` relative to `root` when it is `root` itself ('') or lies beneath it; null when it is elsewhere. Both are
 * taken as given (no symbolic links resolved). A name that merely starts with dots (`..weird.ts`) is beneath, and on
 * Windows a path on another drive is elsewhere (path.relative answers it absolute).
 */
export function relativeWithin(root: string, candidate: string): string | null {
  const rel = path.relative(root, candidate);
  const outside = rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel);
  return outside ? null : rel;
}

/** `to` relative to `from`, with `/` between its parts on every platform (how the repository and the ledger name paths). */
export function relativePosix(from: string, to: string): string {
  return path.relative(from, to).split(path.sep).join('/');
}
