/**
 * Installing the hook scripts where git will actually run them: husky's hook files when the repository uses
 * husky, else the hooks directory git uses (core.hooksPath, or the common .git/hooks shared by every worktree).
 * An existing foreign hook is kept and chained, never replaced. A hooks directory that is not this clone's alone
 * (core.hooksPath from the global or system config, or a directory the repository tracks) is refused, not written.
 */
import { existsSync, statSync } from 'node:fs';
import { chmod, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DelegateGitError, gitFailure, gitText, gitTry, type Repository } from '@delegate-git/core';
import { relativeWithin } from '@delegate-git/core/path-within';
import { writeFileAtomic } from './fs.js';

const MARKER = '# delegate-git hook';

/** The bundled CLI entry point (bin/delegate-git.js next to dist/). */
function cliEntry(): string {
  return fileURLToPath(new URL('../bin/delegate-git.js', import.meta.url));
}

/** The hooks this package installs. The two client hooks run the same gate over the index. */
export type HookName = 'pre-commit' | 'pre-merge-commit' | 'pre-receive';

/** `value` as one single-quoted shell word: a path may hold `'`, `;` or `$`, and must stay a path. */
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", "'\\''")}'`;
}

async function hookTemplate(name: HookName): Promise<string> {
  const template = name === 'pre-receive' ? 'pre-receive' : 'pre-commit';
  const text = await readFile(new URL(`./hooks/${template}`, import.meta.url), 'utf8');
  // @HOOK@ is one of HookName's fixed words, safe anywhere in the script; the paths come from where Node and this
  // package happen to be installed, so they are substituted as quoted words (the template leaves them unquoted).
  return text
    .replaceAll('@HOOK@', name)
    .replaceAll('@DELEGATE_GIT_CLI@', shellQuote(cliEntry()))
    .replaceAll('@DELEGATE_GIT_NODE@', shellQuote(process.execPath));
}

/** Writes `<dir>/<name>`, moving a foreign hook aside to `<name>.chained` (which ours runs first). */
export async function installHookFile(dir: string, name: HookName): Promise<string> {
  const file = path.join(dir, name);
  refuseOccupied([file]);
  if (existsSync(file)) {
    if (!(await isOurs(file))) {
      const chained = `${file}.chained`;
      if (existsSync(chained)) {
        throw new DelegateGitError(
          'IO',
          `${file} is not delegate-git's and ${chained} already exists, so the existing hook cannot be chained safely. Merge them by hand, then run init again.`,
        );
      }
      // The mode goes with it: the hook runs a .chained file only when executable, so one the user had disabled
      // (git skips a hook that is not executable) stays disabled.
      await rename(file, chained);
    }
  }
  await writeFileAtomic(file, await hookTemplate(name), 0o755);
  await chmod(file, 0o755);
  return file;
}

/** Where init will install the client hooks, settled (and refused if need be) before init writes anything. */
export interface ClientHookPlan {
  /** The hooks directory, absolute. */
  dir: string;
  /** core.hooksPath when set: its value (`~` expanded) and the config scope it comes from. */
  configured: { value: string; scope: string } | null;
  husky: boolean;
}

/**
 * Client side: pre-commit, and pre-merge-commit, which git runs instead of pre-commit for the commit `git merge`
 * (or `git pull`) makes by itself; without it a merge that combines two promoted versions of a governed file
 * commits content nobody judged.
 *
 * Refuses (writing nothing) a hooks directory this clone does not own: a core.hooksPath from the global or system
 * config is every repository's hooks directory, and a hooks directory holding tracked files is the team's, where a
 * script naming this machine's paths does not belong. An untracked directory in the work tree is this clone's.
 */
