import { expect } from 'vitest';
import { DelegateGitError, type ErrorCode } from '../src/errors.js';

/** The DelegateGitError `action` throws, checked to carry `code`; a failure when `action` throws nothing. */
export function refusalWith(code: ErrorCode, action: () => unknown): DelegateGitError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(DelegateGitError);
    expect((error as DelegateGitError).code).toBe(code);
    return error as DelegateGitError;
  }
  throw new Error(`expected a ${code} error, but nothing was thrown`);
}
