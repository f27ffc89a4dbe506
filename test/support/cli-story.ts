/**
 * End-to-end stories with the BUILT `delegate-git` command, as a user runs it: real git, real hooks installed by
 * `init`, a bare remote with the pre-receive hook installed by `init --server`.
 *
 * Every story has its own temporary root holding its repositories, its own XDG_CONFIG_HOME (so the operator's
 * signing keys live there and a real user's keys are never read or written), its own HOME and its own global git
 * config (identity, default branch), so nothing of the machine running the tests changes what a test sees.
 *
 * Typical use:
 *   const story = makeStory();
 *   const remote = makeServer(story);                 // bare, pre-receive installed
 *   const work = cloneInto(story, remote, 'alice');   // a clone
 *   adopt(story, work, ['src/**']);                  // init --protect, commit the policy and key
 *   writeFiles(work, { 'src/a.ts': 'export {}\n' });
 *   await recordVerdict(story, work, 'src/a.ts');    // UNIT_PASSED for the work-tree content, operator's key
 *   gitOk(story, work, ['add', '-A']);
 *   expect(commit(story, work, 'add a').code).toBe(0);
 */
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  loadSigningKey,
  POLICY_PATH,
  parsePolicy,
  Repository,
  recordStatement,
  reviewStatement,
  rfc3339,
  type Statement,
  type SubjectFile,
  signStatement,
  type VerdictName,
  verdictStatement,
} from '../../packages/core/src/index.js';
import { cleanGitEnv, makeTempDir, removeDir } from './git-repo.js';
import { cliBin } from './paths.js';
import { STUCK_AFTER, spawnFailure } from './stuck.js';

/**
 * The CLI the stories run: the built one (cliBin), or another build of it named by DELEGATE_GIT_E2E_CLI (for
 * example a packed and installed copy, or a private build while the workspace's dist is being rebuilt).
 */
export const storyCli = process.env.DELEGATE_GIT_E2E_CLI ?? cliBin;

/** The operator every story signs as, unless told otherwise (init names the key after $USER). */
export const OPERATOR = 'alice';

/** The ledger ref, spelled out rather than imported: the stories check where the built CLI writes. */
export const LEDGER = 'refs/notes/delegations';

export interface Story {
  /** Temporary directory holding everything of this story. */
  root: string;
  /** The environment every command of the story runs with (the operator's XDG_CONFIG_HOME, clean git). */
  env: NodeJS.ProcessEnv;
  cleanup(): void;
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** A fresh story root with its own XDG_CONFIG_HOME, HOME and global git config. */
export function makeStory(prefix = 'delegate-git-e2e-'): Story {
  const root = makeTempDir(prefix);
  const home = path.join(root, 'home');
  fs.mkdirSync(home);
  const gitConfig = path.join(root, 'gitconfig');
  fs.writeFileSync(
    gitConfig,
    [
      '[user]',
      `\tname = ${OPERATOR}`,
      `\temail = ${OPERATOR}@example.com`,
      '[init]',
      '\tdefaultBranch = main',
      '[advice]',
      '\tdetachedHead = false',
      '',
    ].join('\n'),
  );
  const env = cleanGitEnv({
    HOME: home,
    XDG_CONFIG_HOME: path.join(root, 'xdg'),
    USER: OPERATOR,
    LOGNAME: OPERATOR,
    GIT_CONFIG_GLOBAL: gitConfig,
    GIT_TERMINAL_PROMPT: '0',
  });
  delete env.DELEGATE_GIT_SIGNING_KEY;
  return { root, env, cleanup: () => removeDir(root) };
}

/** makeStory for a story whose commands must not see GitHub Actions around them. */
export function storyOutsideActions(prefix: string): Story {
  const story = makeStory(prefix);
  // A test run inside GitHub Actions must not annotate the real job or append to its summary.
  delete story.env.GITHUB_ACTIONS;
  delete story.env.GITHUB_STEP_SUMMARY;
  return story;
}

/** The same story's environment as another operator: their own XDG_CONFIG_HOME (and so their own keys). */
export function operatorEnv(story: Story, name: string): NodeJS.ProcessEnv {
  return { ...story.env, XDG_CONFIG_HOME: path.join(story.root, `xdg-${name}`), USER: name, LOGNAME: name };
}

function spawn(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, input?: string): Run {
  const result = spawnSync(command, args, { cwd, env, input, maxBuffer: 1 << 28, ...STUCK_AFTER });
  if (result.error) throw spawnFailure(result.error, command, args);
  return {
    code: result.status ?? 128,
    stdout: result.stdout.toString('utf8'),
    stderr: result.stderr.toString('utf8'),
  };
}

/** Runs the built CLI in `cwd` (never throws: the exit code and output are what tests assert), `input` on stdin. */
export function cli(
  story: Story,
  cwd: string,
  args: string[],
  env: NodeJS.ProcessEnv = story.env,
  input?: string,
): Run {
  return spawn(process.execPath, [storyCli, ...args], cwd, env, input);
}

/** cli without waiting: for commands a test starts at the same moment (racing each other). */
export function cliAsync(
  story: Story,
  cwd: string,
  args: string[],
  env: NodeJS.ProcessEnv = story.env,
): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [storyCli, ...args],
      { cwd, env, maxBuffer: 1 << 28 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 128) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Like cli, but a non-zero exit fails the test with the command's output. */
export function cliOk(story: Story, cwd: string, args: string[], env: NodeJS.ProcessEnv = story.env): Run {
  const run = cli(story, cwd, args, env);
  if (run.code !== 0)
    throw new Error(`delegate-git ${args.join(' ')} exited ${run.code}:\n${run.stdout}${run.stderr}`);
  return run;
}

/** Runs git in `cwd` (never throws). */
export function gitRun(story: Story, cwd: string, args: string[], env: NodeJS.ProcessEnv = story.env): Run {
  return spawn('git', args, cwd, env);
}

/** Runs git in `cwd` and returns its trimmed stdout; a non-zero exit fails the test with git's stderr. */
export function gitOk(story: Story, cwd: string, args: string[], env: NodeJS.ProcessEnv = story.env): string {
  const run = gitRun(story, cwd, args, env);
  if (run.code !== 0) throw new Error(`git ${args.join(' ')} exited ${run.code}:\n${run.stderr}`);
  return run.stdout.trim();
}

/** `git commit` with the hooks git would run (no --no-verify unless passed in `extra`). */
export function commit(story: Story, cwd: string, message: string, extra: string[] = []): Run {
  return gitRun(story, cwd, ['commit', '-q', '-m', message, ...extra]);
}

/** Writes files (repository-relative POSIX paths) into a work tree; nothing is staged. */
export function writeFiles(dir: string, files: Record<string, string | Buffer>): void {
  for (const [file, content] of Object.entries(files)) {
    const target = path.join(dir, file);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, content);
  }
}