export async function planClientHooks(repo: Repository): Promise<ClientHookPlan> {
  const top = repo.layout.topLevel!;
  const configured = await configuredHooksPath(repo, top);
  if (!configured) {
    const plan = { dir: path.join(repo.layout.commonDir, 'hooks'), configured, husky: false };
    refuseOccupied(hookFiles(repo, top, plan));
    return plan;
  }
  const { value, scope } = configured;
  if (scope !== 'local' && scope !== 'worktree') {
    throw new DelegateGitError(
      'USAGE',
      `core.hooksPath is set to ${value} in the ${scope} git configuration, so that directory holds the hooks of every repository using that configuration: delegate-git's hook there would refuse the commits of all the others (they have no policy), and an existing hook there would be chained for all of them. Nothing was written. Either give this repository hooks of its own (\`git config core.hooksPath .git/hooks\`; the shared hooks then no longer run here unless you chain them yourself) and run init again, or add to the shared pre-commit and pre-merge-commit hooks a line that runs \`delegate-git hook pre-commit\` (\`hook pre-merge-commit\` in the other) only where .delegate-git/policy.json exists, and run \`delegate-git init --no-hook\`.`,
    );
  }
  const dir = path.resolve(top, value);
  const husky =
    existsSync(path.join(top, '.husky')) &&
    (value === '.husky/_' || value === '.husky' || value.endsWith('/.husky/_'));
  if (!husky && (await tracksFilesIn(repo, top, dir))) {
    const shown = path.relative(top, dir) || '.';
    throw new DelegateGitError(
      'USAGE',
      `core.hooksPath is ${value}, a directory this repository tracks: its hooks are the team's, and init would replace them with a script naming this machine's paths (and leave untracked files beside them). Nothing was written. Add the gate to the committed hooks by hand: a line running \`delegate-git hook pre-commit\` in ${shown}/pre-commit and one running \`delegate-git hook pre-merge-commit\` in ${shown}/pre-merge-commit (git runs that one for the commit of a merge), each ending the hook with its exit status when it fails; then run \`delegate-git init --no-hook\`.`,
    );
  }
  const plan = { dir, configured, husky };
  refuseOccupied(hookFiles(repo, top, plan));
  return plan;
}

/** The files installClientHooks writes (or appends to) for a plan. */
function hookFiles(
  repo: Repository,
  top: string,
  { dir, husky }: Omit<ClientHookPlan, 'configured'>,
): string[] {
  const names = ['pre-commit', 'pre-merge-commit'];
  if (!husky) return names.map((name) => path.join(dir, name));
  return [
    ...names.map((name) => path.join(top, '.husky', name)),
    ...names.map((name) => path.join(repo.layout.commonDir, 'delegate-git', 'hooks', name)),
    path.join(dir, 'pre-merge-commit'),
  ];
}

/**
 * Refuses a hook path that holds what no hook script can replace (a directory, say) before anything is written: init
 * would otherwise stop half-way, after the policy, the key and the ledger's first records.
 */
function refuseOccupied(files: readonly string[]): void {
  for (const file of files) {
    let stats: ReturnType<typeof statSync>;
    try {
      stats = statSync(file);
    } catch {
      continue; // nothing there (or a link to nothing), which the hook file replaces
    }
    if (stats.isFile()) continue;
    throw new DelegateGitError(
      'USAGE',
      `${file} is ${stats.isDirectory() ? 'a directory' : 'not a regular file'}, where git looks for a hook script. Nothing was written. Move it out of the way, then run init again.`,
    );
  }
}

/**
 * Where git runs a bare repository's hooks from: its hooks directory, or core.hooksPath when the repository itself
 * sets it (relative to the repository, where git runs server hooks). One from the global or system config serves
 * every repository on the server: refused, since a pre-receive hook written to hooks/ would then never run.
 */
export async function serverHooksDir(repo: Repository): Promise<string> {
  const configured = await configuredHooksPath(repo, repo.cwd);
  if (!configured) return path.join(repo.layout.commonDir, 'hooks');
  const { value, scope } = configured;
  if (scope !== 'local' && scope !== 'worktree') {
    throw new DelegateGitError(
      'USAGE',
      `core.hooksPath is set to ${value} in the ${scope} git configuration, so git runs this repository's hooks from there, as every other repository's: a pre-receive hook in hooks/ would never run, and one there would judge the pushes of all of them. Nothing was written. Set a hooks path for this repository alone (\`git config core.hooksPath hooks\` here) and run \`delegate-git init --server\` again, or add a line running \`delegate-git hook pre-receive\` to the shared pre-receive hook for this repository.`,
    );
  }
  return path.resolve(repo.layout.gitDir, value);
}

/** core.hooksPath with the scope it is set in; `--type=path` expands `~` as git does when it runs hooks. */
async function configuredHooksPath(
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

async function tracksFilesIn(repo: Repository, top: string, dir: string): Promise<boolean> {
  const rel = relativeWithin(top, dir);
  if (rel === null) return false;
  const listed = await gitText(['ls-files', '-z', '--', `:(literal)${rel || '.'}`], {
    cwd: top,
    env: repo.env,
  });
  return listed !== '';
}

/**
 * Installs as planned and returns where each hook went, for init to say.
 *
 * With husky: append one line to `.husky/<hook>` and make core.hooksPath absolute, because husky's relative
 * `.husky/_` does not exist in linked worktrees (it is generated, not committed), so a worktree would run no hook
 * at all. Without husky: the hooks directory git uses.
 */
export async function installClientHooks(repo: Repository, plan: ClientHookPlan): Promise<string[]> {
  const top = repo.layout.topLevel!;
  const { dir, configured } = plan;
  if (configured && dir !== configured.value)
    await gitText(['config', `--${configured.scope}`, 'core.hooksPath', dir], { cwd: top, env: repo.env });
  if (!plan.husky)
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
