/**
 * A push from a shallow clone, on a server that takes one (`receive.shallowUpdate`), can leave the server without
 * the history behind it: every clone of it is then shallow, and `verify`, which judges the history of the policy, the
 * keys and the ledger, can answer for no branch again (rt57 f08). git hands the hook the client's shallow list in
 * `GIT_SHALLOW_FILE`; a commit there cuts the server's history only when the server lacks one of its parents (a
 * depth-1 clone of the server pushing back cuts nothing: rt58 f01).
 */
import fs from 'node:fs';
import path from 'node:path';
import { git } from './git.js';
import type { Repository } from './repository.js';

export const SHALLOW_PUSH_REFUSED =
  'this push comes from a shallow clone and lacks history this repository does not hold: taken, it would make the repository shallow, and then no clone of it could be verified. Fetch the whole history (`git fetch --unshallow`) and push again';

/** The commits of the push's shallow list whose parents this repository lacks (none for a push with its history). */
export async function shallowCuts(repo: Repository): Promise<string[]> {
  const env = repo.env ?? process.env;
  const pushed = env.GIT_SHALLOW_FILE;
  if (!pushed) return [];
  const held = new Set(idsIn(path.join(repo.layout.commonDir, 'shallow')));
  const boundaries = idsIn(pushed).filter((id) => !held.has(id));
  if (boundaries.length === 0) return [];
  const opts = { cwd: repo.cwd, env };
  const cuts: string[] = [];
  for (const id of boundaries) {
    // The commit as stored: the shallow list makes git read a boundary as having no parents, not `cat-file commit`.
    const raw = (await git(['cat-file', 'commit', id], opts)).toString('utf8');
    const parents = [...raw.slice(0, raw.indexOf('\n\n')).matchAll(/^parent ([0-9a-f]+)$/gm)].map(
      (m) => m[1]!,
    );
    if (parents.length === 0) continue;
    const checked = await git(['cat-file', '--batch-check=%(objectname) %(objecttype)'], {
      ...opts,
      input: `${parents.join('\n')}\n`,
    });
    if (
      checked
        .toString('utf8')
        .split('\n')
        .some((line) => line.endsWith(' missing'))
    )
      cuts.push(id);
  }
  return cuts;
}

function idsIn(file: string): string[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return text.split('\n').filter((line) => line !== '');
}
