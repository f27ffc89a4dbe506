/**
 * Where a planned file would go: what stands there now, and whether an earlier file of the same reply needs the name
 * as a directory (or is the file a later one would need as its directory). A worker chose each name, so whatever the
 * file system or the plan cannot take is the refusal of that one file, said in a sentence, never an errno of the run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { relativePosix } from '@delegate-git/core/path-within';

export function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

export type Existing = 'file' | 'other' | null;

/**
 * What stands at `absolute`, or why nothing can: the worker chose the name, so a name the file system refuses is a
 * refusal of that file, never an error of the run.
 */
export function existingEntry(
  shown: string,
  absolute: string,
  workspace: string,
): { entry: Existing } | { error: string } {
  try {
    return { entry: fs.lstatSync(absolute).isFile() ? 'file' : 'other' };
  } catch (error) {
    switch (errorCode(error)) {
      case 'ENOENT':
        return { entry: null };
      case 'ENOTDIR':
        return {
          error:
            `${shown} would go under \`${relativePosix(workspace, nonDirectoryAbove(absolute))}\`, which is a file, ` +
            'not a directory; not written',
        };
      case 'ENAMETOOLONG':
        return {
          error: `${shown}: name too long (a name in it, or the whole path, is longer than the file system allows); not written`,
        };
      default:
        return { error: `${shown} could not be looked up (${(error as Error).message}); not written` };
    }
  }
}

/** The nearest existing ancestor of `absolute`: after ENOTDIR, the file standing where a directory must go. */
function nonDirectoryAbove(absolute: string): string {
  for (const dir of ancestorsOf(absolute)) {
    try {
      fs.lstatSync(dir);
      return dir;
    } catch {
      // Not there either: further up.
    }
  }
  return path.parse(absolute).root;
}

function* ancestorsOf(absolute: string): Generator<string> {
  for (let dir = path.dirname(absolute); ; dir = path.dirname(dir)) {
    yield dir;
    if (path.dirname(dir) === dir) return;
  }
}

/**
 * Files planned so far, and the directories they need: a later file named like one of those directories, or under
 * one of those files, could not be written beside it (EISDIR or ENOTDIR once the first had landed).
 */
export class PlannedNames {
  private readonly files = new Map<string, string>();
  private readonly dirs = new Map<string, string>();

  add(spelled: string, absolute: string): void {
    this.files.set(absolute, spelled);
    for (const dir of ancestorsOf(absolute)) {
      if (this.dirs.has(dir)) break; // and so are the directories above it
      this.dirs.set(dir, spelled);
    }
  }

  collision(shown: string, absolute: string): string | null {
    const under = this.dirs.get(absolute);
    if (under !== undefined) {
      return (
        `${shown} is also the directory of \`${under}\`, planned earlier in this reply; one name cannot be a file ` +
        'and a directory. Not written.'
      );
    }
    for (const dir of ancestorsOf(absolute)) {
      const file = this.files.get(dir);
      if (file !== undefined) {
        return (
          `${shown} would go under \`${file}\`, which this reply writes as a file; one name cannot be a file and a ` +
          'directory. Not written.'
        );
      }
    }
    return null;
  }
}
