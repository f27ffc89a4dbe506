/**
 * The pre-commit hook's first question, answered with as little as possible: may this commit pass without the
 * full check? Most commits stage nothing governed, and the hook runs on every one (DESIGN 6: its own time should
 * stay within one `git status`). Two git processes run at once and nothing heavier than the glob matcher is
 * loaded; whenever the answer is not certain from what the caches already hold, the caller runs the full check.
 *
 * What it relies on, each written by the full check: the staged policy as last validated (kept under the policy
 * blob's id, so an edited policy is validated again), the set of paths the ledger has recorded (per notes commit,
 * path-index.ts), and the decisions per (path, blob) at the ledger tip (decision-store.ts): a commit whose every
 * governed file the full check already found promoted, under the same governance and ledger tip, passes here too.
 */
import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { replaceCacheFile } from './cache-file.js';
import { decisionsFile, governanceDigestOf, promotionsByBlob } from './decision-store.js';
import { changesGovernance, DEFAULT_KEYS_DIR, governedMatcher, POLICY_PATH } from './governed-paths.js';
import { pathsName } from './path-index.js';
import type { Policy } from './policy.js';
import { parseRawDiff, type StagedChange } from './staged-changes.js';

const LEDGER_REF = 'refs/notes/delegations';

/** What the index changes against HEAD, read once and handed to the full check when the quick answer is "no". */
export interface StagedDiff {
  base: string;
  changes: StagedChange[];
}

/** `passes`: the full check would let this commit through without a word (nothing governed, or all promoted). */
export type QuickAnswer = { passes: true } | { passes: false; staged: StagedDiff | null };

/** Says `passes` only when that is certain; otherwise the full check must answer. */
export async function quickPreCommit(cwd: string, env: NodeJS.ProcessEnv): Promise<QuickAnswer> {
  // The keys directory is asked for before the policy says where it is: almost every policy keeps the default.
  const names = `HEAD\n:${POLICY_PATH}\n${LEDGER_REF}\nHEAD:${DEFAULT_KEYS_DIR}\n`;
  const [commonDir, ids, diff] = await Promise.all([
    commonDirOf(cwd, env),
    run(['cat-file', '--batch-check'], cwd, env, names),
    run(['diff-index', '--cached', '--raw', '-z', '-M', '-C', 'HEAD'], cwd, env),
  ]);
  const [head, policyId, ledger, defaultKeys] = (ids?.toString('utf8') ?? '').split('\n');
  if (diff === null || !head?.includes(' commit ')) return unsure(null);
  const fields = diff.toString('utf8').split('\0');
  if (fields.at(-1) === '') fields.pop();
  const staged = { base: head.split(' ')[0]!, changes: parseRawDiff(fields) };
  if (commonDir === null || !policyId?.includes(' blob ')) return unsure(staged);
  const cacheDir = cacheDirOf(commonDir);
  const policyBlob = policyId.split(' ')[0]!;
  const policy = readJson<Policy>(path.join(cacheDir, validPolicyName(policyBlob)));
  // Even a commit that stages nothing is refused (exit 2) by the full check when the policy does not validate.
  if (!isPolicyShaped(policy)) return unsure(staged);

  const tip = ledger?.includes(' commit ') ? ledger.split(' ')[0]! : null;
  if (tip === null && !ledger?.endsWith(' missing')) return unsure(staged);
  const governed = governedAmong(staged.changes, policy, tip, cacheDir);
  if (governed === null) return unsure(staged);
  if (governed.length === 0) return PASSES;
  const keysAt = async () =>
    policy.keysDir === DEFAULT_KEYS_DIR
      ? (defaultKeys ?? '')
      : ((
          await run(['cat-file', '--batch-check'], cwd, env, `${staged.base}:${policy.keysDir}\n`)
        )?.toString() ?? '');
  const ok = await allPromoted(governed, staged, policy, policyBlob, tip, cacheDir, keysAt);
  return ok ? PASSES : unsure(staged);
}

/** The changes the full check would judge, or null when that depends on recorded paths not cached yet. */
function governedAmong(
  changes: StagedChange[],
  policy: Policy,
  tip: string | null,
  cacheDir: string,
): StagedChange[] | null {
  const matcher = governedMatcher(policy);
  const governed: StagedChange[] = [];
  const askLedger: StagedChange[] = [];
  for (const change of changes) {
    const c = matcher.classify(change.path);
    if (c === 'governed') governed.push(change);
    else if (c === 'if-recorded') askLedger.push(change);
  }
  if (askLedger.length === 0 || tip === null) return governed;
  const recorded = readText(path.join(cacheDir, pathsName(tip)));
  if (recorded === null) return null;
  const isRecorded = recordedPathTest(recorded, askLedger.length);
  return [...governed, ...askLedger.filter((c) => isRecorded(c.path))];
}

/**
 * The recorded paths file is the paths joined by NUL (no path holds one). A few paths are looked for in its text:
 * splitting 10,000 paths into a Set costs more (about 4 ms) than a few scans of 200 KB.
 */
