import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this monorepo). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * External test vectors (RFC 8785, RFC 8032, Wycheproof, speccheck), byte for byte as published (their README says
 * from where): a copy in the repository, so a plain clone runs every test. test/e2e/vectors.test.ts holds the copy to
 * the project's shared set (`../shared/vectors` beside the checkout) wherever that is laid out.
 */
export const vectorsDir = process.env.DELEGATE_GIT_VECTORS_DIR ?? path.join(repoRoot, 'test', 'vectors');

/** The project's shared set of vectors, beside the checkout, where CI lays it out. */
export const sharedVectorsDir = path.resolve(repoRoot, '..', 'shared', 'vectors');

/** The built CLI entry point, as a user runs it. */
export const cliBin = path.join(repoRoot, 'packages', 'cli', 'bin', 'delegate-git.js');
