/**
 * Every failure a user can see is a DelegateGitError with one of these codes. The message is the one-paragraph
 * text the CLI prints: what is wrong, then what to do.
 */
export type ErrorCode =
  | 'USAGE' // bad command line: unknown flag, missing argument
  | 'NOT_A_REPOSITORY' // not inside a git repository delegate-git can use (or git missing, or its path is not UTF-8)
  | 'GIT' // a git command failed
  | 'POLICY' // .delegate-git/policy.json missing, unreadable or invalid
  | 'TRUST_ROOT' // a key file in the keys directory is invalid
  | 'SIGNING_KEY' // the operator's private key is missing, unreadable, too open, or invalid
  | 'LEDGER' // refs/notes/delegations could not be read or written
  | 'RECORD' // a record about to be written would not be readable (nothing is written)
  | 'CANONICAL_JSON' // input is not strict I-JSON / not canonical
  | 'UNIT' // a delegation unit file is invalid
  | 'CONFIG' // operator settings invalid
  | 'IO' // a file could not be read or written
  | 'INTERRUPTED'; // a signal stopped the command part-way (InterruptedError)

export class DelegateGitError extends Error {
  override readonly name = 'DelegateGitError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isDelegateGitError(error: unknown): error is DelegateGitError {
  return error instanceof DelegateGitError;
}

/**
 * A command a signal (Ctrl-C, a kill, a hangup) stopped part-way, once it has made its state whole again: the
 * message says what it left and what it undid. It exits as a shell reports a process that signal ended (128 + its
 * number), so a script still sees the interrupt, not a refusal.
 */
export class InterruptedError extends DelegateGitError {
  constructor(
    readonly signal: NodeJS.Signals,
    readonly exitCode: number,
    message: string,
  ) {
    super('INTERRUPTED', message);
  }
}
