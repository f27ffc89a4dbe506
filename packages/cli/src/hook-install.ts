/**
 * Installing the hook scripts where git will actually run them: husky's hook files when the repository uses
 * husky, else the hooks directory git uses (core.hooksPath, or the common .git/hooks shared by every worktree).
 * An existing foreign hook is kept and chained, never replaced; one of ours edited by hand is kept beside the new one.
 * A hooks directory that is not this clone's alone (core.hooksPath from the global or system config, or a directory
 * the repository tracks), or one in the work tree that a checkout can write, is refused, not written.
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import {
  chmod,
  copyFile,
  cp,
  link,
  mkdir,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  DelegateGitError,
  gitFailure,
  gitText,
  gitTry,
  processRuns,
  type Repository,
} from '@delegate-git/core';
import { relativeWithin } from '@delegate-git/core/path-within';
import { writeFileAtomic } from './fs.js';
import { huskyLine, huskyLinesBefore, runsLast, withHuskyLine } from './hook-script.js';
import {
  type ConfiguredHooksPath,
  checkoutWrites,
  configuredHooksPath,
  installedHooksRecord,
  isOurs,
  isOurText,
  movedHooksDir,
  recordedHooksDir,
  unsetHooksPath,
} from './hooks-in-effect.js';

/**
 * The scripts of hooks/, put into each bundle by scripts/build.mjs: the single-file server build has nothing beside
 * it to read them from.
 */
declare const __DELEGATE_GIT_HOOKS__: Record<
  'pre-commit' | 'post-merge' | 'pre-push' | 'pre-receive',
  string
>;

/**
 * The hooks this package installs. The two commit hooks run the same gate over the index; the two after a pull
 * (post-merge, post-rewrite) run the same script, which takes in the records it fetched; pre-push does the same
 * where a pull ran neither (the branch was up to date) and the ledger's push would not be a fast-forward.
 */
export type HookName =
  | 'pre-commit'
  | 'pre-merge-commit'
  | 'post-merge'
  | 'post-rewrite'
  | 'pre-push'
  | 'pre-receive';

/** The client hooks, in the order init installs and reports them. */
const CLIENT_HOOKS = ['pre-commit', 'pre-merge-commit', 'post-merge', 'post-rewrite', 'pre-push'] as const;
type ClientHook = (typeof CLIENT_HOOKS)[number];

/** The script each hook is made from. */
const TEMPLATE: Record<HookName, keyof typeof __DELEGATE_GIT_HOOKS__> = {
  'pre-commit': 'pre-commit',
  'pre-merge-commit': 'pre-commit',
  'post-merge': 'post-merge',
  'post-rewrite': 'post-merge',
  'pre-push': 'pre-push',
  'pre-receive': 'pre-receive',
};

/** What an installed hook runs: this package's CLI, or the single-file build that is running now. */
let cliEntry = () => fileURLToPath(new URL('../bin/delegate-git.js', import.meta.url));

/** For the single-file build: hooks it installs run that very file. */
export function hooksRun(file: string): void {
  cliEntry = () => file;
}

/** `value` as one single-quoted shell word: a path may hold `'`, `;` or `$`, and must stay a path. */
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", "'\\''")}'`;
}

/**
 * Where a hook finds the CLI: `entry`, and when init made a copy, the file it compares to see an upgrade (the package's
 * package.json, or the single-file build) and that file's copy.
 */
export interface HookCli {
  entry: string;
  copiedFrom: string | null;
  copiedTo?: string;
}

function hookText(name: HookName, cli: HookCli): string {
  const text = __DELEGATE_GIT_HOOKS__[TEMPLATE[name]];
  // @HOOK@ is one of HookName's fixed words, safe anywhere in the script; the paths come from where Node and this
  // package happen to be installed, so they are substituted as quoted words (the template leaves them unquoted).
  return withFingerprint(
    text
      .replaceAll('@HOOK@', name)
      .replaceAll('@DELEGATE_GIT_CLI@', shellQuote(cli.entry))
      .replaceAll('@DELEGATE_GIT_COPIED_FROM@', shellQuote(cli.copiedFrom ?? ''))
      .replaceAll('@DELEGATE_GIT_COPIED_TO@', shellQuote(cli.copiedTo ?? ''))
      .replaceAll('@DELEGATE_GIT_NODE@', shellQuote(process.execPath)),
  );
}

/**
 * The lines recording where init found Node and the CLI (`DELEGATE_GIT_CLI='...'`, a quoted word that may span lines):
 * they change whenever the CLI moves (an upgrade, npx's cache), and init writes them anew. Only the value is left out,
 * and only as a word alone to the end of its line, quoted as init quotes it or a plain word with nothing the shell
 * reads in it: anything a user added on the line (`; my-scan`) is an edit (rt54 f10).
 */
const RECORDED_PATH = /^(DELEGATE_GIT_[A-Z_]+)=(?:'(?:[^']|'\\'')*'|[^\s'"\\;&|<>()`$]*)$/gm;
/** The line holding a hook's fingerprint (third in every hook this release writes), with its end. */
const FINGERPRINT = /^# fingerprint: ([0-9a-f]{64})\b.*(?:\n|$)/m;