/** Writes files into a work tree and stages them. */
export function stageFiles(story: Story, dir: string, files: Record<string, string>): void {
  writeFiles(dir, files);
  gitOk(story, dir, ['add', '--', ...Object.keys(files)]);
}

/** A bare repository (default branch main) with the pre-receive hook installed by `delegate-git init --server`. */
export function makeServer(story: Story, name = 'remote.git', opts: { hook?: boolean } = {}): string {
  const dir = path.join(story.root, name);
  gitOk(story, story.root, ['init', '-q', '--bare', '-b', 'main', dir]);
  if (opts.hook !== false) cliOk(story, dir, ['init', '--server']);
  return dir;
}

/** `git clone` of `remote` into `<root>/<name>`. */
export function cloneInto(story: Story, remote: string, name: string): string {
  const dir = path.join(story.root, name);
  gitOk(story, story.root, ['clone', '-q', remote, dir]);
  return dir;
}

/** `git init` of a new work tree at `<root>/<name>`. */
export function makeWorkTree(story: Story, name: string): string {
  const dir = path.join(story.root, name);
  gitOk(story, story.root, ['init', '-q', '-b', 'main', dir]);
  return dir;
}

/** A first commit (README.md) in `dir`, from before delegate-git was adopted; returns the commit. */
export function commitBeforeAdoption(story: Story, dir: string): string {
  writeFiles(dir, { 'README.md': 'before delegate-git\n' });
  gitOk(story, dir, ['add', 'README.md']);
  const committed = commit(story, dir, 'before the adoption');
  if (committed.code !== 0)
    throw new Error(`the commit before the adoption was refused:\n${committed.stderr}`);
  return gitOk(story, dir, ['rev-parse', 'HEAD']);
}

/**
 * `delegate-git init --protect <glob>...` and the adopting commit of its policy and key file, through the hook.
 * Returns init's output.
 */
export function adopt(story: Story, dir: string, protect: string[], initArgs: string[] = []): Run {
  const init = cliOk(story, dir, ['init', ...protect.flatMap((g) => ['--protect', g]), ...initArgs]);
  gitOk(story, dir, ['add', '.delegate-git']);
  const adopted = commit(story, dir, 'Adopt delegate-git');
  if (adopted.code !== 0) throw new Error(`the adopting commit was refused:\n${adopted.stderr}`);
  return init;
}

/**
 * A second adoption made by hand, as `init` refuses one where a branch holds a policy already: what `init` writes in
 * a scratch repository (policy and key file) copied into `dir`, approved there by the key `init` used. Returns the
 * files written.
 */