function recordedPathTest(recorded: string, asking: number): (p: string) => boolean {
  if (recorded === '') return () => false;
  if (asking > 8) {
    const paths = new Set(recorded.split('\0'));
    return (p) => paths.has(p);
  }
  const text = `\0${recorded}\0`;
  return (p) => text.includes(`\0${p}\0`);
}

/**
 * Every governed change already decided as promoted, by the full check, under this governance at this ledger tip.
 * Only for a commit that leaves the governance files as committed (so the committed objects name the governance)
 * and deletes nothing governed (the full check reports each deletion, so it must run).
 */
async function allPromoted(
  governed: StagedChange[],
  staged: StagedDiff,
  policy: Policy,
  policyBlob: string,
  tip: string | null,
  cacheDir: string,
  /** cat-file's answer for the keys directory at HEAD ("<id> tree <size>", or "... missing"). */
  keysAt: () => Promise<string>,
): Promise<boolean> {
  if (governed.some((c) => c.status === 'D')) return false;
  if (changesGovernance(policy, staged.changes)) return false;
  if (/[\n\0]/.test(policy.keysDir)) return false; // cat-file reads one name per line
  const [keysId, keysType] = (await keysAt()).split(' ');
  const keysTree = keysType === 'tree' ? keysId! : null;
  const digest = governanceDigestOf(cacheDir, { policyBlob, keysTree });
  if (digest === null) return false;
  const promoted = promotionsByBlob(decisionsFile(cacheDir, digest, tip));
  if (promoted === null) return false;
  return governed.every((c) => {
    const at = promoted.get(c.blob);
    return at === c.path || (Array.isArray(at) && at.includes(c.path));
  });
}

const PASSES: QuickAnswer = { passes: true };

function unsure(staged: StagedDiff | null): QuickAnswer {
  return { passes: false, staged };
}

/** Called by the full check once it has validated the staged policy stored as blob `id`. */
export async function rememberValidPolicy(cacheDir: string, id: string, policy: Policy): Promise<void> {
  // Unwritten (a read-only git dir): the next commit validates the policy again.
  await replaceCacheFile(path.join(cacheDir, validPolicyName(id)), JSON.stringify(policy));
}

/** Enough of the shape for the matcher; the file was written by the full check, but it sits on disk. */
function isPolicyShaped(p: Policy | null): p is Policy {
  const strings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
  return p !== null && typeof p.keysDir === 'string' && strings(p.protect) && strings(p.exclude);
}

/**
 * The common git dir. Git runs the hook at the top of the work tree, so `.git` is there: a directory, or (in a
 * linked worktree) a file naming the worktree's git dir, whose `commondir` names the common one. Read from the file
 * system, a git process fewer; anything else (GIT_DIR and friends set, another cwd) asks `git rev-parse`. The
 * cache files it leads to are named by the git objects they stand for, so even a wrong directory only misses.
 */
async function commonDirOf(cwd: string, env: NodeJS.ProcessEnv): Promise<string | null> {
  const fromGit = async () =>
    (await run(['rev-parse', '--path-format=absolute', '--git-common-dir'], cwd, env))
      ?.toString('utf8')
      .trim() ?? null;
  if (env.GIT_DIR || env.GIT_COMMON_DIR || env.GIT_WORK_TREE) return fromGit();
  const dotGit = path.join(cwd, '.git');
  try {
    const gitDir = statSync(dotGit).isDirectory()
      ? dotGit
      : path.resolve(cwd, /^gitdir: (.+)$/m.exec(readFileSync(dotGit, 'utf8'))![1]!.trim());
    const common = readText(path.join(gitDir, 'commondir'));
    return common === null ? gitDir : path.resolve(gitDir, common.trim());
  } catch {
    return fromGit();
  }
}

/** Where Repository.cacheDir is, from the common git dir. */
function cacheDirOf(commonDir: string): string {
  return path.join(commonDir, 'delegate-git', 'cache');
}

function validPolicyName(id: string): string {
  return `policy-${id}.json`;
}

/** stdout of a git command, or null when it fails in any way (the full check then says why). */
function run(args: string[], cwd: string, env: NodeJS.ProcessEnv, input?: string): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const child = spawn('git', args, {
      cwd,
      env,
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'ignore'],
    });
    const chunks: Buffer[] = [];
    child.stdout!.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', () => resolve(null));
    child.on('close', (code) => resolve(code === 0 ? Buffer.concat(chunks) : null));
    if (input !== undefined) {
      // git may exit before reading (outside a repository): its answer is the exit code, not a broken pipe.
      child.stdin!.on('error', () => {});
      child.stdin!.end(input);
    }
  });
}

/** Cache files are read synchronously: nothing else runs meanwhile, and a thread-pool round trip costs more. */
function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

function readJson<T>(file: string): T | null {
  const text = readText(file);
  if (text === null) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}
