// Real git repositories in temporary directories for tests. Each repository has its own identity configured, and
// git runs with an environment stripped of the caller's GIT_* variables (a test run from inside a git hook would
// otherwise inherit GIT_DIR/GIT_INDEX_FILE and act on the wrong repository).
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { STUCK_AFTER, spawnFailure } from './stuck.js';

/** This process's environment without GIT_* variables, with fixed dates so commits are reproducible in shape. */
export function cleanGitEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('GIT_')) env[key] = value;
  }
  // Global and system config of the machine running the tests must not change what the tests see.
  env.GIT_CONFIG_NOSYSTEM = '1';
  env.GIT_CONFIG_GLOBAL = os.devNull;
  return { ...env, ...extra };
}

/** Runs git synchronously in `cwd` and returns stdout (throws with stderr on a non-zero exit). */
export function runGit(cwd: string, args: string[], input?: string | Buffer): string {
  const result = spawnSync('git', args, {
    cwd,
    env: cleanGitEnv(),
    input,
    maxBuffer: 1 << 30,
    ...STUCK_AFTER,
  });
  if (result.error) throw spawnFailure(result.error, 'git', args);
  if (result.status !== 0) {
    throw new Error(`git ${args.join(' ')} failed (${result.status}): ${result.stderr.toString('utf8')}`);
  }
  return result.stdout.toString('utf8');
}

/** runGit without the final newline. */
export function runGitText(cwd: string, args: string[], input?: string | Buffer): string {
  return runGit(cwd, args, input).replace(/\n$/, '');
}

/** A fresh temporary directory (removed by `removeDir`). */
export function makeTempDir(prefix = 'delegate-git-test-'): string {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
}

export function removeDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

export interface TempRepo {
  /** The work tree (or the repository itself when bare). */
  dir: string;
  git(args: string[], input?: string | Buffer): string;
  gitText(args: string[], input?: string | Buffer): string;
  /** Writes files (path relative to the work tree → content), stages them and commits; returns the commit id. */
  commit(files: Record<string, string | Buffer>, message?: string): string;
  /** Writes a blob into the object store and returns its id. */
  blob(content: string | Buffer): string;
  cleanup(): void;
}

function configureIdentity(dir: string): void {
  runGit(dir, ['config', 'user.name', 'Test User']);
  runGit(dir, ['config', 'user.email', 'test@example.com']);
}

function repoHandle(dir: string, removeRoot: string): TempRepo {
  return {
    dir,
    git: (args, input) => runGit(dir, args, input),
    gitText: (args, input) => runGitText(dir, args, input),
    commit(files, message = 'test commit') {
      for (const [file, content] of Object.entries(files)) {
        const target = path.join(dir, file);
        fs.mkdirSync(path.dirname(target), { recursive: true });
        fs.writeFileSync(target, content);
      }
      runGit(dir, ['add', '--', ...Object.keys(files)]);
      runGit(dir, ['commit', '-q', '--allow-empty', '-m', message]);
      return runGitText(dir, ['rev-parse', 'HEAD']);
    },
    blob: (content) => runGitText(dir, ['hash-object', '-w', '--stdin'], content),
    cleanup: () => removeDir(removeRoot),
  };
}

/** `git init` in a new temporary directory with user.name/user.email set. */
export function makeTempRepo(opts: { bare?: boolean } = {}): TempRepo {
  const root = makeTempDir();
  const dir = path.join(root, opts.bare ? 'repo.git' : 'repo');
  execFileSync('git', ['init', '-q', ...(opts.bare ? ['--bare'] : []), '-b', 'main', dir], {
    env: cleanGitEnv(),
  });
  configureIdentity(dir);
  return repoHandle(dir, root);
}

/** `git clone` of `source` into a new temporary directory, with identity set. */
export function cloneTempRepo(source: string): TempRepo {
  const root = makeTempDir();
  const dir = path.join(root, 'clone');
  execFileSync('git', ['clone', '-q', source, dir], { env: cleanGitEnv() });
  configureIdentity(dir);
  return repoHandle(dir, root);
}
