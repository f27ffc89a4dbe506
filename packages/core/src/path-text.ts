/**
 * Paths as text. Node takes and gives every path given as a string (a spawn's cwd, process.cwd(), the environment) as
 * UTF-8, so a directory whose name holds a byte that is not UTF-8 (a Latin-1 `é`, 0xE9) cannot be named by a
 * string: decoding it puts U+FFFD in the byte's place, and that string names another directory or none. Such a
 * repository is refused, saying so, rather than used at a path that is not its own (rt48 f01).
 */
import { isUtf8 } from 'node:buffer';
import { existsSync, statSync } from 'node:fs';
import { DelegateGitError } from './errors.js';

const REPLACEMENT = '\uFFFD';

export function notUtf8Error(shown: string, options?: { cause?: unknown }): DelegateGitError {
  return new DelegateGitError(
    'NOT_A_REPOSITORY',
    `The repository's path (${shown}, with ${REPLACEMENT} for each byte that is not UTF-8) is not valid UTF-8, which delegate-git cannot use: Node.js, which runs it, takes every path as UTF-8 text, so it would reach another directory or none. Move or rename the repository (or the directory holding that byte) to a name that is UTF-8, then run this again.`,
    options,
  );
}

/** A path git printed alone (`rev-parse --git-dir`): its output but the final newline; refused if not UTF-8. */
export function pathOutput(bytes: Buffer): string {
  const text = bytes.toString('utf8');
  const shown = text.endsWith('\n') ? text.slice(0, -1) : text;
  if (!isUtf8(bytes)) throw notUtf8Error(shown);
  return shown;
}

/**
 * Whether `cwd` is this process's working directory as Node decoded it, and does not name it: its real name is not
 * UTF-8. A directory really named with U+FFFD (bytes EF BF BD) is its own name, and is not refused.
 */
export function isUndecodableCwd(cwd: string): boolean {
  if (!cwd.includes(REPLACEMENT) || cwd !== process.cwd()) return false;
  try {
    const named = statSync(cwd);
    const real = statSync('.');
    return named.ino !== real.ino || named.dev !== real.dev;
  } catch {
    return existsSync('.');
  }
}

/** The variables that name a repository's directories for git: Node decodes them as it decodes a path. */
const GIT_PATH_VARIABLES = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_COMMON_DIR', 'GIT_INDEX_FILE'] as const;

/**
 * A git path variable (git sets GIT_DIR for a hook in a linked worktree) that was decoded with U+FFFD and names
 * nothing: git, given it back as UTF-8, would look for another directory. Null when there is none.
 */
export function undecodableGitVariable(env: NodeJS.ProcessEnv): string | null {
  for (const name of GIT_PATH_VARIABLES) {
    const value = env[name];
    if (value?.includes(REPLACEMENT) && !existsSync(value)) return value;
  }
  return null;
}

/** Whether any path the quick pre-commit path would read may have been decoded wrongly: it then leaves it to git. */
export function mayBeUndecoded(cwd: string, env: NodeJS.ProcessEnv): boolean {
  return cwd.includes(REPLACEMENT) || GIT_PATH_VARIABLES.some((name) => env[name]?.includes(REPLACEMENT));
}
