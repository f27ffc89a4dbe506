/**
 * Reads back what repositoryLayout's one `git rev-parse` printed: `--is-bare-repository --is-inside-work-tree
 * --show-object-format --git-dir --git-common-dir --show-cdup`, one answer a line. git prints a path as it is, so
 * a directory whose name holds a newline makes more lines, and where the paths end can no longer be told from the
 * output (rt48 f01). The first three answers never hold one; --show-cdup is `../` repeated and holds none (it
 * prints nothing outside a work tree, or, there, a work tree GIT_WORK_TREE names: a path). So the line count says
 * whether the paths can be read from it, and when they cannot, the caller asks git for each path alone.
 */
export interface LayoutOutput {
  bare: string;
  insideWorkTree: string;
  objectFormat: string;
  cdup: string;
  /** Null when a path held a newline (or the output has lines this does not expect): ask git for each alone. */
  paths: { gitDir: string; commonDir: string } | null;
}

export function readLayoutOutput(text: string): LayoutOutput | null {
  if (!text.endsWith('\n')) return null;
  const lines = text.slice(0, -1).split('\n');
  const [bare = '', insideWorkTree = '', objectFormat = ''] = lines;
  const inside = insideWorkTree === 'true';
  const cdup = inside ? (lines.at(-1) ?? '') : '';
  if (inside && !/^(\.\.\/)*$/.test(cdup)) return null;
  const [gitDir = '', commonDir = ''] = lines.slice(3);
  const plain = lines.length === (inside ? 6 : 5);
  return { bare, insideWorkTree, objectFormat, cdup, paths: plain ? { gitDir, commonDir } : null };
}
