/**
 * A delegation's paths against its repository: the git directories, which a unit never reads or writes, and a
 * file's path as the receipt and the record name it. Shared by the delegation and its steps.
 */
import path from 'node:path';
import { relativePosix } from '@delegate-git/core/path-within';
import type { Repository } from '@delegate-git/core/repository';
import { canonicalisePath } from './containment.js';

/** The repository's git directories, canonical: a gitfile, a symbolic link or GIT_DIR may put them anywhere. */
export function gitDirsOf(repo: Repository): string[] {
  return [
    ...new Set([repo.layout.gitDir, repo.layout.commonDir].map((d) => canonicalisePath(path.resolve(d)))),
  ];
}

export function repositoryPathOf(top: string, absolute: string): string {
  return relativePosix(top, absolute);
}
