/**
 * `git ls-remote`, asking nobody anything and giving up on a remote that does not answer: init and sync ask a
 * remote what it holds on their own account, so neither may hang on a remote that needs a password or drops packets.
 */
import { spawn } from 'node:child_process';

type GitOptions = { cwd: string; env?: NodeJS.ProcessEnv };

/** How long a remote may take to list its refs before the caller goes on without it. */
export const LS_REMOTE_TIMEOUT_MS = 20_000;

export interface RemoteListing {
  code: number;
  stdout: Buffer;
  /** The first line git said, or why the remote was given up. */
  stderr: string;
}

/**
 * `git ls-remote <args...> <remote> <patterns...>`: stored credentials are used (a credential helper that keeps
 * them), but no prompt is shown (askpass answers nothing, Git Credential Manager is told not to ask, and ssh has no
 * terminal to prompt on: its own session); a remote that answers nothing is given up after `timeoutMs`,
 * with the whole process group (ssh, or a credential helper).
 */
export function listRemote(
  remote: string,
  options: readonly string[],
  patterns: readonly string[],
  opts: GitOptions,
  timeoutMs = LS_REMOTE_TIMEOUT_MS,
): Promise<RemoteListing> {
  const env: NodeJS.ProcessEnv = {
    ...(opts.env ?? process.env),
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: 'true',
    SSH_ASKPASS: 'true',
    SSH_ASKPASS_REQUIRE: 'never',
    GCM_INTERACTIVE: 'never',
  };
  return new Promise((resolve) => {
    const child = spawn('git', ['ls-remote', ...options, remote, ...patterns], {
      cwd: opts.cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutMs);
    const done = (code: number, stderr: string) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out), stderr });
    };
    child.on('error', (error) => done(-1, error.message));
    child.on('close', (code) =>
      done(
        timedOut ? -1 : (code ?? -1),
        timedOut ? `no answer within ${timeoutMs / 1000} s` : firstLine(Buffer.concat(err).toString('utf8')),
      ),
    );
  });
}

export function firstLine(stderr: string): string {
  return stderr.trim().split('\n')[0] || 'no message';
}