/**
 * A hook as compared for hand edits: its recorded paths and its fingerprint line left out. Every release must leave
 * out the same, or the hooks of the releases before it would all look edited.
 */
function withoutPlaces(text: string): string {
  return text.replace(RECORDED_PATH, '$1=').replace(FINGERPRINT, '');
}

function fingerprint(text: string): string {
  return createHash('sha256').update(withoutPlaces(text)).digest('hex');
}

/**
 * The hook with its fingerprint as the third line: a later init, of whatever release and wording, then tells a hook
 * its writer left as it was (replaced without a word) from one a user added lines to (kept beside it).
 */
function withFingerprint(text: string): string {
  const [shebang, marker, ...rest] = text.split('\n');
  const line = `# fingerprint: ${fingerprint(text)} (of this script, its paths aside: init keeps a copy of one edited by hand before it writes it again)`;
  return [shebang, marker, line, ...rest].join('\n');
}

/**
 * Whether `existing`, a hook of ours, holds what init would not write again, and why; null when it differs from
 * `fresh` only in the paths it records (an earlier init, before the CLI moved) or its writer's fingerprint still
 * matches it (an earlier release, in its own wording).
 */
function editedHook(existing: string, fresh: string): string | null {
  if (withoutPlaces(existing) === withoutPlaces(fresh)) return null;
  const recorded = FINGERPRINT.exec(existing)?.[1];
  if (recorded === undefined)
    return 'lines this release does not write (your own, or the wording of the release that wrote it)';
  return recorded === fingerprint(existing) ? null : 'lines changed since init wrote it';
}

/** `<file>.kept`, or `.kept-2` and on where that is taken: a copy kept earlier is never written over. */
function keptName(file: string): string {
  for (let n = 1; ; n++) {
    const name = n === 1 ? `${file}.kept` : `${file}.kept-${n}`;
    if (!lstatSync(name, { throwIfNoEntry: false })) return name;
  }
}

/**
 * The CLI an installed hook runs. Two kinds of place are copied into the git directory first, where neither a branch
 * nor npm writes: any git work tree (`npm install --save-dev`, in this repository or one around it: node_modules is
 * ignored, git overwrites ignored files on checkout, so a branch that adds node_modules/delegate-git/... would have
 * every later commit run its code), and a package runner's cache (`npx delegate-git init`, `pnpm dlx`, `yarn dlx`:
 * pruned, after which every commit or push would be refused). A CLI whose files git tracks there is a branch's, and
 * is refused.
 */
export async function planHookCli(repo: Repository): Promise<CliPlan> {
  const entry = cliEntry();
  const standalone = entry.endsWith('.mjs');
  const source = await realpath(standalone ? entry : path.dirname(path.dirname(entry)));
  const workTree = workTreeHolding(source);
  // An installed package, where git tracks nothing unless a branch put it there (a source checkout of delegate-git
  // itself tracks its own files, and is run from them).
  if (workTree !== null && source.split(path.sep).includes('node_modules'))
    await refuseTracked(repo, workTree, source);
  return { entry, source, standalone, copy: workTree !== null || inPackageRunnerCache(source) };
}

/** Where the CLI comes from, and whether it is copied (planHookCli); settled before init writes anything. */
export interface CliPlan {
  entry: string;
  /** The package directory, or the single-file build itself. */
  source: string;
  standalone: boolean;
  copy: boolean;
}

/** Copies the CLI into the git directory when planned, and says where the hooks find it. */
export async function installHookCli(repo: Repository, plan: CliPlan): Promise<HookCli> {
  const { entry, source, standalone } = plan;
  if (!plan.copy) return { entry, copiedFrom: null };
  const home = path.join(repo.layout.commonDir, 'delegate-git', 'cli');
  const next = `${home}.next-${process.pid}`;
  await rm(next, { recursive: true, force: true });
  await mkdir(next, { recursive: true });
  try {
    if (standalone) await cp(source, path.join(next, path.basename(source)));
    else
      for (const part of ['bin', 'dist', 'package.json'])
        await cp(path.join(source, part), path.join(next, part), {
          recursive: true,
          // The single-file server build is not what a hook of this package runs.
          filter: (from) => !from.endsWith('-standalone.mjs'),
        });
    await rm(home, { recursive: true, force: true });
    await rename(next, home);
  } finally {
    await rm(next, { recursive: true, force: true });
  }
  const copied = path.join(home, path.basename(source));
  return standalone
    ? { entry: copied, copiedFrom: source, copiedTo: copied }
    : {
        entry: path.join(home, 'bin', path.basename(entry)),
        copiedFrom: path.join(source, 'package.json'),
        copiedTo: path.join(home, 'package.json'),
      };
}

/** npx's cache (`_npx`), pnpm's (`dlx`) or yarn's temporary one (`dlx-<n>`): each is pruned, the CLI then gone. */
function inPackageRunnerCache(file: string): boolean {
  return file
    .split(path.sep)
    .some((segment) => segment === '_npx' || segment === 'dlx' || /^dlx-/.test(segment));
}