export function adoptByHand(story: Story, dir: string, initArgs: string[]): string[] {
  const scratch = makeWorkTree(story, `scratch-${Math.random().toString(36).slice(2)}`);
  cliOk(story, scratch, ['init', ...initArgs, '--no-hook']);
  const from = path.join(scratch, '.delegate-git');
  fs.cpSync(from, path.join(dir, '.delegate-git'), { recursive: true });
  const files = (fs.readdirSync(from, { recursive: true }) as string[])
    .filter((f) => fs.statSync(path.join(from, f)).isFile())
    .map((f) => `.delegate-git/${f.split(path.sep).join('/')}`);
  const key = initArgs.includes('--key') ? initArgs[initArgs.indexOf('--key') + 1]! : OPERATOR;
  cliOk(story, dir, ['attest', '--approve', ...files, '--key', key, '--yes']);
  return files;
}

/** A copy of a prepared work tree (git and all), so describe blocks start from the same state without re-running init. */
export function copyWorkTree(story: Story, from: string, name: string): string {
  const dir = path.join(story.root, name);
  fs.cpSync(from, dir, { recursive: true, verbatimSymlinks: true });
  return dir;
}

export interface VerdictOptions {
  verdict?: VerdictName;
  /** The content judged; default: the file's current work-tree content. */
  content?: string | Buffer;
  /** The operator key that signs (from the story's XDG_CONFIG_HOME); default OPERATOR. */
  key?: string;
  env?: NodeJS.ProcessEnv;
  /** The record's createdAt (RFC 3339); default now, as the signer's clock says. */
  createdAt?: string;
}

/**
 * What signs records for an adopted work tree `dir` the way its operator would: its repository id (from the
 * committed policy) and `sign`, which signs a statement with the operator's key and returns the note line.
 */
