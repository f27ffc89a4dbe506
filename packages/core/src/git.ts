// Spawned-git plumbing. Every git access in core goes through here, but for the pre-commit quick path (quiet-commit.ts),
// which must not load this module: git itself is the fastest reader and the only writer that honours every
// repository format detail (DESIGN 6), and a spawned process needs no extra dependency.

import { isUtf8 } from 'node:buffer';
import { type ChildProcess, type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { DelegateGitError } from './errors.js';
import { readLayoutOutput } from './layout-output.js';
import { isUndecodableCwd, notUtf8Error, pathOutput, undecodableGitVariable } from './path-text.js';
import { shadowsOf } from './ref-shadows.js';

export interface GitOptions {
  cwd: string;
  /** The whole environment of the child (as with child_process); default: this process's environment. */
  env?: NodeJS.ProcessEnv;
  /** Bytes fed to git's standard input. */
  input?: string | Buffer;
}

export interface GitResult {
  code: number;
  stdout: Buffer;
  stderr: string;
}

const GIT_MISSING_MESSAGE =
  'git is not installed or not on PATH. Install git (https://git-scm.com/downloads) and make sure the `git` ' +
  'command runs in this shell, then try again.';

/** The error for a failed spawn: a missing git and a missing working directory both surface as ENOENT. */
function spawnError(error: NodeJS.ErrnoException, cwd: string): DelegateGitError {
  // process.cwd() of a directory whose name is not UTF-8 names another directory, or none: not a missing one.
  if (error.code === 'ENOENT' && isUndecodableCwd(cwd)) return notUtf8Error(cwd, { cause: error });
  if (error.code === 'ENOENT' && !existsSync(cwd)) {
    return new DelegateGitError(
      'NOT_A_REPOSITORY',
      `${cwd} does not exist. Run this in a git repository (or \`git init\` first).`,
      { cause: error },
    );
  }
  if (error.code === 'ENOENT')
    return new DelegateGitError('NOT_A_REPOSITORY', GIT_MISSING_MESSAGE, { cause: error });
  return new DelegateGitError('GIT', `git could not be started: ${error.message}`, { cause: error });
}

/** `git a b c` for messages; long argument lists are cut so the message stays one readable paragraph. */
function describeGitCommand(args: readonly string[]): string {
  const shown = args
    .slice(0, 6)
    .map((arg) => (arg.length > 60 ? `${arg.slice(0, 57)}...` : arg))
    .join(' ');
  return `git ${shown}${args.length > 6 ? ' …' : ''}`;
}

/** The first lines of git's stderr: the `fatal:`/`error:` line that says what went wrong comes first. */
function stderrSummary(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  if (lines.length === 0) return '(no message)';
  return lines.slice(0, 3).join(' ');
}

export function gitFailure(
  args: readonly string[],
  result: { code: number; stderr: string },
): DelegateGitError {
  return new DelegateGitError(
    'GIT',
    `${describeGitCommand(args)} failed: ${stderrSummary(result.stderr)} (exit code ${result.code})${lazyFetchHint(args, result.stderr)}`,
  );
}

/** Commands that talk to a remote themselves: a remote they cannot reach is their own failure, said as it is. */
const REMOTE_COMMANDS = new Set(['fetch', 'push', 'ls-remote', 'clone', 'pull']);

/**
 * A command that only reads objects reached a remote: a partial clone (`git clone --filter`) fetches the objects it
 * left out when they are read, and the remote could not be reached. Said, with what to do, beside git's words.
 */
function lazyFetchHint(args: readonly string[], stderr: string): string {
  if (REMOTE_COMMANDS.has(args[0] ?? '')) return '';
  if (!/Could not read from remote repository|promisor remote/i.test(stderr)) return '';
  return '. This looks like a partial clone (git clone --filter) reading an object it left out, which git fetches from the remote when it is read, and the remote could not be reached: run the command again where it can be (or fetch the history it needs first)';
}

/**
 * The environment every git process of delegate-git runs in: the caller's, with replace objects ignored. A
 * `refs/replace/<id>` ref makes git read another object in place of <id> (anyone can push one), so a gate that
 * honoured them would judge content other than what the commit holds and what a clone checks out.
 */
export function gitEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  let pinned = pinnedEnvs.get(env);
  if (!pinned) {
    pinned = { ...env, GIT_NO_REPLACE_OBJECTS: '1' };
    pinnedEnvs.set(env, pinned);
  }
  return pinned;
}
const pinnedEnvs = new WeakMap<NodeJS.ProcessEnv, NodeJS.ProcessEnv>();

