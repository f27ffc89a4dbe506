/**
 * Whether git runs the hooks init installed. A core.hooksPath set, changed or unset after init (in the global
 * configuration, by another tool, say) sends git to another directory, and the commit hook stops with no word (rt48
 * f08, rt50 f02): the commands a user runs on the way to a commit say so. Kept apart from hook-install.ts, which
 * `delegate` does not load.
 */
import { constants } from 'node:fs';
import { access, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { gitFailure, gitTry, type Repository } from '@delegate-git/core';
import { relativeWithin } from '@delegate-git/core/path-within';

/** The first two lines of every hook this package writes (the second names the hook: `# delegate-git hook (x).`). */
const SHEBANG = '#!/bin/sh';
const MARKER = '# delegate-git hook (';

/** Ours by its first two lines, not by a mention anywhere: a user's hook may well name delegate-git's. */
export async function isOurs(file: string): Promise<boolean> {
  const [first, second] = (await readFile(file, 'utf8')).split('\n', 2);
  return first === SHEBANG && (second?.startsWith(MARKER) ?? false);
}

/**
 * Where in a work tree (of `workTrees`) a checkout there can write `dir`, or null: a directory inside a work tree and
 * not inside a git directory (`gitDirs`), whose files git does not track (the caller knows that), is one git takes for
 * its own to replace or delete on checkout, ignored or not. Both the path as named and the directory it resolves to
 * count: a link from the git directory into the work tree, or one in the work tree into the git directory, which a
 * checkout can replace with a directory of a branch's own.
 */
export async function checkoutWrites(
  dir: string,
  workTrees: readonly string[],
  gitDirs: readonly string[],
): Promise<{ workTree: string; rel: string } | null> {
  // The nearest of them around `file` decides (a git directory over a work tree at the same place: a bare one).
  const inside = (trees: readonly string[], gits: readonly string[], file: string) => {
    const around = (root: string) => relativeWithin(root, file) !== null;
    const tree = trees.filter(around).sort((a, b) => b.length - a.length)[0];
    if (tree === undefined || gits.some((git) => around(git) && git.length >= tree.length)) return null;
    return { workTree: workTrees[trees.indexOf(tree)]!, rel: relativeWithin(tree, file) || '.' };
  };
  const named = inside(workTrees, gitDirs, path.resolve(dir));
  if (named) return named;
  const [real, trees, gits] = await Promise.all([
    realDir(dir),
    Promise.all(workTrees.map(realDir)),
    Promise.all(gitDirs.map(realDir)),
  ]);
  return inside(trees, gits, real);
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

/** Where init records the hooks directory it installed into (the one git ran hooks from then). */
export function installedHooksRecord(commonDir: string): string {
  return path.join(commonDir, 'delegate-git', 'hooks-dir');
}

/**
 * Why git does not run the commit hook init installed, or null when it does, or when init installed none (`--no-hook`):
 * git now runs the hooks of another directory (a core.hooksPath set, changed or unset since), or the pre-commit there
 * no longer runs delegate-git (replaced, or no longer executable); or it runs it, but from a directory of the work
 * tree, where the next checkout may replace or delete it. One git process; never throws (a warning must not fail the
 * command it rides on).
 */
export async function hooksNotRun(repo: Repository): Promise<string | null> {
  const top = repo.layout.topLevel;
  if (top === null) return null;
  const own = path.join(repo.layout.commonDir, 'hooks');
  const recorded = await readFile(installedHooksRecord(repo.layout.commonDir), 'utf8').catch(() => null);
  // Installed before init kept a record: where git runs hooks by default, found by the hook itself.
  const installed =
    recorded?.replace(/\n$/, '') ||
    ((await isOurs(path.join(own, 'pre-commit')).catch(() => false)) ? own : null);
  if (installed === null) return null;
  const configured = await configuredHooksPath(repo, top).catch(() => null);
  const dir = configured ? path.resolve(top, configured.value) : own;
  if (await runsGate(dir)) return await replaceableByCheckout(repo, top, dir, configured !== null);
  const unchecked =
    'Commits here are not checked before they are made (the server and CI still judge what is pushed).';
  if ((await realDir(dir)) === (await realDir(installed)))
    return `git does not run delegate-git's commit hook in this repository: ${path.join(dir, 'pre-commit')}, where init installed it, no longer runs delegate-git (it was replaced, or is not executable). ${unchecked} Run \`delegate-git init\` again to put it back.`;
  const runs = configured
    ? `core.hooksPath is set to ${configured.value} in the ${configured.scope} git configuration, so git runs the hooks in ${dir}`
    : `core.hooksPath is no longer set, so git runs the hooks in ${dir}`;
  return `git does not run delegate-git's commit hook in this repository: ${runs}, not those init installed in ${installed}. ${unchecked} Point git back at them (\`git config core.hooksPath ${installed}\`), or add a line running \`delegate-git hook pre-commit\` to ${path.join(dir, 'pre-commit')}.`;
}

/**
 * Why the hook git runs now may stop running at the next checkout: it is ours, in a directory of the work tree (where
 * init used to install when core.hooksPath named one, and now refuses to), and a branch that tracks a file there
 * replaces it with its own script, or deletes it, with no word to anyone.
 */
async function replaceableByCheckout(
  repo: Repository,
  top: string,
  dir: string,
  configured: boolean,
): Promise<string | null> {
  if (!(await isOurs(path.join(dir, 'pre-commit')).catch(() => false))) return null;
  const { commonDir, gitDir } = repo.layout;
  // The main work tree, seen from a linked one, without asking git for the list (a warning costs one git process).
  const trees = path.basename(commonDir) === '.git' ? [top, path.dirname(commonDir)] : [top];
  const within = await checkoutWrites(dir, trees, [commonDir, gitDir]).catch(() => null);
  if (within === null) return null;
  return `delegate-git's commit hook is in ${dir}, inside the work tree ${within.workTree}: a checkout of a branch that tracks a file there replaces the hook with that branch's script, or deletes it, without a word, and commits are then not checked (the server and CI still judge what is pushed). ${configured ? 'Unset core.hooksPath (`git config --unset core.hooksPath`) so git runs the hooks in the git directory, or point it at a directory there,' : `Make ${dir} a directory of its own rather than a link into the work tree,`} and run \`delegate-git init\` again.`;
}

/** hooksNotRun's reason as the warning `command` prints, or '' when git runs the hook. */
export function hooksWarning(command: string, why: string | null): string {
  return why === null ? '' : `delegate-git ${command}: warning: ${why}\n`;
}

async function realDir(dir: string): Promise<string> {
  return realpath(dir).catch(() => path.resolve(dir));
}

/**
 * Whether git runs the gate from `dir`: its pre-commit is executable, and is ours or has a line (not a comment) calling
 * the gate, as the lines init and its refusals give do; or, for husky's generated `_`, husky's committed script has.
 */
async function runsGate(dir: string): Promise<boolean> {
  const file = path.join(dir, 'pre-commit');
  if (
    !(await access(file, constants.X_OK).then(
      () => true,
      () => false,
    ))
  )
    return false;
  if ((await isOurs(file).catch(() => false)) || callsGate(await readText(file))) return true;
  return path.basename(dir) === '_' && callsGate(await readText(path.join(path.dirname(dir), 'pre-commit')));
}

/** `delegate-git ... hook pre-commit`, or husky's line running the hook init installed in the git directory. */
function callsGate(script: string): boolean {
  return script
    .split('\n')
    .some(
      (line) =>
        !/^\s*#/.test(line) &&
        (/delegate-git\S*\s+hook\s+pre-commit\b/.test(line) ||
          line.includes('/delegate-git/hooks/pre-commit')),
    );
}

function readText(file: string): Promise<string> {
  return readFile(file, 'utf8').catch(() => '');
}
