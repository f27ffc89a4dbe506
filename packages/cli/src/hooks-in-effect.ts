/**
 * Whether git runs the hooks init installed. A core.hooksPath set after init (in the global configuration, by another
 * tool, say) sends git to another directory, and the commit hook stops with no word (rt48 f08): the commands a user
 * runs on the way to a commit say so. Kept apart from hook-install.ts, which `delegate` does not load.
 */
import { existsSync } from 'node:fs';
import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { gitFailure, gitTry, type Repository } from '@delegate-git/core';

/** The first two lines of every hook this package writes (the second names the hook: `# delegate-git hook (x).`). */
const SHEBANG = '#!/bin/sh';
const MARKER = '# delegate-git hook (';

/** Ours by its first two lines, not by a mention anywhere: a user's hook may well name delegate-git's. */
export async function isOurs(file: string): Promise<boolean> {
  const [first, second] = (await readFile(file, 'utf8')).split('\n', 2);
  return first === SHEBANG && (second?.startsWith(MARKER) ?? false);
}

/** core.hooksPath with the scope it is set in; `--type=path` expands `~` as git does when it runs hooks. */
export async function configuredHooksPath(
  repo: Repository,
  top: string,
): Promise<{ value: string; scope: string } | null> {
  const args = ['config', '--show-scope', '--type=path', '--get', 'core.hooksPath'];
  const result = await gitTry(args, { cwd: top, env: repo.env });
  if (result.code === 1) return null; // not set
  if (result.code !== 0) throw gitFailure(args, result);
  const line = result.stdout.toString('utf8').replace(/\n$/, '');
  const tab = line.indexOf('\t');
  const value = line.slice(tab + 1);
  return value ? { value, scope: line.slice(0, tab) } : null;
}

/**
 * Why git does not run the commit hook init installed in the repository's own hooks directory, or null when it does,
 * or when init installed none there (`--no-hook`, or husky's files): a core.hooksPath names another directory whose
 * pre-commit runs no delegate-git. One git process; never throws (a warning must not fail the command it rides on).
 */
export async function hooksNotRun(repo: Repository): Promise<string | null> {
  const top = repo.layout.topLevel;
  const own = path.join(repo.layout.commonDir, 'hooks');
  if (top === null || !(await isOurs(path.join(own, 'pre-commit')).catch(() => false))) return null;
  const configured = await configuredHooksPath(repo, top).catch(() => null);
  if (configured === null) return null;
  const dir = path.resolve(top, configured.value);
  if ((await realDir(dir)) === (await realDir(own)) || (await runsDelegateGit(dir))) return null;
  return `git does not run delegate-git's commit hook in this repository: core.hooksPath is set to ${configured.value} in the ${configured.scope} git configuration, so git runs the hooks in ${dir}, not those init installed in ${own}. Commits here are not checked before they are made (the server and CI still judge what is pushed). Set this repository's own (\`git config core.hooksPath ${own}\`), or add a line running \`delegate-git hook pre-commit\` to ${path.join(dir, 'pre-commit')}.`;
}

/** hooksNotRun's reason as the warning `command` prints, or '' when git runs the hook. */
export function hooksWarning(command: string, why: string | null): string {
  return why === null ? '' : `delegate-git ${command}: warning: ${why}\n`;
}

async function realDir(dir: string): Promise<string> {
  return realpath(dir).catch(() => path.resolve(dir));
}

/** Whether `dir`'s pre-commit, or husky's committed one behind its generated `_` directory, runs delegate-git. */
async function runsDelegateGit(dir: string): Promise<boolean> {
  const mentions = async (file: string) =>
    existsSync(file) && (await readFile(file, 'utf8').catch(() => '')).includes('delegate-git');
  if (await mentions(path.join(dir, 'pre-commit'))) return true;
  return path.basename(dir) === '_' && (await mentions(path.join(path.dirname(dir), 'pre-commit')));
}