function startGit(args: readonly string[], opts: { cwd: string; env?: NodeJS.ProcessEnv }) {
  return spawn('git', args, {
    cwd: opts.cwd,
    env: gitEnv(opts.env),
    stdio: 'pipe',
    windowsHide: true,
  });
}

/** A git that is given no input reads /dev/null: no pipe to make, end and tear down for it (a spawn costs less). */
function startGitWithoutInput(args: readonly string[], opts: { cwd: string; env?: NodeJS.ProcessEnv }) {
  return spawn('git', args, {
    cwd: opts.cwd,
    env: gitEnv(opts.env),
    stdio: ['ignore', 'pipe', 'pipe'],
    windowsHide: true,
  });
}

/** Like git() but returns {code, stdout, stderr} instead of throwing on a non-zero exit. */
export function gitTry(args: string[], opts: GitOptions): Promise<GitResult> {
  const input = opts.input;
  if (input === undefined) return outcomeOf(startGitWithoutInput(args, opts), opts.cwd);
  const child = startGit(args, opts);
  const outcome = outcomeOf(child, opts.cwd);
  feed(child, input);
  return outcome;
}

/** What a started git printed and how it exited; a spawn failure rejects with a clear error. */
function outcomeOf(child: ChildProcess, cwd: string): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let failed = false;
    child.stdout!.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.on('error', (error) => {
      failed = true;
      reject(spawnError(error, cwd));
    });
    child.on('close', (code, signal) => {
      if (failed) return;
      resolve({
        code: code ?? (signal ? 128 : 1),
        stdout: Buffer.concat(stdout),
        stderr: Buffer.concat(stderr).toString('utf8'),
      });
    });
  });
}

function feed(child: ChildProcessWithoutNullStreams, input: string | Buffer): void {
  // git may exit before reading all of its input (e.g. on a bad argument); its exit code says what happened.
  child.stdin.on('error', () => {});
  child.stdin.end(input);
}

/**
 * A git process started before its input is known, so that its start-up (exec, configuration, finding the
 * repository: a few milliseconds, more from a large Node process) overlaps other work. It is given its whole input
 * once (`run`), or dismissed: its input then ends empty and it exits on its own, having done nothing. On POSIX it
 * runs in a process group of its own, so a Ctrl-C meant for the command does not interrupt it mid-way; the
 * command's exit closes its input all the same.
 */
export class WaitingGit {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly outcome: Promise<GitResult>;
  private given = false;

  constructor(
    readonly args: readonly string[],
    opts: { cwd: string; env?: NodeJS.ProcessEnv },
  ) {
    this.child = spawn('git', args, {
      cwd: opts.cwd,
      env: gitEnv(opts.env),
      stdio: 'pipe',
      windowsHide: true,
      detached: process.platform !== 'win32',
    });
    this.outcome = outcomeOf(this.child, opts.cwd);
    this.outcome.catch(() => {}); // a dismissed git's failure to start concerns no one
  }

  run(input: string | Buffer): Promise<GitResult> {
    if (this.given) throw new Error(`${describeGitCommand(this.args)} was already given its input`);
    this.given = true;
    feed(this.child, input);
    return this.outcome;
  }

  /** Ends its input if it was never given any; resolves when it has exited, either way. */
  dismiss(): Promise<GitResult> {
    if (!this.given) {
      this.given = true;
      feed(this.child, '');
    }
    return this.outcome;
  }
}

