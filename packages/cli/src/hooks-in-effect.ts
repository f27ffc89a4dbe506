/**
 * Whether git runs the hooks init installed. A core.hooksPath set, changed or unset after init (in the global
 * configuration, by another tool, say) sends git to another directory, and the commit hook stops with no word (rt48
 * f08, rt50 f02): the commands a user runs on the way to a commit say so. Kept apart from hook-install.ts, which
 * `delegate` does not load.
 */
import { constants } from 'node:fs';
import { access, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { gitFailure, gitTry, type Repository, type RepositoryLayout } from '@delegate-git/core';
import { relativeWithin } from '@delegate-git/core/path-within';
import { callsGate } from './hook-script.js';

/** The second line of every hook this package writes, naming the hook: `# delegate-git hook (pre-commit). ...`. */
const MARKER = /^# delegate-git hook \([a-z-]+\)/;
/** How far down a hook of ours may have been pushed by lines a user added above it (`export PATH=...`, `set -x`). */
const MARKED_WITHIN = 6;

/**
 * Ours by its marker line near the top, not by a mention anywhere: a user's hook may well name delegate-git's. The
 * marker may have moved down a line or two (a user's `export PATH=...` after the shebang): such a hook is still ours,
 * edited, and init keeps it as `.kept` rather than chain it, where it would run the gate first with a Node that may be
 * gone. (installHookFile does not ask this of a symbolic link: it chains one, whatever it leads to.)
 */
export async function isOurs(file: string): Promise<boolean> {
  return isOurText(await readFile(file, 'utf8'));
}

export function isOurText(text: string): boolean {
  return text.split('\n', MARKED_WITHIN).some((line) => MARKER.test(line));
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
  // The nearest of them around `file` decides (a git directory over a work tree at the same place: a bare one). A git
  // directory inside the work tree shelters its files only under the name git refuses to check out (gitDirShelters).
  const inside = (trees: readonly string[], gits: readonly string[], file: string) => {
    const around = (root: string) => relativeWithin(root, file) !== null;
    const tree = trees.filter(around).sort((a, b) => b.length - a.length)[0];
    const shelters = (git: string) => around(git) && git.length >= tree!.length && gitDirShelters(tree!, git);
    if (tree === undefined || gits.some(shelters)) return null;
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

/**
 * Whether a git directory at `git`, inside the work tree `tree` (or at its top, a bare repository's), is out of reach
 * of a checkout there: git refuses to check out a path with a component named `.git` (in any case), and nothing else.
 * A git directory named otherwise in the work tree (`git init --separate-git-dir=gd`, `.git` a link to `.gs`) holds
 * files a branch that tracks `gd/hooks/pre-commit` or `gd/config` writes.
 */
export function gitDirShelters(tree: string, git: string): boolean {
  const rel = relativeWithin(tree, git);
  return rel === null || rel === '' || rel.split(path.sep).some((part) => part.toLowerCase() === '.git');
}

/**
 * The git directory of `layout` (common, or this worktree's) that lies inside its work tree under a name git checks
 * out into, as named or as its links resolve; null when none does (the usual `.git`, or one outside the work tree).
 */
export async function gitDirInWorkTree(layout: RepositoryLayout): Promise<string | null> {
  const top = layout.topLevel;
  if (top === null) return null;
  const realTop = await realDir(top);
  for (const git of new Set([layout.commonDir, layout.gitDir])) {
    if (!gitDirShelters(top, git)) return git;
    const real = await realDir(git);
    if (!gitDirShelters(realTop, real)) return real;
  }
  return null;
}

/** core.hooksPath as git reads it for this repository. */
export interface ConfiguredHooksPath {
  /** `~` expanded (`--type=path`), as git does when it runs hooks; '' when set to the empty string. */
  value: string;
  /** The configuration it comes from: local, worktree, global, system, command. */
  scope: string;
  /** The file it is set in, absolute (a file that .git/config includes, say); null when not from a file (`-c`). */
  origin: string | null;
}

/**
 * core.hooksPath with the scope and file it is set in; null when it is not set. Set to the empty string it is still
 * set: git (2.39 at least) then looks for each hook at `/<hook>` and runs none.
 */
export async function configuredHooksPath(
  repo: Repository,
  top: string,
): Promise<ConfiguredHooksPath | null> {
  const args = ['config', '-z', '--show-scope', '--show-origin', '--type=path', '--get', 'core.hooksPath'];
  const result = await gitTry(args, { cwd: top, env: repo.env });
  if (result.code === 1) return null; // not set
  if (result.code !== 0) throw gitFailure(args, result);
  const [scope = '', origin = '', value = ''] = result.stdout.toString('utf8').split('\0');
  const file = origin.startsWith('file:') ? path.resolve(top, origin.slice('file:'.length)) : null;
  return { value, scope, origin: file };
}

/** The command that unsets core.hooksPath where `scope` sets it. */
export function unsetHooksPath(scope: string): string {
  return `git config${scope === 'local' ? '' : ` --${scope}`} --unset core.hooksPath`;
}

/**
 * Where the hooks directory init installed into (`recorded`, absolute) is now, when the repository was moved or renamed
 * since: init made core.hooksPath absolute (so linked worktrees run it too), and a path under the old place names
 * nothing. The longest tail of `recorded` that exists as a directory under the work tree or the git directory; null
 * when `recorded` still exists or no tail does.
 */
export async function movedHooksDir(
  recorded: string,
  top: string,
  commonDir: string,
): Promise<string | null> {
  if (await isDirectory(recorded)) return null;
  const parts = recorded.split(path.sep).filter(Boolean);
  for (let tail = parts.length - 1; tail >= 1; tail--) {
    const rest = parts.slice(parts.length - tail);
    for (const base of [top, commonDir]) {
      const candidate = path.join(base, ...rest);
      if (candidate !== recorded && (await isDirectory(candidate))) return candidate;
    }
  }
  return null;
}

async function isDirectory(p: string): Promise<boolean> {
  return (await stat(p).catch(() => null))?.isDirectory() ?? false;
}

/** The hooks directory init recorded (hooks-dir), or null when it kept none. */
export async function recordedHooksDir(commonDir: string): Promise<string | null> {
  const text = await readFile(installedHooksRecord(commonDir), 'utf8').catch(() => null);
  return text?.replace(/\n$/, '') || null;
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
  const recorded = await recordedHooksDir(repo.layout.commonDir);
  // Installed before init kept a record: where git runs hooks by default, found by the hook itself.
  const installed =
    recorded || ((await isOurs(path.join(own, 'pre-commit')).catch(() => false)) ? own : null);
  if (installed === null) return null;
  const unchecked =
    'Commits here are not checked before they are made (the server and CI still judge what is pushed).';
  const exposed = await gitDirInWorkTree(repo.layout).catch(() => null);
  if (exposed !== null) return gitDirInWorkTreeReason(exposed, top, 'warning');
  const configured = await configuredHooksPath(repo, top).catch(() => null);
  if (configured?.value === '')
    return `git does not run delegate-git's commit hook in this repository: core.hooksPath is set to the empty string in the ${configured.scope} git configuration, so git looks for each hook at /<hook> and runs none, not those init installed in ${installed}. ${unchecked} Unset it (\`${unsetHooksPath(configured.scope)}\`).`;
  const dir = configured ? path.resolve(top, configured.value) : own;
  // A file a checkout writes (a team's .gitconfig that .git/config includes): a branch decides where hooks run.
  const from =
    configured?.origin &&
    (await checkoutWrites(configured.origin, workTrees(repo, top), [
      repo.layout.commonDir,
      repo.layout.gitDir,
    ]));
  const setIn = from
    ? ` in ${configured.origin}, a file inside the work tree ${from.workTree}`
    : configured
      ? ` in the ${configured.scope} git configuration`
      : '';
  if (await runsGate(dir)) {
    if (from)
      return `core.hooksPath is set to ${configured.value}${setIn}: a branch that changes that file changes where git runs hooks from, and from then on commits run that branch's hooks, or none, without a word (the server and CI still judge what is pushed). Take core.hooksPath out of ${configured.origin} (or stop including that file) and run \`delegate-git init\` again.`;
    return await replaceableByCheckout(repo, top, dir, configured !== null);
  }
  if (configured && dir === installed && !from && (await movedHooksDir(dir, top, repo.layout.commonDir)))
    return `git does not run delegate-git's commit hook in this repository: core.hooksPath${setIn} names ${dir}, which no longer exists, so git runs no hooks here at all: the repository was moved or renamed since init set that path (absolute, so that linked worktrees run the hooks too). ${unchecked} Run \`delegate-git init\` again here: it points core.hooksPath where the hooks are now.`;
  if ((await realDir(dir)) === (await realDir(installed)) && !from)
    return `git does not run delegate-git's commit hook in this repository: ${path.join(dir, 'pre-commit')}, where init installed it, no longer runs delegate-git (it was replaced, is not executable, or may end before it runs the gate). ${unchecked} Run \`delegate-git init\` again to put it back.`;
  const runs = configured
    ? `core.hooksPath is set to ${configured.value}${setIn}, so git runs the hooks in ${dir}`
    : `core.hooksPath is no longer set, so git runs the hooks in ${dir}`;
  const wayBack = from
    ? `Take core.hooksPath out of ${configured!.origin} (or stop including that file) and run \`delegate-git init\` again.`
    : `Point git back at them (\`git config core.hooksPath ${installed}\`), or add a line running \`delegate-git hook pre-commit\` to ${path.join(dir, 'pre-commit')}, on a line of its own before anything that may end the script.`;
  return `git does not run delegate-git's commit hook in this repository: ${runs}, not those init installed in ${installed}. ${unchecked} ${wayBack}`;
}

/**
 * Why a layout whose git directory lies in its work tree under a name other than `.git` is unsafe, for init's refusal
 * or a command's warning: a branch writes its hooks and its config (core.fsmonitor, say: a program git runs).
 */
export function gitDirInWorkTreeReason(gitDir: string, top: string, as: 'refusal' | 'warning'): string {
  const rel = relativeWithin(top, gitDir) || '.';
  const what = `The git directory ${gitDir} lies inside the work tree ${top} under a name other than .git, and git protects only that name from a checkout: a branch that tracks ${rel}/hooks/pre-commit replaces delegate-git's hook with its own script, and one that tracks ${rel}/config changes this clone's git configuration (a program for git to run, a hooks path), without a word.`;
  const way =
    'Move the git directory out of the work tree (`git init --separate-git-dir=<a directory outside it>` moves it and leaves a .git file pointing there)';
  return as === 'refusal'
    ? `${what} Nothing was written. ${way}, then run init again.`
    : `${what} Commits here may not be checked before they are made (the server and CI still judge what is pushed). ${way}, and run \`delegate-git init\` again.`;
}

/** The work trees a warning knows without asking git for the list: this one, and the main one seen from a linked one. */
function workTrees(repo: Repository, top: string): string[] {
  const { commonDir } = repo.layout;
  return path.basename(commonDir) === '.git' ? [top, path.dirname(commonDir)] : [top];
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
  const within = await checkoutWrites(dir, workTrees(repo, top), [commonDir, gitDir]).catch(() => null);
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
 * Whether git runs the gate from `dir`: its pre-commit is executable, and is ours or has a line of its own calling the
 * gate before anything that may end the script (callsGate), as the lines init and its refusals give do; or, for husky's
 * generated `_`, husky's committed script has.
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

function readText(file: string): Promise<string> {
  return readFile(file, 'utf8').catch(() => '');
}
