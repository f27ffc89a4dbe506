/**
 * Installing the hook scripts where git will actually run them: husky's hook files when the repository uses
 * husky, else the hooks directory git uses (core.hooksPath, or the common .git/hooks shared by every worktree).
 * An existing foreign hook is kept and chained, never replaced.
 */
import { existsSync } from 'node:fs';
import { chmod, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DelegateGitError, gitText, gitTry, type Repository } from '@delegate-git/core';
import { writeFileAtomic } from './fs.js';

const MARKER = '# delegate-git hook';

/** The bundled CLI entry point (bin/delegate-git.js next to dist/). */
function cliEntry(): string {
  return fileURLToPath(new URL('../bin/delegate-git.js', import.meta.url));
}

/** The hooks this package installs. The two client hooks run the same gate over the index. */
export type HookName = 'pre-commit' | 'pre-merge-commit' | 'pre-receive';

async function hookTemplate(name: HookName): Promise<string> {
  const template = name === 'pre-receive' ? 'pre-receive' : 'pre-commit';
  const text = await readFile(new URL(`./hooks/${template}`, import.meta.url), 'utf8');
  return text
    .replaceAll('@HOOK@', name)
    .replaceAll('@DELEGATE_GIT_CLI@', cliEntry())
    .replaceAll('@DELEGATE_GIT_NODE@', process.execPath);
}

/** Writes `<dir>/<name>`, moving a foreign hook aside to `<name>.chained` (which ours runs first). */
export async function installHookFile(dir: string, name: HookName): Promise<string> {
  const file = path.join(dir, name);
  if (existsSync(file)) {
    if (!(await isOurs(file))) {
      const chained = `${file}.chained`;
      if (existsSync(chained)) {
        throw new DelegateGitError(
          'IO',
          `${file} is not delegate-git's and ${chained} already exists, so the existing hook cannot be chained safely. Merge them by hand, then run init again.`,
        );
      }
      await rename(file, chained);
      await chmod(chained, 0o755);
    }
  }
  await writeFileAtomic(file, await hookTemplate(name), 0o755);
  await chmod(file, 0o755);
  return file;
}

/**
 * Client side: pre-commit, and pre-merge-commit, which git runs instead of pre-commit for the commit `git merge`
 * (or `git pull`) makes by itself; without it a merge that combines two promoted versions of a governed file
 * commits content nobody judged. Returns where each went, for init to say.
 *
 * With husky: append one line to `.husky/<hook>` and make core.hooksPath absolute, because husky's relative
 * `.husky/_` does not exist in linked worktrees (it is generated, not committed), so a worktree would run no hook
 * at all. Without husky: the hooks directory git uses.
 */
export async function installClientHooks(repo: Repository): Promise<string[]> {
  const top = repo.layout.topLevel!;
  const opts = { cwd: top, env: repo.env };
  const hooksPath = (await gitTry(['config', 'core.hooksPath'], opts)).stdout.toString().trim();
  const dir = hooksPath ? path.resolve(top, hooksPath) : path.join(repo.layout.commonDir, 'hooks');
  if (hooksPath && dir !== hooksPath) await gitText(['config', 'core.hooksPath', dir], opts);
  const husky =
    existsSync(path.join(top, '.husky')) &&
    (hooksPath === '.husky/_' || hooksPath === '.husky' || hooksPath.endsWith('/.husky/_'));
  if (!husky)
    return [await installHookFile(dir, 'pre-commit'), await installHookFile(dir, 'pre-merge-commit')];
  const installed = [
    await appendHuskyLine(repo, top, dir, 'pre-commit'),
    await appendHuskyLine(repo, top, dir, 'pre-merge-commit'),
  ];
  // husky 9 generates no pre-merge-commit in .husky/_, so git would never run .husky/pre-merge-commit: ours goes
  // there (git ignores that directory's content). Should husky one day write its own, it runs the line above.
  const generated = path.join(dir, 'pre-merge-commit');
  if (path.basename(dir) === '_' && (!existsSync(generated) || (await isOurs(generated))))
    installed.push(await installHookFile(dir, 'pre-merge-commit'));
  return installed;
}

async function isOurs(file: string): Promise<boolean> {
  return (await readFile(file, 'utf8')).includes(MARKER);
}

/**
 * The committed husky line runs this clone's installed hook (which knows where its delegate-git is), and falls
 * back to the project's own dependency in clones that have not run init yet.
 */
async function appendHuskyLine(
  repo: Repository,
  top: string,
  hooksDir: string,
  name: 'pre-commit' | 'pre-merge-commit',
): Promise<string> {
  await installHookFile(path.join(repo.layout.commonDir, 'delegate-git', 'hooks'), name);
  const file = path.join(top, '.husky', name);
  const line = `h="$(git rev-parse --git-common-dir)/delegate-git/hooks/${name}"; if [ -x "$h" ]; then "$h"; else npx --no-install delegate-git hook ${name}; fi`;
  // A new file gets a shebang: husky 8 has git run .husky/<hook> itself.
  const current = existsSync(file) ? await readFile(file, 'utf8') : '#!/usr/bin/env sh\n';
  if (!current.includes(`delegate-git hook ${name}`)) {
    await writeFileAtomic(
      file,
      `${current}${current === '' || current.endsWith('\n') ? '' : '\n'}${line}\n`,
      0o755,
    );
  }
  return `${path.relative(top, file)} (husky; core.hooksPath set to ${hooksDir} so linked worktrees run it too)`;
}