/**
 * Paths as pathspecs that match only themselves: a plain pathspec is also a glob, so `k[1]/` would list `k1/` too
 * (a keys directory, a file name with brackets as web frameworks use them).
 */
export function literalPathspecs(paths: readonly string[]): string[] {
  return paths.map((p) => `:(literal)${p}`);
}

/** Spawns git (no shell) and returns its stdout. Non-zero exit → DelegateGitError('GIT'); no git → 'NOT_A_REPOSITORY'. */
export async function git(args: string[], opts: GitOptions): Promise<Buffer> {
  const result = await gitTry(args, opts);
  if (result.code !== 0) throw gitFailure(args, result);
  return result.stdout;
}

/** git() as text, without the final newline. */
export async function gitText(args: string[], opts: GitOptions): Promise<string> {
  const text = (await git(args, opts)).toString('utf8');
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

/**
 * What a ref itself names, never peeled (`rev-parse <ref>^{commit}` would read a tag as the commit it tags): null
 * when there is no such ref; type `missing object` when it names an object the store lacks.
 */
export async function refObject(
  ref: string,
  opts: GitOptions,
): Promise<{ oid: string; type: string } | null> {
  // In git's own words (LC_ALL=C), so that a ref it cannot read is told from one that is not there.
  const listed = await gitTry(['for-each-ref', '--format=%(objecttype) %(objectname) %(refname)', ref], {
    ...opts,
    env: { ...(opts.env ?? process.env), LC_ALL: 'C', LANGUAGE: 'C' },
  });
  if (listed.code === 0) {
    // The pattern also matches refs below it (`<ref>/x`); only the ref itself counts.
    for (const line of listed.stdout.toString('utf8').split('\n')) {
      const [type, oid, name] = line.split(' ');
      if (name === ref && type && oid) return { oid, type };
    }
    if (listed.stderr.split('\n').includes(`warning: ignoring broken ref ${ref}`))
      throw await brokenRef(ref, opts);
    return null;
  }
  // for-each-ref stops at a ref whose object is gone; rev-parse still names it.
  const named = await gitTry(['rev-parse', '--verify', '--quiet', ref], opts);
  if (named.code !== 0) throw gitFailure(['for-each-ref', ref], listed);
  return { oid: named.stdout.toString('utf8').trim(), type: 'missing object' };
}

/**
 * A ref git cannot read (a loose ref file that is empty or holds no object id, as a write cut short by a crash leaves
 * it) reads as no ref at all to git: for the ledger that is "no records", which ungoverns every path governed only by
 * its records (rt46 f01). So it is damage, said with the way back.
 */
async function brokenRef(ref: string, opts: GitOptions): Promise<DelegateGitError> {
  const common = await gitTry(['rev-parse', '--path-format=absolute', '--git-common-dir'], opts);
  const file = common.code === 0 ? path.join(pathOutput(common.stdout), ref) : null;
  return new DelegateGitError(
    'GIT',
    `${ref} is damaged: git cannot read what it names (${file ? `its file ${file} holds no object id` : 'it holds no object id'}, as a write cut short by a crash leaves it), so git takes it for no ref at all. ` +
      `Remove ${file ? 'that file' : 'it'}, then point the ref back at its last commit (\`git reflog show ${ref}\` names it; \`git update-ref ${ref} <commit>\`), or fetch it again from a remote that has it.`,
  );
}

/**
 * Streams git's output split on `separator` (e.g. `rev-list`, `ls-tree -z`) without holding all of it; throws
 * DelegateGitError('GIT') after the last record if git exits non-zero. Stopping early kills the child.
 */
export async function* gitRecords(
  args: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv; input?: Iterable<string> | AsyncIterable<string> },
  separator = '\n',
): AsyncGenerator<string> {
  const child = opts.input === undefined ? startGitWithoutInput(args, opts) : startGit(args, opts);
  let inputFailure: unknown = null;
  if (opts.input !== undefined) {
    // Written as it is produced, while the output is read: neither side is held whole.
    child.stdin!.on('error', () => {}); // git may exit before reading it all; its exit code says what happened
    const source = Readable.from(opts.input);
    source.on('error', (error) => {
      inputFailure = error; // git would wait for the rest of its input for ever
      child.kill();
    });
    source.pipe(child.stdin!);
  }
  const stderr: Buffer[] = [];
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  const spawnFailure: { error?: DelegateGitError } = {};
  child.on('error', (error) => {
    spawnFailure.error = spawnError(error, opts.cwd);
  });
  const exit = new Promise<number>((resolve) =>
    child.on('close', (code, signal) => resolve(code ?? (signal ? 128 : 1))),
  );
  const sep = Buffer.from(separator);
  let rest: Buffer = Buffer.alloc(0);
  let finished = false;
  try {
    for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
      let data = rest.length === 0 ? chunk : Buffer.concat([rest, chunk]);
      let index = data.indexOf(sep);
      while (index !== -1) {
        yield data.subarray(0, index).toString('utf8');
        data = data.subarray(index + sep.length);
        index = data.indexOf(sep);
      }
      rest = data;
    }
    const code = await exit;
    finished = true;
    if (spawnFailure.error) throw spawnFailure.error;
    if (inputFailure !== null) throw inputFailure;
    if (rest.length > 0) yield rest.toString('utf8');
    if (code !== 0) throw gitFailure(args, { code, stderr: Buffer.concat(stderr).toString('utf8') });
  } finally {
    if (!finished) child.kill();
  }
}