/** The nearest directory at or above `file` holding a `.git` (a work tree git checks files out into), or null. */
function workTreeHolding(file: string): string | null {
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, '.git'))) return dir;
    if (path.dirname(dir) === dir) return null;
  }
}

async function refuseTracked(repo: Repository, workTree: string, source: string): Promise<void> {
  const listed = await gitTry(['ls-files', '-z', '--', `:(literal)${path.relative(workTree, source)}`], {
    cwd: workTree,
    env: repo.env,
  });
  if (listed.code !== 0 || listed.stdout.length === 0) return;
  throw new DelegateGitError(
    'USAGE',
    `The delegate-git init runs from (${source}) holds files the repository at ${workTree} tracks: a branch put them there, and init will not make them the program every commit runs. Nothing was written. Check out a branch that does not track them, reinstall (npm ci), and run init again.`,
  );
}

/**
 * A hook installHookFile wrote; where it kept the one it replaced when that held lines of the user's; and where it
 * moved a foreign one, which the new hook runs first.
 */
export interface InstalledHook {
  file: string;
  kept: { file: string; why: string } | null;
  chained?: string;
}

/**
 * Writes `<dir>/<name>`, moving a foreign hook aside to `<name>.chained` (which ours runs first), and one of ours that
 * was edited by hand to `<name>.kept` (running it too would run the gate twice, once with a CLI that may be gone).
 * The new hook is written before the old one moves, and the old one is put back if ours cannot be put in its place: a
 * gate must never be left without the hook that was there.
 *
 * A hook that is a symbolic link is foreign, whatever it leads to: the link is the user's way of running a script, not
 * a hook of ours to write over (rt54 f01). One leading to a sibling hook of ours by name (`pre-merge-commit ->
 * pre-commit`, so merges run the user's commit checks) would lead, once init installed there, to our own hook: its
 * chained copy leads where that hook's user script went instead, `pre-commit.chained`, whichever init installs first.
 */
export async function installHookFile(
  dir: string,
  name: HookName,
  cli: HookCli = { entry: cliEntry(), copiedFrom: null },
): Promise<InstalledHook> {
  const file = path.join(dir, name);
  refuseOccupied([file]);
  const text = hookText(name, cli);
  const chained = `${file}.chained`;
  const link = lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink() ?? false;
  const existing = !link && existsSync(file) ? await readFile(file, 'utf8') : null;
  const foreign = link || (existing !== null && !isOurText(existing));
  // A chained copy the same as the hook is what a run stopped before replacing it left: it is made again.
  if (foreign && lstatSync(chained, { throwIfNoEntry: false }) && !sameHook(file, chained)) {
    throw new DelegateGitError(
      'IO',
      `${file} is not delegate-git's and ${chained} already exists, so the existing hook cannot be chained safely. Merge them by hand, then run init again.`,
    );
  }
  const edited = existing !== null && !foreign ? editedHook(existing, text) : null;
  const aside = foreign ? chained : edited ? keptName(file) : null;
  const sibling = link ? await siblingHookChain(dir, file) : null;
  const ready = `${file}.delegate-git-${process.pid}`;
  await mkdir(dir, { recursive: true });
  await removeStoppedTemporaries(dir, name);
  try {
    await writeFile(ready, text, { mode: 0o755 });
    await chmod(ready, 0o755);
    // The hook is copied aside before ours replaces it in one rename: a run stopped in between leaves the hook in
    // place, run as before, never no hook at all (fc audit f02).
    if (aside) await keepAside(file, aside);
    try {
      await rename(ready, file);
    } catch (error) {
      if (aside) await rm(aside, { force: true });
      throw error;
    }
  } finally {
    await rm(ready, { force: true });
  }
  if (sibling) await relink(chained, sibling);
  await refreshSavedCopies(file, text);
  return {
    file,
    kept: edited && aside ? { file: aside, why: edited } : null,
    ...(foreign ? { chained } : {}),
  };
}

/** The temporaries `<name>.delegate-git-<pid>` of runs stopped before they could remove them (fc audit f06). */
async function removeStoppedTemporaries(dir: string, name: string): Promise<void> {
  const prefix = `${name}.delegate-git-`;
  for (const entry of await readdir(dir).catch(() => [])) {
    const pid = entry.startsWith(prefix) ? Number(entry.slice(prefix.length)) : Number.NaN;
    if (Number.isInteger(pid) && pid > 0 && !processRuns(pid))
      await rm(path.join(dir, entry), { force: true });
  }
}

/**
 * A copy of the hook `file` at `aside`: a hard link where the file system has them, else a copy. The mode goes with
 * it: the hook runs a .chained file only when executable, so one the user had disabled (git skips a hook that is not
 * executable) stays disabled. A link stays a link to the same place.
 */
async function keepAside(file: string, aside: string): Promise<void> {
  await rm(aside, { force: true }); // absent, or a copy of this hook (sameHook)
  const stat = lstatSync(file);
  if (stat.isSymbolicLink()) return symlink(readlinkSync(file), aside);
  await link(file, aside).catch(async () => {
    await copyFile(file, aside);
    await chmod(aside, stat.mode & 0o7777);
  });
}

