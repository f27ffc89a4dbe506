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
  | 'IO'; // a file could not be read or written

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