export interface GitObject {
  oid: string;
  type: string;
  content: Buffer;
}

const NO_CONTENT = Buffer.alloc(0);

interface PendingRead {
  object: string;
  resolve: (value: GitObject | null) => void;
  reject: (error: Error) => void;
}

/**
 * One long-lived `git cat-file --batch` process. Reads are pipelined: every request is written at once and the
 * answers, which git gives in request order, are matched to them in order. The process starts on the first read
 * and lives until close() (it keeps Node's event loop alive until then).
 */
export class CatFileBatch {
  private readonly cwd: string;
  private readonly env: NodeJS.ProcessEnv | undefined;
  private child: ChildProcessWithoutNullStreams | null = null;
  private exited: Promise<void> = Promise.resolve();
  private readonly queue: PendingRead[] = [];
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Header of the object whose content is being received, or null while waiting for a header. */
  private current: { oid: string; type: string; size: number } | null = null;
  private failure: Error | null = null;
  private stderr = '';
  private closing = false;
  private corked = false;

  /** `headersOnly`: `cat-file --batch-check`, each object's id and type with no content (empty). */
  private readonly headersOnly: boolean;

  constructor(opts: { cwd: string; env?: NodeJS.ProcessEnv; headersOnly?: boolean }) {
    this.cwd = opts.cwd;
    this.env = opts.env;
    this.headersOnly = opts.headersOnly === true;
  }

  /** The object, or null when it does not exist. `object` is anything git names an object by, e.g. `<rev>:<path>`. */
  read(object: string): Promise<GitObject | null> {
    if (object.includes('\n') || object === '') {
      return Promise.reject(new DelegateGitError('GIT', `cannot read git object ${JSON.stringify(object)}.`));
    }
    if (this.failure) return Promise.reject(this.failure);
    if (this.closing)
      return Promise.reject(new DelegateGitError('GIT', 'git cat-file reader used after close().'));
    const child = this.child ?? this.start();
    return new Promise((resolve, reject) => {
      this.queue.push({ object, resolve, reject });
      this.corkUntilTickEnds(child);
      child.stdin.write(`${object}\n`);
    });
  }

  /**
   * Names asked for in one go (a thousand notes' paths) reach git in one write: each write of its own was a system
   * call, a third of a push's main thread when hundreds of branches read their notes.
   */
  private corkUntilTickEnds(child: ChildProcessWithoutNullStreams): void {
    if (this.corked) return;
    this.corked = true;
    child.stdin.cork();
    process.nextTick(() => {
      this.corked = false;
      child.stdin.uncork();
    });
  }

