/**
 * The pre-commit hook's first question, answered with as little as possible: does this commit stage anything
 * governed at all? Most commits do not, and the hook runs on every one (DESIGN 6: its own time should stay
 * within one `git status`). Three git processes run at once and nothing heavier than the glob matcher is
 * loaded; whenever the answer is not certain from what the caches already hold, the caller runs the full check.
 *
 * What it relies on, each written by the full check: the staged policy as last validated (kept under the policy
 * blob's id, so an edited policy is validated again) and the set of paths the ledger has recorded (per notes
 * commit, path-index.ts).
 */
import { spawn } from 'node:child_process';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { governedMatcher, POLICY_PATH } from './governed-paths.js';
import { pathsName } from './path-index.js';
import type { Policy } from './policy.js';
import { parseRawDiff, type StagedChange } from './staged-changes.js';

const LEDGER_REF = 'refs/notes/delegations';

/** What the index changes against HEAD, read once and handed to the full check when the quick answer is "no". */
export interface StagedDiff {
  base: string;
  changes: StagedChange[];
}

export type QuickAnswer = { nothingGoverned: true } | { nothingGoverned: false; staged: StagedDiff | null };

/** Says `nothingGoverned` only when that is certain; otherwise the full check must answer. */
export async function stagesNothingGoverned(cwd: string, env: NodeJS.ProcessEnv): Promise<QuickAnswer> {
  const [commonDir, ids, diff] = await Promise.all([
    run(['rev-parse', '--path-format=absolute', '--git-common-dir'], cwd, env),
    run(['cat-file', '--batch-check'], cwd, env, `HEAD\n:${POLICY_PATH}\n${LEDGER_REF}\n`),
    run(['diff-index', '--cached', '--raw', '-z', '-M', '-C', 'HEAD'], cwd, env),
  ]);
  const [head, policyId, ledger] = (ids?.toString('utf8') ?? '').split('\n');
  if (diff === null || !head?.includes(' commit ')) return unsure(null);
  const fields = diff.toString('utf8').split('\0');
  if (fields.at(-1) === '') fields.pop();
  const staged = { base: head.split(' ')[0]!, changes: parseRawDiff(fields) };
  if (commonDir === null || !policyId?.includes(' blob ')) return unsure(staged);
  const cacheDir = cacheDirOf(commonDir.toString('utf8').trim());
  const policy = await readJson<Policy>(path.join(cacheDir, validPolicyName(policyId.split(' ')[0]!)));
  // Even a commit that stages nothing is refused (exit 2) by the full check when the policy does not validate.
  if (!isPolicyShaped(policy)) return unsure(staged);

  const matcher = governedMatcher(policy);
  const askLedger: string[] = [];
  for (const change of staged.changes) {
    const c = matcher.classify(change.path);
    if (c === 'governed') return unsure(staged);
    if (c === 'if-recorded') askLedger.push(change.path);
  }
  if (askLedger.length === 0) return QUIET;
  if (!ledger?.includes(' commit ')) return ledger?.endsWith(' missing') ? QUIET : unsure(staged);
  const recorded = await readText(path.join(cacheDir, pathsName(ledger.split(' ')[0]!)));
  if (recorded === null) return unsure(staged);
  const paths = new Set(recorded === '' ? [] : recorded.split('\0'));
  return askLedger.every((p) => !paths.has(p)) ? QUIET : unsure(staged);
}

const QUIET: QuickAnswer = { nothingGoverned: true };

function unsure(staged: StagedDiff | null): QuickAnswer {
  return { nothingGoverned: false, staged };
}

/** Called by the full check once it has validated the staged policy stored as blob `id`. */
export async function rememberValidPolicy(cacheDir: string, id: string, policy: Policy): Promise<void> {
  try {
    const file = path.join(cacheDir, validPolicyName(id));
    const tmp = `${file}.${process.pid}.tmp`;
    await mkdir(cacheDir, { recursive: true });
    await writeFile(tmp, JSON.stringify(policy));
    await rename(tmp, file);
  } catch {
    // No cache (a read-only git dir): the next commit validates the policy again.
  }
}

/** Enough of the shape for the matcher; the file was written by the full check, but it sits on disk. */
function isPolicyShaped(p: Policy | null): p is Policy {
  const strings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
  return p !== null && typeof p.keysDir === 'string' && strings(p.protect) && strings(p.exclude);
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

async function readText(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return null;
  }
}

async function readJson<T>(file: string): Promise<T | null> {
  const text = await readText(file);
  if (text === null) return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}
