/**
 * The pre-commit hook's quick answer, bundled on its own (dist/pre-commit-quick.cjs): most commits stage nothing
 * governed, and for them the hook loads this small file instead of the whole CLI. bin/delegate-git.js runs it first
 * and hands its answer to the CLI's `hook pre-commit` only when the full check must run.
 */
export { quickPreCommit } from '@delegate-git/core/quiet-commit';