/** Whether `copy` is a copy of the hook `file` as keepAside makes it (same link, or same bytes and mode). */
function sameHook(file: string, copy: string): boolean {
  const [a, b] = [lstatSync(file, { throwIfNoEntry: false }), lstatSync(copy)];
  if (!a) return false;
  if (a.isSymbolicLink() || b.isSymbolicLink())
    return a.isSymbolicLink() && b.isSymbolicLink() && readlinkSync(file) === readlinkSync(copy);
  return (
    a.isFile() &&
    b.isFile() &&
    (a.mode & 0o7777) === (b.mode & 0o7777) &&
    readFileSync(file).equals(readFileSync(copy))
  );
}

/**
 * Where the chained copy of the link `file` should lead when the link leads to a hook of this package's names in the
 * same directory (`pre-commit`, or the `pre-commit.chained` an earlier run moved it to): that hook's `.chained`, the
 * user's script once init has installed there, by a relative name as the user's link was. Null for any other link.
 */
async function siblingHookChain(dir: string, file: string): Promise<string | null> {
  const realDir = await realpath(dir);
  // A link to nothing (no pre-commit yet) leads by its own text.
  const target = await realpath(file).catch(() => path.resolve(realDir, readlinkSync(file)));
  if (path.dirname(target) !== realDir || path.basename(target) === path.basename(file)) return null;
  const hook = path.basename(target).replace(/\.chained$/, '');
  return (Object.keys(TEMPLATE) as string[]).includes(hook) ? `${hook}.chained` : null;
}

/** Replaces the link `file` with one to `target`, never leaving no link there. */
async function relink(file: string, target: string): Promise<void> {
  const next = `${file}.delegate-git-${process.pid}`;
  await rm(next, { force: true });
  await symlink(target, next);
  await rename(next, file);
}

/** What init says of a hook whose earlier content it kept or chained, or '' when there was none. */
export function keptNote({ file, kept, chained }: InstalledHook): string {
  if (chained)
    return `the hook there, not delegate-git's${lstatSync(chained, { throwIfNoEntry: false })?.isSymbolicLink() ? ` (a link to ${readlinkSync(chained)})` : ''}, is now ${chained}, which the hook runs first`;
  if (!kept) return '';
  return `the hook there had ${kept.why}: it is kept as ${kept.file}, which git does not run; move lines of your own to ${file}.chained, which the hook runs first`;
}

/**
 * A hook manager (python's pre-commit) saves the hook it replaces as `<name>.legacy` and runs it. An older copy of
 * ours saved so would run the manager again from its chain, for ever: such copies get the current script, which
 * does not run its chain when called from one.
 */
async function refreshSavedCopies(file: string, text: string): Promise<void> {
  const saved = `${file}.legacy`;
  if (existsSync(saved) && (await isOurs(saved))) await writeFileAtomic(saved, text, 0o755);
}

/** Where init will install the client hooks, settled (and refused if need be) before init writes anything. */
export interface ClientHookPlan {
  /** The hooks directory, absolute. */
  dir: string;
  cli: CliPlan;
  /** core.hooksPath when set: its value (`~` expanded) and the config scope and file it comes from. */
  configured: ConfiguredHooksPath | null;
  /** husky's directory (`.husky`, or where `husky <dir>` put it) when the repository uses husky, absolute. */
  husky: string | null;
}

/**
 * Client side: pre-commit, and pre-merge-commit, which git runs instead of pre-commit for the commit `git merge`
 * (or `git pull`) makes by itself; without it a merge that combines two promoted versions of a governed file
 * commits content nobody judged. And post-merge and post-rewrite, after a pull that makes no commit.
 *
 * Refuses (writing nothing) a hooks directory this clone does not own: a core.hooksPath from the global or system
 * config is every repository's hooks directory, and a hooks directory holding tracked files is the team's, where a
 * script naming this machine's paths does not belong. An untracked directory in the work tree is this clone's, but
 * any checkout may replace or delete what is in it. husky's generated `_` is one too, and is used all the same: init
 * adds its line to husky's committed scripts, which a branch can change anyway (docs/threat-model.md).
 */