  readMany(objects: string[]): Promise<Array<GitObject | null>> {
    return Promise.all(objects.map((object) => this.read(object)));
  }

  /**
   * The object the ref `ref` (a full name, `refs/...`) names, or null when there is no such ref. cat-file finds a
   * name by git's rules for short names, so where `ref` does not exist, `refs/tags/<ref>` (a tag anyone can push)
   * would answer in its place: those names are read beside it, and where one names the same object, git is asked
   * whether `ref` itself exists.
   */
  async readRef(ref: string): Promise<GitObject | null> {
    const [named = null, ...shadows] = await this.readMany([ref, ...shadowsOf(ref)]);
    if (!named) {
      // Missing, or a ref git cannot read (refObject says which), or one another writer made since.
      const listed = await refObject(ref, { cwd: this.cwd, env: this.env });
      return listed ? this.read(listed.oid) : null;
    }
    if (!shadows.some((shadow) => shadow?.oid === named.oid)) return named;
    return (await refObject(ref, { cwd: this.cwd, env: this.env })) ? named : null;
  }

  async close(): Promise<void> {
    this.closing = true;
    if (!this.child) return;
    this.child.stdin.end();
    await this.exited;
  }

  private start(): ChildProcessWithoutNullStreams {
    // A gc'd ledger stores note blobs as long delta chains; git's default delta base cache (96 MB) thrashes on
    // them. Measured on 50,000 notes: 8.1 s with the default, 1.9 s with 256 MB. It is a cache limit, not an allocation.
    const mode = this.headersOnly ? '--batch-check' : '--batch';
    const child = startGit(['-c', 'core.deltaBaseCacheLimit=256m', 'cat-file', mode], {
      cwd: this.cwd,
      env: this.env,
    });
    this.child = child;
    this.exited = new Promise((resolve) => child.on('close', () => resolve()));
    child.stdout.on('data', (chunk: Buffer) => this.receive(chunk));
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString('utf8');
    });
    child.stdin.on('error', () => {});
    child.on('error', (error) => this.fail(spawnError(error, this.cwd)));
    child.on('close', (code) => {
      if (this.queue.length > 0 || code !== 0) {
        this.fail(gitFailure(['cat-file', mode], { code: code ?? 1, stderr: this.stderr }));
      }
    });
    return child;
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const pending of this.queue.splice(0)) pending.reject(this.failure);
  }

  /** The buffered bytes as one buffer (joined only when a record spans chunks). */
  private joined(): Buffer {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks)];
    return this.chunks[0] ?? Buffer.alloc(0);
  }

  private consume(count: number): void {
    const first = this.joined();
    this.chunks = count >= first.length ? [] : [first.subarray(count)];
    this.buffered -= count;
  }

  private receive(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.current === null) {
        const data = this.joined();
        const end = data.indexOf(10);
        if (end === -1) return;
        const header = data.toString('utf8', 0, end);
        this.consume(end + 1);
        const pending = this.queue[0];
        if (!pending) {
          this.fail(new DelegateGitError('GIT', 'git cat-file answered an unasked question.'));
          return;
        }
        if (header.endsWith(' missing')) {
          this.queue.shift();
          pending.resolve(null);
          continue;
        }
        if (header.endsWith(' ambiguous')) {
          this.queue.shift();
          pending.reject(
            new DelegateGitError('GIT', `${pending.object} names more than one git object; use the full id.`),
          );
          continue;
        }
        const [oid, type, size] = header.split(' ');
        if (!oid || !type || size === undefined || !/^\d+$/.test(size)) {
          this.fail(new DelegateGitError('GIT', `git cat-file printed an unexpected header: ${header}`));
          return;
        }
        if (this.headersOnly) {
          this.queue.shift();
          pending.resolve({ oid, type, content: NO_CONTENT });
          continue;
        }
        this.current = { oid, type, size: Number(size) };
      }
      // Wait for the whole content and its terminating newline before joining chunks (large objects).
      if (this.buffered < this.current.size + 1) return;
      const data = this.joined();
      const content = data.subarray(0, this.current.size);
      const { oid, type } = this.current;
      this.current = null;
      this.consume(content.length + 1);
      this.queue.shift()?.resolve({ oid, type, content });
    }
  }
}

