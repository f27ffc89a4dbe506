/**
 * A repository set up for delegation the way a user sets one up, driven through the BUILT CLI:
 *   delegate-git init --protect 'src/**'            (under a private XDG_CONFIG_HOME, so the signing key is ours)
 *   delegate-git config set worker.endpoint <url>   (a fake worker on 127.0.0.1)
 *   delegate-git config set verification.approval allow
 * then `delegate-git delegate unit.json --json`, whose receipt is parsed. Every CLI run is an asynchronous child
 * process: the fake worker answers from this test process, so a synchronous spawn would deadlock it.
 *
 *   const repo = await makeDelegateRepo({ workerUrl: worker.url, files: { 'src/a.js': '...' } });
 *   const { code, receipt } = await repo.delegate({ taskName: 't', instruction: 'i', targetFiles: ['src/b.js'] });
 *   repo.ledger(receipt.files[0].gitBlob)  // decoded verdict statements on that blob
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { FakeWorker, RecordedRequest } from './fake-worker.js';
import { cleanGitEnv, makeTempDir, removeDir, runGit, runGitText } from './git-repo.js';
import { cliBin } from './paths.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The JSON receipt `delegate-git delegate --json` prints (the fields tests read). */
export interface Receipt {
  taskName: string;
  verdict: string;
  message: string | null;
  files: Array<{
    path: string;
    mode: 'created' | 'patched';
    hunks: number;
    bytes: number;
    lines: number;
    sha256: string;
    gitBlob: string;
  }>;
  errors: string[];
  duplicates: string[];
  workspace: string | null;
  context: Array<{
    path: string;
    lineRange: [number, number] | null;
    lines: number;
    bytes: number;
    sha256: string;
  }>;
  contextTargets: Array<{ path: string; lineRange: null; lines: number; bytes: number; sha256: string }>;
  contextWidened: Array<{ path: string; lineRange: [number, number] | null; sha256: string }>;
  verification: {
    command: string | null;
    skipped: string | null;
    runs: Array<{ exitCode: number; passed: number; failed: number; durationMs: number; timedOut: boolean }>;
    flaky: boolean;
    failures: Array<{ name?: string; location?: string; code?: string }>;
    omittedFailures: number;
    rawLog: string | null;
    timeoutMs: number | null;
  };
  coherence: {
    command: string;
    exitCode: number;
    passed: number;
    failed: number;
    rawLog: string | null;
  } | null;
  contract: {
    files: Array<{ path: string; sha256: string | null; unchanged: boolean }>;
    violations: string[];
  };
  tokens: { prompt: number; completion: number; estimated?: true };
  worker: {
    host: string;
    model: string;
    durationMs: number;
    truncated: boolean;
    reply: string | null;
  } | null;
  envelope: string | null;
}

export interface DelegateResult extends CliResult {
  /** Parsed from stdout when the command printed a receipt (exit 0 or 1), else null. */
  receipt: Receipt | null;
}

/** A verdict statement read back from the ledger (the DSSE payload, decoded). */
export interface LedgerStatement {
  subject: Array<{ name: string; digest: { sha256: string; gitBlob: string } }>;
  predicateType: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary predicate fields
  predicate: any;
}