export async function planClientHooks(repo: Repository): Promise<ClientHookPlan> {
  const top = repo.layout.topLevel!;
  const configured = await configuredHooksPath(repo, top);
  const cli = await planHookCli(repo);
  if (!configured) {
    const plan = { dir: path.join(repo.layout.commonDir, 'hooks'), cli, configured, husky: null };
    await refuseShared(plan.dir, [top, repo.layout.commonDir], CLIENT_WAY_OUT);
    // `ln -s ../githooks .git/hooks`: the team's hooks, as with a core.hooksPath the repository tracks; or, not
    // tracked, a directory a checkout writes.
    if (lstatSync(plan.dir, { throwIfNoEntry: false })?.isSymbolicLink()) {
      const target = await realpath(plan.dir);
      const named = `.git/hooks links to ${path.relative(top, target) || '.'}`;
      await refuseTeamHooks(repo, top, target, named);
      await refuseCheckoutWritable(repo, top, plan.dir, named, LINKED_IN_WORK_TREE_WAY_OUT);
    }
    refuseOccupied(hookFiles(repo, plan));
    return plan;
  }
  refuseEmptyHooksPath(configured, 'init');
  const { value, scope } = configured;
  if (scope !== 'local' && scope !== 'worktree') {
    throw new DelegateGitError(
      'USAGE',
      `core.hooksPath is set to ${value} in the ${scope} git configuration, so that directory holds the hooks of every repository using that configuration: delegate-git's hook there would refuse the commits of all the others (they have no policy), and an existing hook there would be chained for all of them. Nothing was written. Either give this repository hooks of its own (\`git config core.hooksPath .git/hooks\`; the shared hooks then no longer run here unless you chain them yourself) and run init again, or add to the shared pre-commit and pre-merge-commit hooks a line that runs \`delegate-git hook pre-commit\` (\`hook pre-merge-commit\` in the other) only where .delegate-git/policy.json exists, and run \`delegate-git init --no-hook\`.`,
    );
  }
  // A path init made absolute names the old place once the repository moved: its hooks are where they moved to.
  const moved =
    path.isAbsolute(value) && value === (await recordedHooksDir(repo.layout.commonDir))
      ? await movedHooksDir(value, top, repo.layout.commonDir)
      : null;
  const dir = moved ?? path.resolve(top, value);
  // init made the path absolute into the work tree it ran in: each worktree of this repository is this repository.
  const worktrees = await worktreeTops(repo, top);
  await refuseSetInWorkTree(repo, configured, worktrees);
  const husky = await huskyDirOf(repo, worktrees, dir);
  if (husky) {
    await refuseShared(husky, [top], HUSKY_WAY_OUT);
    await refuseIgnoredHuskyFiles(repo, top, husky);
  } else {
    await refuseShared(dir, [...worktrees, repo.layout.commonDir], CONFIGURED_WAY_OUT);
    await refuseTeamHooks(repo, top, dir, `core.hooksPath is ${value}`);
    // Not for husky's generated `_`: what runs from there is husky's, and its committed scripts are the branch's.
    await refuseCheckoutWritable(
      repo,
      top,
      dir,
      `core.hooksPath is ${value}`,
      IN_WORK_TREE_WAY_OUT,
      worktrees,
    );
  }
  const plan = { dir, cli, configured, husky };
  refuseOccupied(hookFiles(repo, plan));
  // init appends to husky's files, the team's: through a link it would write wherever that points.
  if (husky) refuseLinks(CLIENT_HOOKS.map((name) => path.join(husky, name)));
  return plan;
}

/**
 * husky's directory when `hooksDir` is one husky set, as this worktree checks it out (`worktrees[0]`): `<dir>/_`,
 * generated by husky (`husky` sets `.husky/_`, `husky frontend/.husky` a folder's) and so not tracked, holding husky
 * 9's runner `h` or husky 8's `husky.sh`; or `.husky` itself (husky 4 to 8 without `_`). Its hooks are the committed
 * `<dir>/<hook>`: `_` is written again by every `npm install`. `<dir>` must not be ignored: its scripts are committed,
 * or init says to commit them (huskyFilesToCommit), and git refuses to check out a branch's file over one not yet
 * committed, as it does not over an ignored one.
 */
async function huskyDirOf(
  repo: Repository,
  worktrees: readonly string[],
  hooksDir: string,
): Promise<string | null> {
  const generated = path.basename(hooksDir) === '_';
  const dir = generated ? path.dirname(hooksDir) : hooksDir;
  const rel = worktrees.map((root) => relativeWithin(root, dir)).find((r) => r !== null);
  if (rel === undefined || rel === null) return null;
  const top = worktrees[0]!;
  const here = path.join(top, rel);
  // An ignored one is no husky's, whose scripts are committed: it is refused as any such directory (rt54 f08).
  if (!existsSync(here) || (await ignored(repo, top, [here])).length > 0) return null;
  if (!generated) return path.basename(here) === '.husky' ? here : null;
  const isRunner = (file: string) => {
    try {
      return readFileSync(path.join(hooksDir, file), 'utf8').includes('husky');
    } catch {
      return false;
    }
  };
  if (!['h', 'husky.sh'].some(isRunner)) return null;
  return (await tracksFilesIn(repo, top, path.join(here, '_'))) ? null : here;
}

/** This worktree's top, then every other worktree's of the repository (`git worktree list`). */
async function worktreeTops(repo: Repository, top: string): Promise<string[]> {
  const listed = await gitText(['worktree', 'list', '--porcelain'], { cwd: top, env: repo.env });
  const others = listed
    .split('\n')
    .flatMap((line) => (line.startsWith('worktree ') ? [line.slice('worktree '.length)] : []))
    .filter((dir) => path.resolve(dir) !== path.resolve(top));
  return [top, ...others];
}

const CONFIGURED_WAY_OUT =
  'Set a hooks path inside this repository (`git config core.hooksPath .git/hooks`; the shared hooks then no longer run here unless you chain them yourself) and run init again, or add to the shared pre-commit and pre-merge-commit hooks a line that runs `delegate-git hook pre-commit` (`hook pre-merge-commit` in the other) only where .delegate-git/policy.json exists, and run `delegate-git init --no-hook`.';

