import { type CheckReport, checkStaged } from '../../packages/core/src/checks.js';
import { Repository } from '../../packages/core/src/repository.js';

/**
 * The full pre-commit check of what is staged in `dir`, with a repository opened for it alone, as the hook runs it
 * (a long-lived `cat-file` would keep serving an older index).
 */
export async function checkStagedIn(dir: string, env: NodeJS.ProcessEnv): Promise<CheckReport> {
  const opened = await Repository.open(dir, env);
  try {
    return await checkStaged(opened);
  } finally {
    await opened.close();
  }
}