export interface DelegateRepo {
  /** The work tree. */
  dir: string;
  /** The temp root holding the work tree, the config home and unit files. */
  root: string;
  /** The environment every CLI run gets (clean of the caller's GIT_* and DELEGATE_GIT_* variables). */
  env: NodeJS.ProcessEnv;
  /** Runs the built CLI in the work tree. */
  cli(args: string[], opts?: { env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<CliResult>;
  /** Starts the built CLI in the work tree, to be signalled while it runs. */
  start(args: string[], opts?: { env?: NodeJS.ProcessEnv; timeoutMs?: number }): StartedCli;
  /** `delegate-git config set <key> <value>`; throws unless it exits 0. */
  configSet(key: string, value: string): Promise<void>;
  /** Writes a unit file outside the work tree and returns its path. `unit` may be raw text. */
  writeUnit(unit: object | string, name?: string): string;
  /** Writes the unit, runs `delegate-git delegate <unit> --json` and parses the receipt. */
  delegate(
    unit: object | string,
    opts?: { env?: NodeJS.ProcessEnv; args?: string[] },
  ): Promise<DelegateResult>;
  /** `delegate-git check --path <paths…> --json`. */
  check(
    paths: string[],
  ): Promise<
    CliResult & { report: { results: Array<{ path: string; promoted: boolean; reason: string }> } | null }
  >;
  /** Writes a work-tree file (creating directories). */
  write(file: string, content: string | Buffer): void;
  read(file: string): string;
  exists(file: string): boolean;
  /** The raw note lines on a blob (`git notes --ref=delegations show <blob>`); [] when there is no note. */
  noteLines(blob: string): string[];
  /** The decoded statements on a blob. */
  ledger(blob: string): LedgerStatement[];
  /** Commits in refs/notes/delegations (0 when the ref does not exist). */
  ledgerCommits(): number;
  git(args: string[]): string;
  gitText(args: string[]): string;
  /** The local operator state directory (`.git/delegate-git`). */
  stateDir: string;
  cleanup(): void;
}

export interface DelegateRepoOptions {
  /** `--protect` globs for init (default `src/**`). */
  protect?: string[];
  /** Sets worker.endpoint when given. */
  workerUrl?: string;
  /** Sets verification.approval when given (default `allow`; null leaves the setting alone). */
  approval?: 'ask' | 'allow' | 'deny' | null;
  /** Files committed in the first commit, after init (the policy and keys are committed with them). */
  files?: Record<string, string | Buffer>;
  /** Further `config set` pairs. */
  config?: Record<string, string>;
}

/** The key name init gives the operator's signing key (init names it after $USER). */
export const OPERATOR_KEY_NAME = 'operator';

function baseEnv(configHome: string): NodeJS.ProcessEnv {
  const env = cleanGitEnv();
  for (const key of Object.keys(env)) if (key.startsWith('DELEGATE_GIT_')) delete env[key];
  env.XDG_CONFIG_HOME = configHome;
  env.HOME = path.join(configHome, 'home');
  env.USER = OPERATOR_KEY_NAME;
  env.NO_COLOR = '1';
  return env;
}

/**
 * The CLI entry point the tests run: the built one in this checkout, or DELEGATE_GIT_E2E_CLI (another build of
 * the same package, e.g. an unpacked release, laid out as packages/cli/bin + dist).
 */
export const delegateGitBin = process.env.DELEGATE_GIT_E2E_CLI ?? cliBin;

/** The built CLI started as a child process, to be signalled while it runs. */
export interface StartedCli {
  child: ChildProcess;
  /** Settles when it has exited; `signal` names the signal that ended it, if one did (its `code` is then null). */
  result: Promise<CliResult & { signal: NodeJS.Signals | null }>;
}

/** Runs the built CLI as a child process (asynchronously, so an in-process fake worker can answer it). */
export function runCli(
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<CliResult> {
  return startCli(args, opts).result;
}

/** Starts the built CLI as runCli does, and hands back the process as well as its result. */
export function startCli(
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): StartedCli {
  if (!fs.existsSync(path.join(path.dirname(delegateGitBin), '..', 'dist', 'delegate-git.cjs'))) {
    throw new Error('The CLI is not built: run `node scripts/build.mjs` before these tests.');
  }
  const child = spawn(process.execPath, [delegateGitBin, ...args], {
    cwd: opts.cwd,
    env: opts.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const result = new Promise<CliResult & { signal: NodeJS.Signals | null }>((resolve, reject) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 25_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
  });
  return { child, result };
}

/** The statement inside a note line (the signature is not checked: the tests that need it verify it). */
export function decodeLine(line: string): LedgerStatement {
  const envelope = JSON.parse(line) as { payload: string };
  return JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as LedgerStatement;
}

export async function makeDelegateRepo(opts: DelegateRepoOptions = {}): Promise<DelegateRepo> {
  const root = makeTempDir('delegate-git-e2e-');
  const dir = path.join(root, 'repo');
  const configHome = path.join(root, 'config');
  fs.mkdirSync(dir);
  fs.mkdirSync(path.join(configHome, 'home'), { recursive: true });
  const env = baseEnv(configHome);

  let units = 0;
  const handle: DelegateRepo = {
    dir,
    root,
    env,
    stateDir: path.join(dir, '.git', 'delegate-git'),
    cli: (args, o = {}) => runCli(args, { cwd: dir, env: { ...env, ...o.env }, timeoutMs: o.timeoutMs }),
    start: (args, o = {}) => startCli(args, { cwd: dir, env: { ...env, ...o.env }, timeoutMs: o.timeoutMs }),
    async configSet(key, value) {
      const result = await handle.cli(['config', 'set', key, value]);
      if (result.code !== 0) throw new Error(`config set ${key} failed (${result.code}): ${result.stderr}`);
    },
    writeUnit(unit, name) {
      const file = path.join(root, name ?? `unit-${++units}.json`);
      fs.writeFileSync(file, typeof unit === 'string' ? unit : JSON.stringify(unit, null, 2));
      return file;
    },
    async delegate(unit, o = {}) {
      const file = handle.writeUnit(unit);
      const result = await handle.cli(['delegate', file, '--json', ...(o.args ?? [])], { env: o.env });
      let receipt: Receipt | null = null;
      if (result.code === 0 || result.code === 1) receipt = JSON.parse(result.stdout) as Receipt;
      return { ...result, receipt };
    },
    async check(paths) {
      const result = await handle.cli(['check', '--json', ...paths.flatMap((p) => ['--path', p])]);
      const report = result.code === 0 || result.code === 1 ? JSON.parse(result.stdout) : null;
      return { ...result, report };
    },
    write(file, content) {
      const target = path.join(dir, file);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, content);
    },
    read: (file) => fs.readFileSync(path.join(dir, file), 'utf8'),
    exists: (file) => fs.existsSync(path.join(dir, file)),
    noteLines(blob) {
      const result = runGitLenient(dir, ['notes', '--ref=delegations', 'show', blob]);
      return result === null ? [] : result.split('\n').filter((line) => line.trim() !== '');
    },
    ledger: (blob) => handle.noteLines(blob).map(decodeLine),
    ledgerCommits() {
      const count = runGitLenient(dir, ['rev-list', '--count', 'refs/notes/delegations']);
      return count === null ? 0 : Number(count.trim());
    },
    git: (args) => runGit(dir, args),
    gitText: (args) => runGitText(dir, args),
    cleanup: () => removeDir(root),
  };

  try {
    await setUp(handle, opts);
  } catch (error) {
    // A setup that fails (the CLI not built, init refusing) must not leave its temp root behind.
    handle.cleanup();
    throw error;
  }
  return handle;
}

async function setUp(handle: DelegateRepo, opts: DelegateRepoOptions): Promise<void> {
  const { dir, root } = handle;
  runGit(root, ['init', '-q', '-b', 'main', dir]);
  runGit(dir, ['config', 'user.name', 'Test Operator']);
  runGit(dir, ['config', 'user.email', 'operator@example.com']);
  const init = await handle.cli([
    'init',
    '--no-hook',
    ...(opts.protect ?? ['src/**']).flatMap((g) => ['--protect', g]),
  ]);
  if (init.code !== 0) throw new Error(`delegate-git init failed (${init.code}): ${init.stderr}`);
  for (const [file, content] of Object.entries(opts.files ?? {})) handle.write(file, content);
  runGit(dir, ['add', '-A']);
  runGit(dir, ['commit', '-q', '-m', 'adopt delegate-git']);
  if (opts.workerUrl !== undefined) await handle.configSet('worker.endpoint', opts.workerUrl);
  const approval = opts.approval === undefined ? 'allow' : opts.approval;
  if (approval !== null) await handle.configSet('verification.approval', approval);
  for (const [key, value] of Object.entries(opts.config ?? {})) await handle.configSet(key, value);
}

function runGitLenient(cwd: string, args: string[]): string | null {
  try {
    return runGit(cwd, args);
  } catch {
    return null;
  }
}

/** An AWS access key id the credential scan knows, built at runtime so no test file holds a credential-shaped literal. */
export const FAKE_AWS_KEY_ID = ['AKIA', 'Z7Q2', 'X9RT', 'M4KD', 'P3WB'].join('');

/** A fenced whole-file block naming its file, as a worker emits it. */
export function fileBlock(file: string, body: string, lang = 'js'): string {
  return `\`\`\`${lang} file="${file}"\n${body.endsWith('\n') ? body : `${body}\n`}\`\`\`\n`;
}

/** A fenced SEARCH/REPLACE patch block naming its file. */
export function patchBlock(file: string, pairs: Array<[search: string, replace: string]>): string {
  const body = pairs.map(
    ([search, replace]) => `<<<<<<< SEARCH\n${search}\n=======\n${replace}\n>>>>>>> REPLACE\n`,
  );
  return `\`\`\`patch file="${file}"\n${body.join('')}\`\`\`\n`;
}

/** The user message of a recorded worker request (where the unit, context and retry context are). */
export function userPrompt(request: RecordedRequest | undefined): string {
  const message = request?.body.messages?.find((m) => m.role === 'user');
  if (!message) throw new Error('the worker request has no user message');
  return message.content;
}

/** Delegates a unit whose `worker` reply creates `file`, and returns the result with the written blob's verdicts. */
export async function delegateCreating(
  repo: DelegateRepo,
  worker: FakeWorker,
  file: string,
  unit: Record<string, unknown>,
) {
  worker.enqueue({ content: fileBlock(file, `export const value = ${JSON.stringify(file)};`) });
  const result = await repo.delegate({
    taskName: file,
    instruction: `Create ${file}.`,
    targetFiles: [file],
    ...unit,
  });
  const blob = result.receipt?.files[0]?.gitBlob;
  const verdicts = blob ? repo.ledger(blob).map((s) => s.predicate.verdict as string) : [];
  return { ...result, blob, verdicts };
}