const HUSKY_WAY_OUT =
  "init adds a line to husky's committed hook scripts, and will not write through a link to a directory outside this repository. Make the husky folder a directory of this repository and run init again, or add the line yourself (a line running `delegate-git hook pre-commit`, and `hook pre-merge-commit`, where .delegate-git/policy.json exists) and run `delegate-git init --no-hook`.";

const CLIENT_WAY_OUT =
  'Give this repository hooks of its own (a directory in place of the link; the shared hooks then no longer run here unless you chain them yourself) and run init again, or add to the shared pre-commit and pre-merge-commit hooks a line that runs `delegate-git hook pre-commit` (`hook pre-merge-commit` in the other) only where .delegate-git/policy.json exists, and run `delegate-git init --no-hook`.';

/**
 * Refuses core.hooksPath set to the empty string: git (2.39 at least) then looks for each hook at `/<hook>` and runs
 * none, so a gate installed in .git/hooks, where an unset one sends git, would never run (rt54 f04).
 */
function refuseEmptyHooksPath(configured: ConfiguredHooksPath, command: 'init' | 'init --server'): void {
  if (configured.value !== '') return;
  const own =
    configured.scope === 'local'
      ? ''
      : `, or give this repository a hooks path of its own (\`git config core.hooksPath ${command === 'init' ? '.git/hooks' : 'hooks'}\` here)`;
  throw new DelegateGitError(
    'USAGE',
    `core.hooksPath is set to the empty string in the ${configured.scope} git configuration. That does not unset it: git then looks for each hook at /<hook> (the empty path joined to the hook's name) and runs none, so delegate-git's hook would never run, wherever init put it. Nothing was written. Unset it (\`${unsetHooksPath(configured.scope)}\`)${own}, and run \`delegate-git ${command}\` again.`,
  );
}

/**
 * Refuses core.hooksPath set in a file of the work tree (a team's `.gitconfig` that .git/config includes): a branch
 * that changes the file moves git to hooks of its own, as soon as it is checked out (rt54 f09).
 */
async function refuseSetInWorkTree(
  repo: Repository,
  configured: ConfiguredHooksPath,
  worktrees: readonly string[],
): Promise<void> {
  if (configured.origin === null) return;
  const within = await checkoutWrites(configured.origin, worktrees, [
    repo.layout.commonDir,
    repo.layout.gitDir,
  ]);
  if (within === null) return;
  throw new DelegateGitError(
    'USAGE',
    `core.hooksPath is set to ${configured.value} in ${configured.origin}, a file inside the work tree ${within.workTree} that the git configuration includes: a branch that changes that file changes where git runs hooks from as soon as it is checked out, and commits then run that branch's hooks, or none, without a word. Nothing was written. Take core.hooksPath out of ${within.rel} (and keep the hooks path in .git/config itself, or leave it unset so git runs .git/hooks), or stop including that file, then run init again.`,
  );
}

/**
 * Refuses husky hook files init would write that git ignores (and does not track): never committed, they are a
 * branch's to replace on checkout, without a word, and no other clone runs the gate from them.
 */
async function refuseIgnoredHuskyFiles(repo: Repository, top: string, husky: string): Promise<void> {
  const files = await ignored(
    repo,
    top,
    CLIENT_HOOKS.map((name) => path.join(husky, name)),
  );
  if (files.length === 0) return;
  throw new DelegateGitError(
    'USAGE',
    `git ignores ${files.join(', ')} (and does not track ${files.length > 1 ? 'them' : 'it'}): init would add the gate's line to husky's hook scripts there, which are then never committed, so no other clone runs the gate, and checking out a branch that tracks one replaces it with that branch's script without a word. Nothing was written. Stop ignoring ${files.length > 1 ? 'them' : 'it'} (\`git check-ignore -v ${files.join(' ')}\` names the rule) and run init again.`,
  );
}

/** Which of `files` (absolute, in the work tree `top`) git ignores, as paths from `top`: tracked files are never. */
async function ignored(repo: Repository, top: string, files: readonly string[]): Promise<string[]> {
  const rels = files.flatMap((file) => {
    const rel = relativeWithin(top, file);
    return rel ? [rel] : [];
  });
  if (rels.length === 0) return [];
  const args = ['check-ignore', '-z', '--stdin'];
  const result = await gitTry(args, { cwd: top, env: repo.env, input: `${rels.join('\0')}\0` });
  if (result.code > 1) throw gitFailure(args, result);
  return result.stdout.toString('utf8').split('\0').filter(Boolean);
}

/**
 * Refuses the default hooks directory when it resolves to a place outside this repository (`owners`: its work tree
 * and git directory), a link to a directory others share: other repositories may run their hooks from there too,
 * and delegate-git's would refuse their commits (they have no policy), as a core.hooksPath from the global
 * configuration would. The same for a core.hooksPath this repository sets outside itself (`~/githooks`, set in each
 * repository that shares it).
 */
