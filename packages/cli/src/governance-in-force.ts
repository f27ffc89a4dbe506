import { type Governance, loadGovernance } from '@delegate-git/core/governance';
import type { Repository } from '@delegate-git/core/repository';
import { checkoutSnapshot, gitSnapshot } from '@delegate-git/core/snapshot';

/**
 * The policy and trust root the views of the ledger (log, report, show) judge by: the checkout's (checkoutSnapshot),
 * or HEAD's in a bare repository.
 */
export async function governanceInForce(repo: Repository): Promise<Governance> {
  const snapshot = repo.layout.topLevel
    ? checkoutSnapshot(repo.layout.topLevel, repo.layout.gitDir, repo.objects, repo.env)
    : gitSnapshot(repo.cwd, repo.objects, 'HEAD', repo.env);
  return loadGovernance(snapshot);
}
