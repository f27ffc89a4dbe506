/**
 * The line a policy or key file's versions were admitted along (promotion.ts, admittedAt): the contents the path held
 * along a commit's first-parent history.
 */
import { git, literalPathspecs, PINNED_LOG } from './git.js';

/** The contents `path` held along `commit`'s first-parent history, oldest first, back to where it was last added. */
export async function pathVersions(
  repo: { cwd: string; env?: NodeJS.ProcessEnv },
  commit: string,
  path: string,
): Promise<string[]> {
  const out = await git(
    [
      'log',
      ...PINNED_LOG,
      '--first-parent',
      '--diff-merges=first-parent',
      '--raw',
      '-z',
      '--no-abbrev',
      '--no-renames',
      '--format=%x01',
      commit,
      '--',
      ...literalPathspecs([path]),
    ],
    { cwd: repo.cwd, env: repo.env },
  );
  const newestFirst: string[] = [];
  const tokens = out.toString('utf8').split('\0');
  for (let i = 0; i < tokens.length; i++) {
    const meta = tokens[i]!.replace(/^\x01?\n*/, '');
    if (!meta.startsWith(':')) continue; // a commit's header
    i++; // the path the change is about: this one
    const [, , , blob, status] = meta.slice(1).split(' ');
    if (status === 'D') break; // what came before a deletion is another life of the path
    newestFirst.push(blob!);
    if (status === 'A') break;
  }
  return newestFirst.reverse();
}