async function refuseShared(dir: string, owners: readonly string[], wayOut: string): Promise<void> {
  let real: string;
  try {
    real = await realpath(dir);
  } catch {
    real = path.resolve(dir); // not there yet: init creates it where it is named
  }
  const roots = await Promise.all(owners.map((owner) => realpath(owner).catch(() => owner)));
  if (roots.some((root) => relativeWithin(root, real) !== null)) return;
  throw new DelegateGitError(
    'USAGE',
    `The hooks directory ${dir} is ${real === path.resolve(dir) ? '' : `a link to ${real}, `}outside this repository, where other repositories may run their hooks from too: delegate-git's hook there would refuse all of theirs (they have no policy), and an existing hook there would be chained for all of them. Nothing was written. ${wayOut}`,
  );
}

/** Refuses a file init appends to that is a symbolic link (it would read and write whatever the link names). */
function refuseLinks(files: readonly string[]): void {
  for (const file of files) {
    if (!lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink()) continue;
    throw new DelegateGitError(
      'USAGE',
      `${file} is a symbolic link; init adds a line to that file and will not write through a link (to ${readlinkSync(file)}). Nothing was written. Replace it with the hook script itself, then run init again.`,
    );
  }
}

/** Refuses a hooks directory holding files the repository tracks: its hooks are the team's. */
async function refuseTeamHooks(repo: Repository, top: string, dir: string, named: string): Promise<void> {
  if (!(await tracksFilesIn(repo, top, dir))) return;
  const shown = path.relative(top, dir) || '.';
  throw new DelegateGitError(
    'USAGE',
    `${named}, a directory this repository tracks: its hooks are the team's, and init would replace them with a script naming this machine's paths (and leave untracked files beside them). Nothing was written. Add the gate to the committed hooks by hand: a line running \`delegate-git hook pre-commit\` in ${shown}/pre-commit and one running \`delegate-git hook pre-merge-commit\` in ${shown}/pre-merge-commit (git runs that one for the commit of a merge), each ending the hook with its exit status when it fails; then run \`delegate-git init --no-hook\`.`,
  );
}

/**
 * Refuses a hooks directory in a work tree that the repository does not track (refuseTeamHooks has refused one it
 * does): git takes its files, ignored or untracked, for its own to replace. A checkout of a branch that tracks
 * `<dir>/pre-commit` puts that branch's script where the gate was, and checking out a branch without it again deletes
 * the file: every commit from then on runs a branch's program, or no gate at all, and nothing says so.
 */
async function refuseCheckoutWritable(
  repo: Repository,
  top: string,
  dir: string,
  named: string,
  wayOut: string,
  worktrees: readonly string[] = [top],
): Promise<void> {
  const within = await checkoutWrites(dir, worktrees, [repo.layout.commonDir, repo.layout.gitDir]);
  if (within === null) return;
  const { workTree, rel: shown } = within;
  throw new DelegateGitError(
    'USAGE',
    `${named}, a directory inside the work tree ${workTree} that git does not track (ignored or untracked): git takes the files there for its own to replace, so checking out a branch that tracks ${shown}/pre-commit replaces delegate-git's hook with that branch's script, and checking out a branch without it deletes the hook, without a word either time; commits would then run the branch's program, or no gate at all. Nothing was written. ${wayOut}`,
  );
}

const IN_WORK_TREE_WAY_OUT =
  "Unset core.hooksPath (`git config --unset core.hooksPath`) so git runs the hooks in the git directory, or point it at a directory outside the work tree that is this repository's alone, inside its git directory (`git config core.hooksPath .git/hooks`), moving any hook of your own from there first (init keeps it and runs it before the gate); then run init again.";

const LINKED_IN_WORK_TREE_WAY_OUT =
  'Make .git/hooks a directory of its own rather than a link into the work tree, moving any hook of your own into it (init keeps it and runs it before the gate), and run init again.';