export function operatorSigner(
  story: Story,
  dir: string,
): { repository: { id: string }; sign: (statement: Parameters<typeof signStatement>[0]) => string } {
  const policy = parsePolicy(fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8'));
  const { key } = loadSigningKey(OPERATOR, story.env);
  return { repository: { id: policy.repositoryId }, sign: (statement) => signStatement(statement, key).line };
}

/**
 * Signs a verdict (default UNIT_PASSED) on one file's content with the operator's key, as `delegate` would, and
 * records it in the work tree's ledger (its blob written first). Returns the blob id judged.
 */
export async function recordVerdict(
  story: Story,
  dir: string,
  file: string,
  opts: VerdictOptions = {},
): Promise<string> {
  const verdict = opts.verdict ?? 'UNIT_PASSED';
  return recordAbout(story, dir, file, opts, `test: ${verdict} ${file}`, (subject, repository, createdAt) =>
    verdictStatement([subject], { verdict, repository, createdAt }),
  );
}

/**
 * Signs an approval of one file's content with a reviewer key (as `attest --approve` would, but at the time given:
 * a signer's clock is its own) and records it in the work tree's ledger. Returns the blob id approved.
 */
export async function recordApproval(
  story: Story,
  dir: string,
  file: string,
  opts: Omit<VerdictOptions, 'verdict'> & { key: string; reviewer?: { name: string; email: string } },
): Promise<string> {
  const reviewer = opts.reviewer ?? { name: opts.key, email: `${opts.key}@example.com` };
  return recordAbout(story, dir, file, opts, `test: approve ${file}`, (subject, repository, createdAt) =>
    reviewStatement([subject], { decision: 'approve', reviewer, repository, createdAt }),
  );
}

async function recordAbout(
  story: Story,
  dir: string,
  file: string,
  opts: Omit<VerdictOptions, 'verdict'>,
  message: string,
  statementOf: (subject: SubjectFile, repository: { id: string }, createdAt: string) => Statement<object>,
): Promise<string> {
  const env = opts.env ?? story.env;
  const content = opts.content ?? fs.readFileSync(path.join(dir, file));
  const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
  const blob = spawnSync('git', ['hash-object', '-w', '--stdin'], { cwd: dir, env, input: bytes })
    .stdout.toString('utf8')
    .trim();
  const policy = parsePolicy(fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8'));
  const { key } = loadSigningKey(opts.key ?? OPERATOR, env);
  const subject = { path: file, sha256: createHash('sha256').update(bytes).digest('hex'), gitBlob: blob };
  const statement = statementOf(subject, { id: policy.repositoryId }, opts.createdAt ?? rfc3339());
  const repo = await Repository.open(dir, env);
  try {
    await recordStatement(repo.ledger, statement, key, message);
  } finally {
    await repo.close();
  }
  return blob;
}

/** The record lines of the note on `blob` in `dir`'s ledger ([] when none). */
export function noteLines(story: Story, dir: string, blob: string): string[] {
  const run = gitRun(story, dir, ['notes', '--ref=delegations', 'show', blob]);
  return run.code === 0 ? run.stdout.split('\n').filter(Boolean) : [];
}

/** The statement a note line carries (its DSSE payload, decoded). */
export function statementOf(line: string): { predicate: Record<string, unknown>; subject: unknown[] } {
  const envelope = JSON.parse(line) as { payload: string };
  return JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8'));
}

/** The commit a ref points at in `dir`, or null. */
export function refTip(story: Story, dir: string, ref: string): string | null {
  const run = gitRun(story, dir, ['rev-parse', '--verify', '-q', ref]);
  return run.code === 0 ? run.stdout.trim() : null;
}

/** An annotated tag object of `commit` (`git mktag`), named by no ref: what a ledger ref can be set to by hand. */
export function tagOf(story: Story, dir: string, commit: string): string {
  const text = `object ${commit}\ntype commit\ntag ledger\ntagger t <t@example.com> 0 +0000\n\nby hand\n`;
  const run = spawn('git', ['mktag'], dir, story.env, text);
  if (run.code !== 0) throw new Error(`git mktag exited ${run.code}:\n${run.stderr}`);
  return run.stdout.trim();
}

/** A commit on HEAD adding `file` (nothing moves to it: a commit a pusher made by hand, named by its id). */
export function looseCommit(story: Story, dir: string, file: string, content: string): string {
  writeFiles(dir, { [file]: content });
  gitOk(story, dir, ['add', '--', file]);
  const tree = gitOk(story, dir, ['write-tree']);
  const made = gitOk(story, dir, ['commit-tree', tree, '-p', 'HEAD', '-m', `adds ${file}`]);
  gitOk(story, dir, ['reset', '-q', '--hard']);
  return made;
}

/** A commit of `tree` with these parents, made by hand (a notes commit whose history hides another, say). */
export function commitOf(story: Story, dir: string, tree: string, parents: string[]): string {
  return gitOk(story, dir, ['commit-tree', tree, ...parents.flatMap((p) => ['-p', p]), '-m', 'made by hand']);
}

/** Back to HEAD: index and work tree reset, untracked files removed (records and commits stay). */
export function resetWorkTree(story: Story, dir: string): void {
  gitOk(story, dir, ['reset', '-q', '--hard']);
  gitOk(story, dir, ['clean', '-q', '-fd']);
}

/** `git mktree` of `entries` ("<mode> <type> <id>\t<name>", one level, any name) in `dir`: the tree's id. */
export function mktree(story: Story, dir: string, entries: string[]): string {
  const run = spawn('git', ['mktree', '-z'], dir, story.env, entries.map((e) => `${e}\0`).join(''));
  if (run.code !== 0) throw new Error(`git mktree exited ${run.code}:\n${run.stderr}`);
  return run.stdout.trim();
}

/**
 * A notes commit on top of `dir`'s ledger whose tree also holds `entries` (mktree lines, at the top of the notes
 * tree): what a pusher can write by hand that is no note. The ledger ref is left where it was.
 */
export function ledgerCommitWith(story: Story, dir: string, entries: string[]): string {
  const tip = gitOk(story, dir, ['rev-parse', '--verify', LEDGER]);
  const listed = gitOk(story, dir, ['ls-tree', '-z', tip]).split('\0').filter(Boolean);
  const tree = mktree(story, dir, [...listed, ...entries]);
  return gitOk(story, dir, ['commit-tree', tree, '-p', tip, '-m', 'entries that are no notes']);
}

/** A valid record line with one byte of its signed payload changed (a forgery: the signature no longer verifies). */
export function withOnePayloadByteChanged(line: string): string {
  const envelope = JSON.parse(line) as { payload: string; payloadType: string; signatures: unknown[] };
  const payload = Buffer.from(envelope.payload, 'base64');
  const at = payload.indexOf('"createdAt":"2') + '"createdAt":"'.length;
  if (at === '"createdAt":"'.length - 1) throw new Error('the line holds no createdAt to change');
  payload[at] = '3'.charCodeAt(0);
  return JSON.stringify({
    payload: payload.toString('base64'),
    payloadType: envelope.payloadType,
    signatures: envelope.signatures,
  });
}

/** A work tree `name` adopted (protect src/**) with src/a.ts promoted by a verdict and committed; and that blob. */
export async function adoptedWithPromotedA(
  story: Story,
  name: string,
): Promise<{ dir: string; blob: string }> {
  const dir = makeWorkTree(story, name);
  adopt(story, dir, ['src/**']);
  writeFiles(dir, { 'src/a.ts': 'export const a = 1;\n' });
  const blob = await recordVerdict(story, dir, 'src/a.ts');
  gitOk(story, dir, ['add', 'src']);
  const committed = commit(story, dir, 'add a');
  if (committed.code !== 0) throw new Error(`the commit adding src/a.ts was refused:\n${committed.stderr}`);
  return { dir, blob };
}
