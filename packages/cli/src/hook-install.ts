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

async function hookTemplate(name: 'pre-commit' | 'pre-receive'): Promise<string> {
  const text = await readFile(new URL(`./hooks/${name}`, import.meta.url), 'utf8');
  return text
    .replaceAll('@DELEGATE_GIT_CLI@', cliEntry())
    .replaceAll('@DELEGATE_GIT_NODE@', process.execPath);
}

/** Writes `<dir>/<name>`, moving a foreign hook aside to `<name>.chained` (which ours runs first). */
export async function installHookFile(dir: string, name: 'pre-commit' | 'pre-receive'): Promise<string> {
  const file = path.join(dir, name);
  if (existsSync(file)) {
    const current = await readFile(file, 'utf8');
    if (!current.includes(MARKER)) {
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
 * Client side. With husky: append one line to .husky/pre-commit and make core.hooksPath absolute, because husky's
 * relative `.husky/_` does not exist in linked worktrees (it is generated, not committed), so a worktree would run
 * no hook at all. Without husky: the hooks directory git uses.
 */
export async function installPreCommit(repo: Repository): Promise<string> {
  const top = repo.layout.topLevel!;
  const opts = { cwd: top, env: repo.env };
  const hooksPath = (await gitTry(['config', 'core.hooksPath'], opts)).stdout.toString().trim();
  const husky =
    existsSync(path.join(top, '.husky')) &&
    (hooksPath === '.husky/_' || hooksPath === '.husky' || hooksPath.endsWith('/.husky/_'));
  if (husky) {
    // The committed husky line runs this clone's installed hook (which knows where its delegate-git is), and falls
    // back to the project's own dependency in clones that have not run init yet.
    await installHookFile(path.join(repo.layout.commonDir, 'delegate-git', 'hooks'), 'pre-commit');
    const file = path.join(top, '.husky', 'pre-commit');
    const line =
      'h="$(git rev-parse --git-common-dir)/delegate-git/hooks/pre-commit"; if [ -x "$h" ]; then "$h"; else npx --no-install delegate-git hook pre-commit; fi';
    const current = existsSync(file) ? await readFile(file, 'utf8') : '';
    if (!current.includes('delegate-git hook pre-commit')) {
      await writeFileAtomic(
        file,
        `${current}${current && !current.endsWith('\n') ? '\n' : ''}${line}\n`,
        0o755,
      );
    }
    const absolute = path.resolve(top, hooksPath);
    if (absolute !== hooksPath) await gitText(['config', 'core.hooksPath', absolute], opts);
    return `${path.relative(top, file)} (husky; core.hooksPath set to ${absolute} so linked worktrees run it too)`;
  }
  let dir: string;
  if (hooksPath) {
    dir = path.resolve(top, hooksPath);
    if (dir !== hooksPath) await gitText(['config', 'core.hooksPath', dir], opts);
  } else dir = path.join(repo.layout.commonDir, 'hooks');
  return installHookFile(dir, 'pre-commit');
}