/** The files installClientHooks writes (or appends to) for a plan. */
function hookFiles(repo: Repository, { dir, husky }: Pick<ClientHookPlan, 'dir' | 'husky'>): string[] {
  if (!husky) return CLIENT_HOOKS.map((name) => path.join(dir, name));
  return [
    ...CLIENT_HOOKS.map((name) => path.join(husky, name)),
    ...CLIENT_HOOKS.map((name) => path.join(repo.layout.commonDir, 'delegate-git', 'hooks', name)),
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
  const wayOut =
    'Give this repository a hooks directory of its own (a directory in place of the link) and run `delegate-git init --server` again, or add a line running `delegate-git hook pre-receive` to the shared pre-receive hook for this repository.';
  if (!configured) {
    const dir = path.join(repo.layout.commonDir, 'hooks');
    await refuseShared(dir, [repo.layout.commonDir], wayOut);
    return dir;
  }
  refuseEmptyHooksPath(configured, 'init --server');
  const { value, scope } = configured;
  if (scope !== 'local' && scope !== 'worktree') {
    throw new DelegateGitError(
      'USAGE',
      `core.hooksPath is set to ${value} in the ${scope} git configuration, so git runs this repository's hooks from there, as every other repository's: a pre-receive hook in hooks/ would never run, and one there would judge the pushes of all of them. Nothing was written. Set a hooks path for this repository alone (\`git config core.hooksPath hooks\` here) and run \`delegate-git init --server\` again, or add a line running \`delegate-git hook pre-receive\` to the shared pre-receive hook for this repository.`,
    );
  }
  return path.resolve(repo.layout.gitDir, value);
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
export async function installClientHooks(
  repo: Repository,
  plan: ClientHookPlan,
): Promise<Record<ClientHook, string[]>> {
  const top = repo.layout.topLevel!;
  const { dir, configured } = plan;
  if (configured && dir !== configured.value)
    await gitText(['config', `--${configured.scope}`, 'core.hooksPath', dir], { cwd: top, env: repo.env });
  const cli = await installHookCli(repo, plan.cli);
  const installed = {} as Record<ClientHook, string[]>;
  for (const name of CLIENT_HOOKS)
    installed[name] = [
      plan.husky
        ? await appendHuskyLine(repo, top, plan.husky, dir, name, cli)
        : said(await installHookFile(dir, name, cli)),
    ];
  // husky 9 generates no pre-merge-commit in .husky/_, so git would never run .husky/pre-merge-commit: ours goes
  // there (git ignores that directory's content). Should husky one day write its own, it runs the line above.
  const generated = path.join(dir, 'pre-merge-commit');
  if (plan.husky && path.basename(dir) === '_' && (!existsSync(generated) || (await isOurs(generated))))
    installed['pre-merge-commit'].push(said(await installHookFile(dir, 'pre-merge-commit', cli)));
  // Where git ran hooks when they were installed: a later core.hooksPath elsewhere is said (hooks-in-effect.ts).
  await writeFileAtomic(installedHooksRecord(repo.layout.commonDir), `${dir}\n`);
  return installed;
}

/** An installed hook as init names it. */
function said(hook: InstalledHook): string {
  const note = keptNote(hook);
  return note ? `${hook.file} (${note})` : hook.file;
}

/**
 * The configuration files git reads here that lie in a work tree a checkout writes (a team's `.gitconfig` that
 * .git/config includes), relative to this one's top: a branch that changes one changes this clone's configuration as
 * soon as it is checked out: where git runs hooks from, a program git runs (rt54 f09).
 */
export async function configInWorkTree(repo: Repository): Promise<string[]> {
  const top = repo.layout.topLevel!;
  const listed = await gitText(['config', '--list', '--show-origin', '-z'], { cwd: top, env: repo.env });
  // Entries are `<origin>\0<key>\n<value>\0`: the origins are the even fields.
  const files = new Set(
    listed
      .split('\0')
      .filter((field, i) => i % 2 === 0 && field.startsWith('file:'))
      .map((field) => path.resolve(top, field.slice('file:'.length))),
  );
  const trees = await worktreeTops(repo, top);
  const found: string[] = [];
  for (const file of files)
    if (await checkoutWrites(file, trees, [repo.layout.commonDir, repo.layout.gitDir]))
      found.push(path.relative(top, file));
  return found;
}

/**
 * The husky files init wrote its line to that are not committed as they are now: the gate runs in other clones, and
 * survives a `git stash` or `reset --hard` here, only once they are.
 */
export async function huskyFilesToCommit(repo: Repository, plan: ClientHookPlan): Promise<string[]> {
  if (!plan.husky) return [];
  const top = repo.layout.topLevel!;
  const files = CLIENT_HOOKS.map((name) => relativeWithin(top, path.join(plan.husky!, name))!);
  const status = await gitText(['status', '--porcelain', '-z', '--untracked-files=all', '--', ...files], {
    cwd: top,
    env: repo.env,
  });
  const changed = new Set(status.split('\0').flatMap((entry) => (entry.length > 3 ? [entry.slice(3)] : [])));
  return files.filter((file) => changed.has(file));
}

/**
 * The committed husky line runs this clone's installed hook (which knows where its delegate-git is), and falls
 * back to the project's own dependency in clones that have not run init yet.
 */
async function appendHuskyLine(
  repo: Repository,
  top: string,
  husky: string,
  hooksDir: string,
  name: ClientHook,
  cli: HookCli,
): Promise<string> {
  const runner = await installHookFile(path.join(repo.layout.commonDir, 'delegate-git', 'hooks'), name, cli);
  const file = path.join(husky, name);
  const line = huskyLine(name);
  const exists = existsSync(file);
  // A new file gets a shebang: husky 8 has git run .husky/<hook> itself.
  const current = exists ? await readFile(file, 'utf8') : '#!/usr/bin/env sh\n';
  const placed = withHuskyLine(current, line, huskyLinesBefore(name));
  // The file is the team's: only the line changes, never its mode.
  if (placed !== current) await writeFileAtomic(file, placed, exists ? statSync(file).mode & 0o7777 : 0o755);
  const before = runsLast(placed, line)
    ? ''
    : '; the gate runs before the rest of that script, so a command after it that restages files (a formatter) commits content the gate did not judge: move the line after such commands yourself';
  return `${path.relative(top, file)} (husky; core.hooksPath set to ${hooksDir} so linked worktrees run it too${before}${runner.kept ? `; ${keptNote(runner)}` : ''})`;
}
