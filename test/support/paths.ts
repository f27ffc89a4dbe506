import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this monorepo). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** External test vectors: `../shared/vectors` beside the checkout (CI lays shared/ there too). */
export const vectorsDir =
  process.env.DELEGATE_GIT_VECTORS_DIR ?? path.resolve(repoRoot, '..', 'shared', 'vectors');

/** The built CLI entry point, as a user runs it. */
export const cliBin = path.join(repoRoot, 'packages', 'cli', 'bin', 'delegate-git.js');