/**
 * Options every `git log` the gates parse is given, so that no configuration changes what it lists: the root
 * commit's changes are always shown (`log.showRoot`), no signature check is printed (`log.showSignature`),
 * submodule changes are never hidden (`diff.ignoreSubmodules`, or `ignore` in a `.gitmodules` a commit carries),
 * and paths outside the current directory are never left out (`diff.relative`, when run from a subdirectory).
 */
export const PINNED_LOG = [
  '--root',
  '--no-show-signature',
  '--ignore-submodules=none',
  '--no-relative',
] as const;

/** Writes a blob (`hash-object -w --stdin`) and returns its id. */
export async function writeBlob(
  cwd: string,
  content: Buffer | string,
  env?: NodeJS.ProcessEnv,
): Promise<string> {
  return gitText(['hash-object', '-w', '--stdin'], { cwd, env, input: content });
}

export interface TreeEntry {
  mode: string;
  name: string;
  oid: string;
}

/**
 * Parses a raw tree object (`<mode> <name>\0<binary id>`…); the id length follows the repository's hash. Modes are
 * read as git reads them (canonicalMode), so an entry means here what it means to git.
 */
export function parseTreeObject(content: Buffer, oidBytes: number): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let offset = 0;
  while (offset < content.length) {
    const space = content.indexOf(32, offset);
    const nul = content.indexOf(0, space + 1);
    if (space === -1 || nul === -1 || nul + 1 + oidBytes > content.length) {
      throw new DelegateGitError('GIT', MALFORMED_TREE);
    }
    entries.push({
      mode: canonicalMode(content.toString('latin1', offset, space)),
      name: content.toString('utf8', space + 1, nul),
      oid: content.toString('hex', nul + 1, nul + 1 + oidBytes),
    });
    offset = nul + 1 + oidBytes;
  }
  return entries;
}

const CANONICAL_MODES = new Set(['100644', '100755', '120000', '40000', '160000']);
const MALFORMED_TREE = 'a git tree object is malformed; run `git fsck` on this repository.';

/**
 * A tree entry's mode as git itself reads it (canon_mode): any regular file is 100644, or 100755 when the owner may
 * execute it; anything else is a symbolic link, a directory or a gitlink by its type bits. Old or hand-made trees
 * store other modes (100664, 040000), which every git command shows and reads as the canonical one; a reader that
 * took the stored text as it is would skip a note git reads (`git notes show` prints it), and miss a line on it.
 */
function canonicalMode(stored: string): string {
  if (CANONICAL_MODES.has(stored)) return stored;
  if (!/^[0-7]+$/.test(stored)) throw new DelegateGitError('GIT', MALFORMED_TREE);
  const mode = Number.parseInt(stored, 8);
  switch (mode & 0o170000) {
    case 0o100000:
      return mode & 0o100 ? '100755' : '100644';
    case 0o120000:
      return '120000';
    case 0o040000:
      return '40000';
    default:
      return '160000';
  }
}

export interface RepositoryLayout {
  /** The work tree's top directory; null when there is none (a bare repository, or run from inside the git dir). */
  topLevel: string | null;
  gitDir: string;
  /** Shared by all worktrees (differs from gitDir in a linked worktree). */
  commonDir: string;
  isBare: boolean;
  /** The repository's object format (`git init --object-format`): the hash of every object id. */
  objectFormat: 'sha1' | 'sha256';
}

/**
 * git before 2.31 echoes `--path-format=absolute` as an argument it does not know rather than failing: say that git
 * is too old rather than that its output was unexpected.
 */
