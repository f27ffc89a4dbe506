/**
 * The commits a merge being committed takes in: what lets a refused merge tell content it takes unchanged from the
 * other side (approved there, most likely, its records not fetched) from content the merge itself made. git writes
 * MERGE_HEAD only once a merge stops, so its own pre-merge-commit hook reads what started it instead: the fetched
 * heads of a `git pull`, the revisions named to `git merge`.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { gitTry } from '@delegate-git/core/git';
import type { Repository } from '@delegate-git/core/repository';

export async function mergeSources(repo: Repository): Promise<string[]> {
  const opts = { cwd: repo.cwd, env: repo.env };
  // Pseudorefs, each worktree's own.
  const stored = (name: string) => readFile(path.join(repo.layout.gitDir, name), 'utf8').catch(() => '');
  const merging = await stored('MERGE_HEAD');
  if (merging) return idsOf(merging.split('\n'));
  const action = repo.env?.GIT_REFLOG_ACTION ?? '';
  if (action.startsWith('pull'))
    return idsOf((await stored('FETCH_HEAD')).split('\n').filter((l) => !l.includes('\tnot-for-merge\t')));
  if (!action.startsWith('merge ')) return [];
  const named = action
    .slice('merge '.length)
    .split(' ')
    .filter((word) => word !== '' && !word.startsWith('-'));
  const resolved = await Promise.all(
    named.map((rev) => gitTry(['rev-parse', '--verify', '-q', '--end-of-options', `${rev}^{commit}`], opts)),
  );
  return resolved.filter((r) => r.code === 0).map((r) => r.stdout.toString('utf8').trim());
}

function idsOf(lines: readonly string[]): string[] {
  return lines
    .map((l) => /^[0-9a-f]{40}(?:[0-9a-f]{24})?(?=\s|$)/.exec(l)?.[0])
    .filter((id) => id !== undefined);
}
