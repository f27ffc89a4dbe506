/**
 * The blob each work-tree path would be staged as: what a record about that path's content must name. A regular
 * file goes through `git hash-object` (its clean filters applied, as staging applies them). A symbolic link is
 * staged as its target's text, unfiltered; `hash-object <path>` would read the file the link points to instead, so
 * a reviewer's approval of a link would name content the commit never holds.
 */
import { lstatSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { git, gitText } from './git.js';

/**
 * Per path (repository-relative, in order): the blob id, or null when nothing is at that path (a dangling link is
 * something: git stages it). `write`: also store the blobs in the object store (`hash-object -w`).
 */
export async function worktreeBlobs(
  top: string,
  paths: readonly string[],
  opts: { env?: NodeJS.ProcessEnv; write: boolean },
): Promise<Array<string | null>> {
  const kinds = paths.map((p) => kindAt(path.join(top, p)));
  const write = opts.write ? ['-w'] : [];
  const files = paths.filter((_, i) => kinds[i] === 'file');
  const fileIds = files.length
    ? (await git(['hash-object', ...write, '--', ...files], { cwd: top, env: opts.env }))
        .toString('utf8')
        .split('\n')
        .filter(Boolean)
    : [];
  let next = 0;
  const ids: Array<string | null> = [];
  for (const [i, p] of paths.entries()) {
    if (kinds[i] === 'file') ids.push(fileIds[next++]!);
    else if (kinds[i] === 'link')
      ids.push(
        await gitText(['hash-object', ...write, '--no-filters', '--stdin'], {
          cwd: top,
          env: opts.env,
          input: readlinkSync(path.join(top, p), { encoding: 'buffer' }),
        }),
      );
    else ids.push(null);
  }
  return ids;
}

function kindAt(file: string): 'file' | 'link' | null {
  try {
    const stat = lstatSync(file);
    return stat.isSymbolicLink() ? 'link' : stat.isFile() ? 'file' : null;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}