async function unexpectedLayout(
  args: string[],
  opts: { cwd: string; env?: NodeJS.ProcessEnv },
): Promise<DelegateGitError> {
  const version = (await gitTry(['--version'], opts)).stdout.toString('utf8').trim();
  const [major = 0, minor = 0] = (/(\d+)\.(\d+)/.exec(version) ?? []).slice(1).map(Number);
  if (version && (major < 2 || (major === 2 && minor < 31)))
    return new DelegateGitError(
      'GIT',
      `delegate-git needs git 2.31 or newer, and the git on PATH is older (${version}). Install a newer git and run this again.`,
    );
  return gitFailure(args, { code: 0, stderr: 'unexpected output' });
}

/**
 * One `git rev-parse` call (git >= 2.31 for --path-format). Paths are absolute. A path holding a newline costs one
 * more git process, only there (layout-output.ts); a path that is not UTF-8 is refused (path-text.ts).
 */
export async function repositoryLayout(cwd: string, env?: NodeJS.ProcessEnv): Promise<RepositoryLayout> {
  if (isUndecodableCwd(cwd)) throw notUtf8Error(cwd);
  // --show-toplevel fails outside a work tree, so the top level is derived from --show-cdup, which just prints
  // nothing there; that keeps this to one process for bare repositories too.
  const args = [
    'rev-parse',
    '--path-format=absolute',
    '--is-bare-repository',
    '--is-inside-work-tree',
    '--show-object-format',
    '--git-dir',
    '--git-common-dir',
    '--show-cdup',
  ];
  const result = await gitTry(args, { cwd, env });
  if (result.code !== 0) {
    // git, given back as UTF-8 a GIT_DIR Node decoded with U+FFFD, looks for a directory that is not there.
    const undecodable = undecodableGitVariable(env ?? process.env);
    if (undecodable !== null) throw notUtf8Error(undecodable);
    if (/not a git repository/i.test(result.stderr) || !existsSync(cwd)) {
      throw new DelegateGitError(
        'NOT_A_REPOSITORY',
        `${cwd} is not inside a git repository. Run this in a git repository (or \`git init\` first).`,
      );
    }
    throw gitFailure(args, result);
  }
  const output = readLayoutOutput(result.stdout.toString('utf8'));
  const { bare, insideWorkTree, objectFormat } = output ?? {};
  if (
    !output ||
    (bare !== 'true' && bare !== 'false') ||
    (insideWorkTree !== 'true' && insideWorkTree !== 'false') ||
    (objectFormat !== 'sha1' && objectFormat !== 'sha256')
  )
    throw await unexpectedLayout(args, { cwd, env });
  const { gitDir, commonDir } = output.paths ?? (await pathsAlone(cwd, env));
  // Decoded, a byte that is not UTF-8 became U+FFFD, and the path another one (path-text.ts).
  if (!isUtf8(result.stdout)) throw notUtf8Error(commonDir.includes('\uFFFD') ? commonDir : gitDir);
  if (!path.isAbsolute(gitDir) || !path.isAbsolute(commonDir))
    throw await unexpectedLayout(args, { cwd, env });
  return {
    topLevel: insideWorkTree === 'true' ? path.resolve(realpathSync(cwd), output.cdup) : null,
    gitDir,
    commonDir,
    isBare: bare === 'true',
    objectFormat,
  };
}

/** The git dir and the common dir, each from a git of its own: its whole output is the path, newlines and all. */
async function pathsAlone(
  cwd: string,
  env: NodeJS.ProcessEnv | undefined,
): Promise<{ gitDir: string; commonDir: string }> {
  const [gitDir, commonDir] = await Promise.all(
    ['--git-dir', '--git-common-dir'].map(async (option) =>
      pathOutput(await git(['rev-parse', '--path-format=absolute', option], { cwd, env })),
    ),
  );
  return { gitDir: gitDir!, commonDir: commonDir! };
}
